"""Export files written as the runs are read, a batch at a time: a full board exports in bounded memory.

An export used to read every run it held at once and build the whole file in memory: 10,000 runs took
1.6 GB for JSON and 1.0 GB for CSV, in the CLI and in the Streamlit server alike (issue 30). Here the store
first lists only the chosen runs' ids, times and kinds (small), then reads EXPORT_BATCH runs at a time and
writes each batch's part of the file before reading the next, so memory holds one batch, whatever the board.

The files are the ones the whole-board writers made, byte for byte: the JSON export is
`core.results.files.export_text`'s (oldest run first); the CSV is `core.store.frames.tidy_frame`'s (each
kind's table in the registry's order, its columns those of the kinds present, a matmul table sorted by run).
Two differences only a board could show: a kind whose runs all give no row still has its columns in the
header, and a column of whole numbers written as integers (core.results.csvio) is decided per batch.

An export is bounded once more where it is kept in memory: the Results page builds its download in the
server, so it stops at `limit_bytes` (ExportTooBig) and the file says to use the CLI, which writes to a file
or a pipe as it reads. Where the limits of an import and an export meet, `reimport_note` says so: an export
larger than one import takes is still written, with a line on how to move it in parts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from core.errors import DashboardError
from core.results import files, jsonio
from core.store.records import RunFilter, StoredRun
from core.platform.units import byte_size

EXPORT_BATCH = 200  # runs read and written at a time: a sweep with its samples is ~20 kB, a batch a few MB


class RunSource(Protocol):
    """What an export reads from (core.store.database.Store)."""

    def export_order(self, run_ids: Sequence[int] | None = None,
                     runs: RunFilter = RunFilter()) -> list[tuple[int, str, str]]: ...

    def runs_in_batches(self, run_ids: Sequence[int], batch: int) -> Iterator[list[StoredRun]]: ...


class ExportTooBig(DashboardError):
    """An export past the size its caller keeps in memory."""


@dataclass(frozen=True)
class Written:
    """What an export wrote: its runs, its bytes, and its format."""

    fmt: str
    runs: int
    bytes: int


class _Counted:
    """A binary file that counts what is written to it, and refuses to grow past `limit` bytes."""

    def __init__(self, out: BinaryIO, limit: int | None) -> None:
        self.out, self.limit, self.bytes = out, limit, 0

    def write(self, text: str) -> None:
        data = text.encode()
        self.bytes += len(data)
        if self.limit is not None and self.bytes > self.limit:
            raise ExportTooBig(f"the export is over {byte_size(self.limit)}")
        self.out.write(data)


def write_export(source: RunSource, out: BinaryIO, fmt: str, run_ids: Sequence[int] | None = None,
                 runs: RunFilter = RunFilter(), *, limit_bytes: int | None = None,
                 exported_at: str | None = None) -> Written:
    """Write the export of `run_ids` (None: every run `runs` matches) to `out`, a batch at a time: JSON
    (re-importable, oldest first) or CSV (the tidy table). Past `limit_bytes`, ExportTooBig, with what was
    written up to then left in `out`."""
    order = source.export_order(run_ids, runs)
    counted = _Counted(out, limit_bytes)
    if fmt == "json":
        _json(source, counted, [run_id for run_id, _, _ in order], exported_at)
    else:
        _csv(source, counted, order)
    return Written(fmt, len(order), counted.bytes)


def _json(source: RunSource, out: _Counted, ids: list[int], exported_at: str | None) -> None:
    """`files.export_text`'s file: the same keys in the same order, each run as the one JSON writer writes it."""
    head = {"format": files.EXPORT_FORMAT, "format_version": files.EXPORT_VERSION,
            "exported_at": exported_at or files.utc_now()}
    out.write(jsonio.dumps(head)[:-1] + ', "runs": [')
    first = True
    for batch in source.runs_in_batches(ids, EXPORT_BATCH):
        for run in batch:
            out.write(("" if first else ", ") + jsonio.dumps(run.record.to_json()))
            first = False
    out.write("]}\n")


def _csv(source: RunSource, out: _Counted, order: list[tuple[int, str, str]]) -> None:
    """`tidy_frame`'s table: each kind's rows in the registry's order, batch by batch."""
    import pandas as pd

    from core.results import kinds
    from core.results.csvio import csv_text
    from core.store.frames import kind_columns, kind_frame

    tabulated = [k for k in kinds.RESULT_KINDS if k.frame is not None]
    present = {kind for _, _, kind in order}
    shown = [k for k in tabulated if k.name in present] or tabulated
    columns = list(dict.fromkeys(c for k in shown for c in kind_columns(k.name)))
    out.write(csv_text(pd.DataFrame(columns=columns)))
    for k in shown:
        ids = [run_id for run_id, _, kind in order if kind == k.name]
        sort = k.frame.order if k.frame is not None else ()
        if sort and sort[0] == "run_id":  # batches in run order: each batch's sort is the whole table's
            ids.sort()
        batch = EXPORT_BATCH if not sort or sort[0] == "run_id" else max(1, len(ids))  # else one sort over all
        for runs in source.runs_in_batches(ids, batch):
            part = kind_frame(k.name, runs)
            if not part.empty:
                out.write(csv_text(part.reindex(columns=columns), header=False))


def reimport_note(written: Written, most_runs: int) -> str | None:
    """A line for an export a single import would refuse (over files.MAX_IMPORT_BYTES, or more runs than
    `most_runs`, the store's limit per import), saying how to move it instead; None when it re-imports."""
    if written.fmt != "json":
        return None
    over = []
    if written.bytes > files.MAX_IMPORT_BYTES:
        over.append(f"{byte_size(written.bytes, 'MiB')}, over the {byte_size(files.MAX_IMPORT_BYTES)} an import reads")
    if written.runs > most_runs:
        over.append(f"{written.runs:,} runs, over the {most_runs:,} an import adds")
    if not over:
        return None
    return (f"this export is {' and '.join(over)}: to move it to another board, export it in parts "
            "(--kind, --machine, --device or run ids) and import each part")
