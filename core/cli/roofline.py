"""`python -m core roofline`: each device's roofs, the sweep on them, the predicted and measured crossover."""

from __future__ import annotations

import argparse
import sys

from core.cli.output import format_table, print_json
from core.cli.results import add_save_options, check_save_options, save_if_requested
from core.cli.waiting import cli_hooks
from core.errors import DashboardError
from core.matmul.series import DTYPES
from core.platform.devices import available_devices, has_gpu
from core.platform.jobs import Progress
from core.results.roofline import RooflineRun
from core.roofline.explain import crossover_sentence, left_out_text, model_errors
from core.roofline.run import RooflineConfig, run_roofline


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("roofline",
                       help="measure each device's roofs, place every matmul on them, predict the crossover")
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


def render(result: RooflineRun) -> str:
    roofs = [[d.series, d.peak_gflops, d.theoretical_gflops, d.bandwidth_gbs, d.ridge_intensity,
              micro(d.launch_s), micro(d.wake_s), d.h2d_gbs, d.d2h_gbs, ", ".join(d.noisy or ()) or "-"]
             for d in result.devices_roofs]
    lines = [format_table(["series", "peak GFLOP/s", "theory GFLOP/s", "GB/s", "ridge flop/B", "launch µs",
                           "wake µs", "H2D GB/s", "D2H GB/s", "noisy"], roofs), ""]
    points = [[p.series, p.n, p.intensity, p.gflops, None if p.median_s is None else p.median_s * 1e3,
               None if p.predicted_s is None else p.predicted_s * 1e3] for p in result.points]
    lines += [format_table(["series", "n", "flop/B", "GFLOP/s", "measured ms", "model ms"], points), ""]
    lines += [f"theoretical peak of {d.series}: {d.theoretical_note}" for d in result.devices_roofs]
    lines += [f"{d.series}: {note}" for d in result.devices_roofs for note in d.notes or ()]
    errors = model_errors(result)
    if errors.median_abs is not None:
        lines.append(f"model error for n >= {errors.min_n}: "
                     f"median |error| {errors.median_abs:.0%} over {errors.count} points")
    if skipped := left_out_text(result, errors):
        lines.append(skipped)
    lines.append(crossover_sentence(result))
    if result.load is not None and result.load.notice:
        lines.append(result.load.notice)
    lines += [f"note: {n}" for n in result.notes]
    if result.wall_s is not None:
        lines.append(f"wall time {result.wall_s:.1f} s")
    return "\n".join(lines)
