"""`python -m core results list|export|import|delete|pin|unpin`: the result store without a browser.

Also the `--save` option the matmul and train commands share: `add_save_options(parser)` when
registering, then `save_if_requested(args, result)` after printing the run's output.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from core.cli import HELP
from core.cli.output import TABLE_WIDTH, cut_cells, format_table, print_json, wrap
from core.errors import DashboardError
from core.results.files import check_label
from core.results import kinds
from core.results.files import MAX_IMPORT_BYTES, too_big
from core.results.kinds import Result
from core.store.access import INSTRUCTOR
from core.store.database import Store, open_store
from core.store.frames import listing_frame
from core.store.records import RunFilter

if TYPE_CHECKING:
    from core.store.export import Written

SAVED = "saved (UTC)"  # core.store.frames.LISTING_COLUMNS
RESULT = "result"
ELIDED = ("label", "machine", "devices", "result")  # cut in this order to fit: the result keeps the most


def _add_store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", metavar="URL", default=None,
                        help="postgresql://... or sqlite:///path "
                             "(default: $DATABASE_URL, else this user's SQLite file)")


def _add_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=kinds.KINDS,
                        help="only runs of one kind: " + ", ".join(f"{k} ({t})" for k, t in kinds.KIND_TITLES.items()))
    parser.add_argument("--device", help="only runs that used this device, e.g. cpu or cuda:0")
    parser.add_argument("--machine", help="only runs from this machine (as `results list` names it)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("results", help=HELP["results"])
    actions = p.add_subparsers(dest="results_command", required=True, parser_class=type(p))

    ls = actions.add_parser("list", help="saved runs, newest first")
    _add_filters(ls)
    _add_store_option(ls)
    ls.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    ls.add_argument("--wide", action="store_true",
                    help=f"every column in full (by default the table keeps to {TABLE_WIDTH} characters: long labels, "
                         "machines and results end in …)")
    ls.set_defaults(handler=run_list)

    ex = actions.add_parser("export", help="write saved runs as JSON (re-importable) or CSV (one row per point)")
    ex.add_argument("run_ids", nargs="*", type=int, metavar="RUN_ID", help="runs to export (default: all that match)")
    _add_filters(ex)
    ex.add_argument("--format", choices=("json", "csv"), default="json")
    ex.add_argument("--output", "-o", type=Path, help="file to write (default: standard output)")
    _add_store_option(ex)
    ex.set_defaults(handler=run_export)

    im = actions.add_parser("import", help="import a `matmul --json` or `train --json` file, or an export")
    im.add_argument("file", help="the JSON file, or - for standard input")
    im.add_argument("--label", default="", help="name the imported runs, e.g. the machine they came from")
    _add_store_option(im)
    im.add_argument("--json", action="store_true", help="print one JSON object")
    im.set_defaults(handler=run_import)

    rm = actions.add_parser("delete", help="delete saved runs by id")
    rm.add_argument("run_ids", nargs="+", type=int, metavar="RUN_ID")
    _add_store_option(rm)
    rm.add_argument("--json", action="store_true", help="print one JSON object")
    rm.set_defaults(handler=run_delete)

    pin = actions.add_parser("pin", help="pin a saved Matmul race as the room's reference on the Class board")
    pin.add_argument("run_id", type=int, metavar="RUN_ID")
    _add_store_option(pin)
    pin.set_defaults(handler=run_pin)

    unpin = actions.add_parser("unpin", help="unpin the room's reference (the run stays saved)")
    _add_store_option(unpin)
    unpin.set_defaults(handler=run_unpin)


def _matching(store: Store, args: argparse.Namespace) -> tuple[list[int] | None, RunFilter]:
    """The runs named by id (each must exist and pass the filters, else a message says which; None: all that
    match), and the filter. Each named run is read to check it and let go: an export holds a batch at a time."""
    chosen = RunFilter.of(*([value] if value is not None else None for value in (args.machine, args.device, args.kind)))
    if not getattr(args, "run_ids", None):
        return None, chosen
    ids = list(dict.fromkeys(args.run_ids))
    for run in (store.get(run_id) for run_id in ids):
        if args.kind is not None and run.kind != args.kind:
            raise DashboardError(f"run #{run.run_id} is a {run.kind} run, not {args.kind}; drop --kind {args.kind} "
                                 "or give the id of a matching run")
        if args.device is not None and args.device not in run.devices:
            raise DashboardError(f"run #{run.run_id} used {', '.join(run.devices)}, not {args.device}; drop --device")
        if args.machine is not None and run.machine_label != args.machine:
            raise DashboardError(f"run #{run.run_id} is from {run.machine_label}, not {args.machine}; drop --machine")
    return ids, RunFilter()


def run_list(args: argparse.Namespace) -> int:
    """The table is read from the listing summaries the Results page reads (no payload decoded: a board of
    10,000 runs lists in a fraction of a second); --json prints each run's settings, versions and provenance,
    which only the full rows carry, so it reads them in full. A row whose payload was damaged after its summary
    was written is named unreadable by --json, `export` and the Results page's charts, not by the table."""
    store = open_store(args.db)
    if args.json:
        return _print_list_json(store, args)
    chosen = RunFilter.of(*([value] if value is not None else None for value in (args.machine, args.device, args.kind)))
    listing = store.read_summaries(chosen)
    runs = listing.runs
    print(wrap(f"{len(runs)} saved run(s) in the {store.describe()}"))
    if runs:
        frame = listing_frame(runs)
        if args.wide:
            print(format_table(list(frame.columns), frame.values.tolist()))
        else:
            frame[SAVED] = frame[SAVED].str[5:16]  # 'MM-DD HH:MM': the year and seconds make room for the result
            headers, rows = list(frame.columns), frame.values.tolist()
            print(format_table(headers, rows, max_width=TABLE_WIDTH, elide=ELIDED))
            cut = cut_cells(headers, rows, RESULT, max_width=TABLE_WIDTH, elide=ELIDED)
            if cut:  # the answer is what the list is for: a cut one is shown whole below
                print("\n" + wrap([f"#{rows[i][0]}: {rows[i][headers.index(RESULT)]}" for i in cut]))
    for bad in listing.unreadable:
        print(f"run #{bad.run_id} cannot be read ({bad.reason}); `python -m core results delete {bad.run_id}` "
              "removes it", file=sys.stderr)
    return 0


def _print_list_json(store: Store, args: argparse.Namespace) -> int:
    listing = store.read_runs(kind=args.kind, device=args.device, machine=args.machine)
    print_json({"store": store.describe(), "runs": [
        {"run_id": r.run_id, "uid": r.uid, "kind": r.kind, "created_at": r.created_at, "label": r.label,
         "machine": r.machine_label, "devices": r.devices, "result": r.headline, "source": r.source,
         "provenance": r.provenance.to_json(), "settings": r.settings,
         "versions": r.versions} for r in listing.runs],
        "unreadable": [{"run_id": u.run_id, "kind": u.kind, "reason": u.reason} for u in listing.unreadable]})
    return 0


def run_export(args: argparse.Namespace) -> int:
    """Written as it is read, a batch of runs at a time (core.store.export): a board of 10,000 runs exports in
    bounded memory, to a file (written beside it, then moved into place: a failure leaves no half file) or to
    standard output. A JSON export larger than one import takes says so on stderr."""
    if args.output is not None:  # before reading the board: a folder, /proc, a read-only place is one line
        from core.platform.paths import output_file

        output_file(args.output, "--output")
    from core.store.database import max_import_runs
    from core.store.export import reimport_note, write_export

    store = open_store(args.db)
    ids, chosen = _matching(store, args)
    if args.output is None:
        written = write_export(store, sys.stdout.buffer, args.format, ids, chosen)
        sys.stdout.flush()
    else:
        written = _export_to_file(store, args.output, args.format, ids, chosen)
        print(f"wrote {written.runs} run(s) to {args.output}", file=sys.stderr)
    if note := reimport_note(written, max_import_runs()):
        print(f"note: {note}", file=sys.stderr)
    return 0


def _export_to_file(store: Store, path: Path, fmt: str, ids: list[int] | None, chosen: RunFilter) -> Written:
    from core.store.export import write_export

    part = path.with_name(f".{path.name}.part")
    try:
        with part.open("wb") as out:
            written = write_export(store, out, fmt, ids, chosen)
        part.replace(path)
        return written
    except OSError as exc:
        raise DashboardError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        part.unlink(missing_ok=True)


def read_import_file(name: str) -> bytes:
    """The bytes of a file to import, refusing a missing, unreadable or oversized one before reading it all
    (a file's own size named; standard input's is known only to be over the limit)."""
    if name == "-":
        return sys.stdin.buffer.read(MAX_IMPORT_BYTES + 1)
    path = Path(name)
    try:
        if path.is_dir():
            raise DashboardError(f"{path} is a folder; give the JSON file inside it")
        with path.open("rb") as f:
            if (size := os.fstat(f.fileno()).st_size) > MAX_IMPORT_BYTES:
                raise too_big(size)
            return f.read(MAX_IMPORT_BYTES + 1)  # one byte more, so the size check sees a file that grew
    except FileNotFoundError:
        raise DashboardError(f"{path}: no such file") from None
    except OSError as exc:
        raise DashboardError(f"cannot read {path}: {exc.strerror or exc}") from None


def run_import(args: argparse.Namespace) -> int:
    data = read_import_file(args.file)
    store = open_store(args.db)
    name = "standard input" if args.file == "-" else Path(args.file).name
    result = store.import_json(data, label=args.label, file=name, session="command line")
    if args.json:
        print_json({"store": store.describe(), "imported": list(result.run_ids), "skipped": result.skipped})
    else:
        ids = ", ".join(f"#{i}" for i in result.run_ids) or "none"
        print(wrap(f"imported {len(result.run_ids)} run(s) ({ids}); {result.skipped} already saved; "
                   f"into the {store.describe()}"))
    return 0


def run_delete(args: argparse.Namespace) -> int:
    store = open_store(args.db)
    for run_id in dict.fromkeys(args.run_ids):
        if not store.read_runs(run_ids=[run_id]).unreadable:  # an unreadable run may be deleted
            store.get(run_id)  # all must exist before any is deleted
    for run_id in dict.fromkeys(args.run_ids):
        store.delete(run_id)
    if args.json:
        print_json({"deleted": list(dict.fromkeys(args.run_ids))})
    else:
        print(f"deleted {', '.join(f'#{i}' for i in dict.fromkeys(args.run_ids))}")
    return 0


def run_pin(args: argparse.Namespace) -> int:
    """The command line on the server is the instructor, as for deleting (core.store.access)."""
    open_store(args.db).pin_reference(args.run_id, INSTRUCTOR)
    print(f"pinned #{args.run_id} as the room's reference on the Class board")
    return 0


def run_unpin(args: argparse.Namespace) -> int:
    print("unpinned the room's reference" if open_store(args.db).unpin_reference(INSTRUCTOR) else "nothing was pinned")
    return 0


# -- the shared --save option of `matmul` and `train` -----------------------------------------------


def add_save_options(parser: argparse.ArgumentParser) -> None:
    """Give a run command `--save` and `--label` (call it in the command's `register`)."""
    parser.add_argument("--save", action="store_true",
                        help="also save the run in the result store ($DATABASE_URL, else this user's SQLite file) "
                             "for the Results page")
    parser.add_argument("--label", default="", help="with --save: a name for the run, e.g. 'lab GPU'")


def check_save_options(args: argparse.Namespace) -> None:
    """Refuse `--label` without `--save` before anything runs: the label would be silently dropped."""
    if getattr(args, "label", "") and not getattr(args, "save", False):
        raise DashboardError("--label names a saved run; add --save to save this run under it, or drop --label")
    check_label(getattr(args, "label", "") or "", "--label")  # before the run: a bad label would lose it at the end


def save_if_requested(args: argparse.Namespace, result: Result) -> int | None:
    """With --save, store the finished run and say where on stderr (stdout stays one JSON object).

    Call it after printing the run's output, so a store that cannot be reached loses nothing.
    """
    if not getattr(args, "save", False):
        return None
    store = open_store()
    run_id = store.save(result, label=getattr(args, "label", "") or "")
    print(f"saved as run #{run_id} in the {store.describe()}", file=sys.stderr)
    return run_id
