"""Does the Matmul race's timing engine agree with torch.utils.benchmark, and what does a sweep cost?

Part 1: for n = 64 ... 4096 (CPU float32), the engine's median (core.platform.timing.measure, as the race
uses it) against torch.utils.benchmark.Timer(...).blocked_autorange() on the same call, the same
matrices and the same thread count, taking turns in one run. Target: every ratio in 0.95-1.05.
Part 2: a sweep's wall time against the sum of its timed work (the overhead of warm-ups, input
creation, the float64 check and the size plan with its rate card). Target: at most 1.5x.

    python bench/timing_accuracy.py [--threads N] [--rounds R] [--budget S]

Prints a table and writes JSON to bench/results/. The machine may be shared: note the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from core.cli.output import format_table  # noqa: E402
from core.platform.jobs import run_job  # noqa: E402
from core.selfcheck import agreement_with_torch_benchmark  # noqa: E402
from core.matmul.choices import log_sizes  # noqa: E402
from core.matmul.config import MatmulOptions, SweepConfig  # noqa: E402
from core.matmul.sweep import run_sweep  # noqa: E402

SIZES = (64, 128, 256, 512, 1024, 2048, 4096)
RATIO_TARGET = (0.95, 1.05)
OVERHEAD_TARGET = 1.5  # sweep wall time / sum of timed work
BIG_N = 2048  # from here on a product takes long enough that a longer budget is needed for several samples
RESULTS = ROOT / "bench" / "results"


def accuracy(threads: int, rounds: int, budget_s: float) -> list[dict]:
    rows = []
    with run_job(["cpu"], label="timing accuracy bench"):
        for n in SIZES:
            budget = budget_s * (4 if n >= BIG_N else 1)
            runs = agreement_with_torch_benchmark(n, threads=threads, rounds=rounds, budget_s=budget)
            ratios = [r["ratio"] for r in runs]
            rows.append({
                "n": n, "threads": threads, "rounds": rounds, "budget_s": budget,
                "engine_median_s": statistics.median(r["engine_s"] for r in runs),
                "torch_median_s": statistics.median(r["torch_s"] for r in runs),
                "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                "engine_samples": [r["engine_samples"] for r in runs],
                "torch_samples": [r["torch_samples"] for r in runs],
            })
            print(f"  n={n}: ratio {rows[-1]['ratio']:.3f}", file=sys.stderr, flush=True)
    return rows


def overhead(threads: int) -> list[dict]:
    configs = {
        "page default without a GPU (64..2048, threads 1 and all, 1 s)": SweepConfig(
            sizes=log_sizes(64, 2048), threads=tuple(dict.fromkeys((1, threads))), options=MatmulOptions(budget_s=1.0)),
        "float32 + float16 (guard skips float16's big sizes), 1 s": SweepConfig(
            sizes=log_sizes(64, 2048), threads=(threads,), dtypes=("float32", "float16"),
            options=MatmulOptions(budget_s=1.0)),
    }
    rows = []
    for name, config in configs.items():
        result = run_sweep(config)
        rows.append({"sweep": name, "wall_s": result.wall_s, "timed_s": result.timed_s,
                     "ratio": result.wall_s / result.timed_s, "timed_steps": len(result.results),
                     "skipped_steps": len(result.skipped)})
        print(f"  {name}: {rows[-1]['ratio']:.2f}x", file=sys.stderr, flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads(), help="CPU threads for both timers")
    parser.add_argument("--rounds", type=int, default=5, help="turns each timer takes per size (median ratio reported)")
    parser.add_argument("--budget", type=float, default=0.3, help="seconds per measurement (x4 from n=2048)")
    args = parser.parse_args()

    load_before = os.getloadavg()
    started = time.strftime("%Y%m%d-%H%M%S")
    acc = accuracy(args.threads, args.rounds, args.budget)
    ovh = overhead(args.threads)
    load_after = os.getloadavg()

    print(format_table(
        ["n", "threads", "engine median ms", "torch median ms", "ratio", "min", "max", "in target"],
        [[r["n"], r["threads"], r["engine_median_s"] * 1e3, r["torch_median_s"] * 1e3, round(r["ratio"], 3),
          round(r["ratio_min"], 3), round(r["ratio_max"], 3),
          "yes" if RATIO_TARGET[0] <= r["ratio"] <= RATIO_TARGET[1] else "NO"] for r in acc]))
    print()
    print(format_table(
        ["sweep", "wall s", "timed s", "wall / timed", "in target"],
        [[r["sweep"], round(r["wall_s"], 2), round(r["timed_s"], 2), round(r["ratio"], 2),
          "yes" if r["ratio"] <= OVERHEAD_TARGET else "NO"] for r in ovh]))
    print(f"\nload average (1, 5, 15 min): before {load_before}, after {load_after}; {os.cpu_count()} logical cores")

    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"timing_accuracy-{started}.json"
    out.write_text(json.dumps({
        "accuracy": acc, "overhead": ovh, "ratio_target": RATIO_TARGET, "overhead_target": OVERHEAD_TARGET,
        "load_before": load_before, "load_after": load_after, "cpu_count": os.cpu_count(),
        "torch_version": torch.__version__,
    }, indent=2))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
