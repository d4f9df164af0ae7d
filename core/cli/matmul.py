"""`python -m core matmul`: the Matmul race without a browser."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from core.cli import HELP
from core.cli.output import print_json, split_tables, wrap
from core.results.table import human_rows
from core.cli.results import add_save_options, check_save_options, save_if_requested
from core.cli.waiting import cli_hooks, ctrl_c_stops
from core.platform.cache import CACHE_CHOICES
from core.platform.devices import available_devices, has_gpu
from core.errors import DashboardError
from core.matmul.choices import TF32_CHOICES, default_race_threads, tf32_settings
from core.matmul.config import MatmulOptions, SweepConfig
from core.matmul.guards import check_sizes_fit
from core.matmul.plan import plan_series
from core.matmul.report import clock_summary
from core.matmul.series import DTYPES
from core.matmul.shared_race import CLASS_BUDGET_FACTOR, class_config
from core.matmul.sweep import SweepEvent, run_sweep
from core.matmul.verdict import Verdict
from core.platform.jobs import Progress
from core.platform.units import number, seconds
from core.matmul.guess import compare_guess
from core.results.guess import MATMUL_EXAMPLE, parse_matmul_guess
from core.results.matmul import MatmulSweep
from core.store.access import INSTRUCTOR
from core.store.database import open_store

EXAMPLE = "--sizes 256,512,1024"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("matmul", help=HELP["matmul"])
    p.add_argument("--sizes", help=f"comma-separated matrix sizes n, e.g. {EXAMPLE} (default: 64 to 2048 by doubling)")
    p.add_argument("--devices", help="comma-separated: cpu, cuda, cuda:1, mps (default: cpu and the first GPU, if any)")
    p.add_argument("--dtype", default="float32", help=f"comma-separated dtypes to compare: {', '.join(DTYPES)}")
    p.add_argument("--threads", help="CPU threads, or a comma-separated list to compare (default: 1 and all cores "
                                     "without a GPU; with one, the cores other programs leave free when it starts)")
    p.add_argument("--tf32", nargs="?", const="on", default="off", choices=list(TF32_CHOICES),
                   help="TF32 for CUDA float32: --tf32 alone means on (default: off)")
    p.add_argument("--budget", default="1",
                   help="seconds per size and series, warm-up included (default: 1); a size whose "
                        "series cannot yet be told apart samples on, up to twice this")
    p.add_argument("--end-to-end", action="store_true", help="also time copying inputs to the GPU and the result back")
    p.add_argument("--cache", default="warm", choices=list(CACHE_CHOICES),
                   help="warm (default): matrices stay in cache between repetitions; cold: caches evicted before "
                        "each timed call, outside the clock")
    p.add_argument("--guess", metavar="GUESS",
                   help=f"your crossover prediction before the run, saved with it: {MATMUL_EXAMPLE}")
    p.add_argument("--for-class", action="store_true",
                   help=f"the instructor's measurement for the class: {CLASS_BUDGET_FACTOR}x the budget per size, "
                        "saved (as --save) and pinned as the room's reference on the Class board")
    p.add_argument("--recalibrate", action="store_true",
                   help="measure this machine's rate card again before the race (it decides the sizes; run it on a "
                        "quiet machine)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_save_options(p)
    from core.cli.ranks import register_flags

    register_flags(p)  # --ranks K, --distributed: every device of a torchrun job
    p.set_defaults(handler=run)


def _whole_numbers(text: str, what: str, example: str) -> tuple[int, ...]:
    values = []
    for part in text.split(","):
        part = part.strip()
        try:
            values.append(int(part))
        except ValueError:
            raise DashboardError(f"{what} {part!r} is not a whole number; give e.g. {example}") from None
    return tuple(values)


def _budget(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise DashboardError(f"budget {text!r} is not a number of seconds; give e.g. --budget 2") from None


def config_from_args(args: argparse.Namespace) -> SweepConfig:
    """The flags as a SweepConfig; a bad value is a DashboardError naming it."""
    kwargs: dict = {}
    if args.sizes is not None:
        kwargs["sizes"] = _whole_numbers(args.sizes, "size", EXAMPLE)
    if args.devices is not None:
        kwargs["devices"] = tuple(d.strip() for d in args.devices.split(",") if d.strip()) or ("",)
    else:
        kwargs["devices"] = ("cpu", available_devices()[0]) if has_gpu() else ("cpu",)
    if args.threads is not None:
        kwargs["threads"] = _whole_numbers(args.threads, "thread count", "--threads 1,2")
    else:
        kwargs["threads"] = default_race_threads(has_gpu())
    kwargs["dtypes"] = tuple(d.strip() for d in args.dtype.split(","))
    kwargs["tf32"] = tf32_settings(args.tf32)
    options = MatmulOptions(budget_s=_budget(args.budget), end_to_end=args.end_to_end, cache=args.cache)
    return SweepConfig(options=options, **kwargs)


def _progress(progress: Progress[SweepEvent]) -> None:
    if progress.item is None or progress.item.kind != "timing":  # no item: the rate card's calibration
        print(wrap(f"[{progress.done}/{progress.total}] {progress.message}"), file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    args.save = args.save or args.for_class
    check_save_options(args)
    if args.for_class and (args.ranks is not None or args.distributed or args.guess):
        raise DashboardError("--for-class measures the room's reference on this machine's devices: "
                             "drop --ranks, --distributed and --guess")
    if args.ranks is not None or args.distributed:
        from core.cli import ranks

        return ranks.run(args)
    guess = parse_matmul_guess(args.guess)  # an unreadable guess fails before anything runs
    if args.recalibrate:
        from core.matmul.rate_card import forget

        forget()
    plan = plan_series(class_config(config_from_args(args)) if args.for_class else config_from_args(args))
    check_sizes_fit(plan)  # a size too big for memory stops here, before anything runs
    with ctrl_c_stops() as pressed:  # the first Ctrl+C keeps the sizes measured, as the page's Stop does
        result = run_sweep(plan, replace(cli_hooks(on_progress=None if args.quiet else _progress),
                                         should_stop=pressed))
    if guess is not None:
        result = replace(result, guess=guess)
    if result.stopped:
        print(f"stopped: {result.stop_reason}", file=sys.stderr)
    payload = result.to_json()
    if args.json:  # the notice is in the object's `load` field
        print_json(payload)
    else:
        print(render(result))
    if (sentence := compare_guess(result)) is not None:
        print(wrap(sentence), file=sys.stderr if args.json else sys.stdout)
    if args.save and (against := _against_reference(result)) is not None:  # the room's, in the store it saves to
        print(wrap([against]), file=sys.stderr if args.json else sys.stdout)
    if args.save and (earlier := _earlier(result)) is not None:  # the store it saves to says what it saw before
        print(wrap([earlier]), file=sys.stderr if args.json else sys.stdout)
    if result.results:  # a stopped sweep is saved too when asked: its payload says "stopped": true
        run_id = save_if_requested(args, result)
        if args.for_class and run_id is not None and not result.stopped:  # the command line is the instructor
            open_store().pin_reference(run_id, INSTRUCTOR)
            print(f"pinned #{run_id} as the room's reference on the Class board", file=sys.stderr)
    elif args.save:
        print("nothing was measured, so nothing was saved", file=sys.stderr)
    return 0


def _against_reference(result: MatmulSweep) -> str | None:
    """The guess against the room's reference, when one is pinned in the store, as the race page says it."""
    from core.store.class_reference import against_reference, read_reference

    if result.guess is None:
        return None
    try:
        reference = read_reference(open_store())
    except DashboardError:
        return None
    found = None if reference is None else against_reference(reference, result.guess, result.settings, result.machine)
    return None if found is None else found.text


def _earlier(result: MatmulSweep) -> str | None:
    """Under a "cannot tell": the newest clear run of this machine and settings in the store, as the page says it."""
    from core.matmul.cannot_tell import EARLIER_TITLE, cannot_tell, earlier_clear
    from core.store.database import open_store

    if not cannot_tell(result):
        return None
    try:
        found = earlier_clear(open_store(), result)
    except DashboardError:
        return None
    return None if found is None else f"{EARLIER_TITLE.lower()}: {found.text}"


def render(result: MatmulSweep) -> str:
    """The race page's table (labels and units from MatmulPoint) in 100 columns: split in two or more tables,
    each repeating n and series, rather than one 175 columns wide; the sentences after it wrapped."""
    headers, rows = _without_copies(result, *human_rows(result.results))
    tables = [split_tables(headers, rows, keep=2), ""]
    lines = [f"skipped n={s.n} on {s.series}: {s.message}" for s in result.skipped]
    lines += [f"note: {n}" for n in result.notes]
    if result.verdicts:
        tables += [verdict_table(result), ""]
    lines += result.crossover_lines
    if not any(r.is_gpu for r in result.results):
        lines.append("the CPU runs synchronously: there is no 'forgot to synchronize' figure without a GPU")
    lines.append(f"wall time {seconds(result.wall_s or 0)}, of which timed {seconds(result.timed_s or 0)}")
    if clocks := clock_summary(result.results):
        lines.append(clocks)
    if result.cache is not None:
        lines.append(f"cache: {result.cache}" + (" (evicted before each timed call, outside the clock)"
                                                 if result.cache == "cold"
                                                 else " (matrices stay in cache between calls)"))
    if result.load is not None and result.load.notice:
        lines.append(result.load.notice)
    return "\n".join(tables) + "\n" + wrap(lines)


COPY_HEADERS = ("copy in ms", "copy out ms", "end to end ms")


def _without_copies(result: MatmulSweep, headers: list[str], rows: list[list]) -> tuple[list[str], list[list]]:
    """Without a GPU nothing is copied: the copy columns read 0 and 'end to end' repeats the median, so they go."""
    if any(r.is_gpu for r in result.results):
        return headers, rows
    keep = [i for i, h in enumerate(headers) if h not in COPY_HEADERS]
    return [headers[i] for i in keep], [[row[i] for i in keep] for row in rows]


def _ratio(value: float | None) -> str:
    return "-" if value is None else number(value)  # 0.125 or 38.3 (never '0.00' for a ratio below 0.005)


def verdict_table(result: MatmulSweep) -> str:
    """One line per size and comparison: who is faster, by how much, and how sure. Why a call is unclear is a
    sentence, too long for a column in 100: the column names a note ("1"), the notes follow the table, wrapped,
    each sentence once however many rows share it."""
    notes: list[str] = []

    def note(verdict: Verdict) -> str:
        why = "the machine was busy" if verdict.busy and not verdict.why else (verdict.why or "")
        if not why:
            return ""
        if why not in notes:
            notes.append(why)
        return f"note {notes.index(why) + 1}"

    rows = [[v.n, v.a if v.call == "faster" else f"{v.a} vs {v.b}", v.call, _ratio(v.ratio),
             f"{_ratio(v.low)}–{_ratio(v.high)}", note(v)]
            for v in result.verdicts or ()]
    table = split_tables(["n", "faster / compared", "call", "ratio", "95% interval", "why unclear"], rows, keep=2)
    return "\n".join([table, *(wrap(f"note {i}: {why}") for i, why in enumerate(notes, 1))])
