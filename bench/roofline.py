"""The roofline's three checks: bandwidth against numpy, the model against the sweep, the predicted crossover.

1. The bandwidth roof (torch's copy of a 64 MiB buffer, read + write bytes) against a plain numpy
   copy of the same bytes, measured in the same run with the same engine, taking turns (target:
   within 20 %). Both on one thread: numpy's copy is single-threaded.
2. The fitted model's error on the sweep's times, median |predicted - measured| / measured for
   n >= 256 (target at most 25 %).
3. Predicted / measured crossover for all CPU threads against one (the page's CPU-only race).

Prints a table with the load average, writes JSON to bench/results/.

    python bench/roofline.py [--budget S] [--turns N]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.cli.output import format_table  # noqa: E402
from core.platform import timing  # noqa: E402
from core.results.jsonio import to_jsonable  # noqa: E402
from core.roofline import probes  # noqa: E402
from core.roofline.explain import crossover_ratio, model_errors  # noqa: E402
from core.roofline.run import RooflineConfig, run_roofline  # noqa: E402

CPU = torch.device("cpu")


def bandwidth_turns(turns: int, budget_s: float) -> dict:
    """torch's copy and numpy's copy of the same bytes, one thread, alternating; GB/s of each turn."""
    nbytes = probes.CPU_STREAM_BYTES
    src, dst = np.ones(nbytes // 4, dtype=np.float32), np.empty(nbytes // 4, dtype=np.float32)
    torch_gbs, numpy_gbs = [], []
    with timing.torch_threads(1):
        for _ in range(turns):
            torch_gbs.append(probes.bandwidth_gbs(CPU, torch.float32, budget_s=budget_s))
            m = timing.measure(functools.partial(np.copyto, dst, src), CPU, budget_s=budget_s, min_samples=3)
            numpy_gbs.append(probes.rate_gbs(2 * nbytes, m))
    t, n = statistics.median(torch_gbs), statistics.median(numpy_gbs)
    return {"torch_gbs": torch_gbs, "numpy_gbs": numpy_gbs, "torch_median_gbs": t, "numpy_median_gbs": n,
            "ratio": t / n}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--budget", type=float, default=0.5, help="seconds per measurement (default 0.5)")
    parser.add_argument("--turns", type=int, default=5, help="turns of the bandwidth comparison (default 5)")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()[0]
    bandwidth = bandwidth_turns(args.turns, args.budget)
    start = time.perf_counter()
    run = run_roofline(RooflineConfig(devices=("cpu",), budget_s=args.budget))
    wall = time.perf_counter() - start
    errors = model_errors(run)
    ratio = crossover_ratio(run)
    load_after = os.getloadavg()[0]

    rows = [
        ["bandwidth: torch copy / numpy copy (1 thread)", bandwidth["ratio"], "0.8-1.2",
         f"{bandwidth['torch_median_gbs']:.3g} vs {bandwidth['numpy_median_gbs']:.3g} GB/s"],
        [f"model: median |error|, n >= {errors.min_n}", errors.median_abs, "<= 0.25",
         f"{errors.count} products; worst {errors.worst[2]:+.0%} ({errors.worst[0]}, n={errors.worst[1]})"
         if errors.worst else "no products"],
        ["crossover: predicted / measured (all threads vs 1)", ratio, "about 1",
         f"predicted {run.predicted_crossover_n}, measured {run.measured_crossover_n}"],
    ]
    print(format_table(["check", "ratio", "target", "figures"], rows))
    print()
    roofs = [[d.series, d.peak_gflops, d.theoretical_gflops, d.bandwidth_gbs, (d.launch_s or 0) * 1e6,
              None if d.wake_s is None else d.wake_s * 1e6] for d in run.devices_roofs]
    print(format_table(["series", "peak GFLOP/s", "theory GFLOP/s", "GB/s", "launch µs", "wake µs"], roofs))
    print(f"\nroofline run {wall:.1f} s; load average {load_before:.2f} before, {load_after:.2f} after; "
          f"{os.cpu_count()} logical cores, torch {torch.__version__}")

    out = ROOT / "bench" / "results" / f"roofline-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(to_jsonable({
        "machine": platform.node(), "cores": os.cpu_count(), "torch": torch.__version__, "budget_s": args.budget,
        "load_before": load_before, "load_after": load_after, "bandwidth": bandwidth,
        "model_median_abs_error": errors.median_abs, "model_points": errors.count, "crossover_ratio": ratio,
        "run": run.to_json(), "run_wall_s": wall}), indent=2))
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
