"""`python -m core roofline`: each device's roofs, the sweep on them, the predicted and measured crossover."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from core.cli import HELP
from core.cli.output import TABLE_WIDTH, format_table, print_json, wrap
from core.cli.results import add_save_options, check_save_options, save_if_requested
from core.cli.waiting import cli_hooks
from core.errors import DashboardError
from core.matmul.series import DTYPES
from core.platform.devices import available_devices, has_gpu
from core.platform.jobs import Progress
from core.platform.units import seconds
from core.results.roofline import RooflineRun
from core.roofline.explain import crossover_sentence, left_out_text, model_errors, whole_percent
from core.roofline.run import RooflineConfig, run_roofline
from core.roofline.spread import names_of


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("roofline", help=HELP["roofline"])
    p.add_argument("--devices", help="comma-separated: cpu, cuda, cuda:1, mps "
                                     "(default: cpu and the first GPU, if any); "
                                     "cpu alone compares all threads against one")
    p.add_argument("--dtype", default="float32", help=f"one of {', '.join(DTYPES)} (default: float32)")
    p.add_argument("--budget", default="0.2", help="seconds per measurement: each roof and each size (default: 0.2)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_save_options(p)
    p.set_defaults(handler=run)


def config_from_args(args: argparse.Namespace) -> RooflineConfig:
    try:
        budget = float(args.budget)
    except ValueError:
        raise DashboardError(f"budget {args.budget!r} is not a number of seconds; give e.g. --budget 0.5") from None
    if args.devices is not None:
        devices = tuple(d.strip() for d in args.devices.split(",") if d.strip()) or ("",)
    else:
        devices = ("cpu", available_devices()[0]) if has_gpu() else ("cpu",)
    return RooflineConfig(devices=devices, dtype=args.dtype.strip(), budget_s=budget)


def _progress(progress: Progress[object]) -> None:
    print(f"[{progress.done}/{progress.total}] {progress.message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    check_save_options(args)
    result = run_roofline(config_from_args(args), cli_hooks(on_progress=None if args.quiet else _progress))
    if result.stopped:
        print("stopped before the last step; what was measured is shown", file=sys.stderr)
    payload = result.to_json()
    print_json(payload) if args.json else print(render(result))
    if result.points:
        save_if_requested(args, result)
    elif args.save:
        print("nothing was measured, so nothing was saved", file=sys.stderr)
    return 0


def micro(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e6


def milli(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def _known(headers: Sequence[str], rows: Sequence[Sequence[object]], keep: int) -> tuple[list[str], list[list[object]]]:
    """The table without the columns after the first `keep` that no row has a value in (a CPU has no copies)."""
    used = [i for i in range(len(headers)) if i < keep or any(r[i] is not None for r in rows)]
    return [headers[i] for i in used], [[r[i] for i in used] for r in rows]


def render(result: RooflineRun) -> str:
    """Two tables within 100 columns (the roofs; the start-up costs and copy rates), the sweep, then the reading."""
    d_all = result.devices_roofs
    roofs = [[d.series, d.peak_gflops, d.theoretical_gflops, d.bandwidth_gbs, d.ridge_intensity,
              names_of(d.noisy or ()) or "-"] for d in d_all]
    lines = [format_table(["series", "peak GFLOP/s", "theory GFLOP/s", "GB/s", "ridge flop/B", "noisy"], roofs,
                          max_width=TABLE_WIDTH, elide=["noisy"]), ""]
    costs = [[d.series, micro(d.launch_s), micro(d.wake_s), d.h2d_gbs, d.d2h_gbs] for d in d_all]
    lines += [format_table(*_known(["series", "start µs", "wake µs", "to GPU GB/s", "from GPU GB/s"], costs, 2)), ""]
    points = [[p.series, p.n, p.intensity, p.gflops, milli(p.median_s), milli(p.predicted_s)] for p in result.points]
    lines += [format_table(["series", "n", "flop/B", "GFLOP/s", "measured ms", "model ms"], points), ""]
    prose = [f"theoretical peak of {d.series}: {d.theoretical_note}" for d in d_all]
    prose += [f"{d.series}: {note}" for d in d_all for note in d.notes or ()]
    errors = model_errors(result)
    if errors.median_abs is not None:
        prose.append(f"model error for n >= {errors.min_n}: "
                     f"median |error| {whole_percent(errors.median_abs)} over {errors.count} points")
    if skipped := left_out_text(result, errors):
        prose.append(skipped)
    prose.append(crossover_sentence(result))
    if result.load is not None and result.load.notice:
        prose.append(result.load.notice)
    prose += [f"note: {n}" for n in result.notes]
    if result.wall_s is not None:
        prose.append(f"wall time {seconds(result.wall_s)}")
    return "\n".join(lines) + "\n" + wrap(prose)
