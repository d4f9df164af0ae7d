"""The Matmul race on K CPU ranks of this machine: each alone against all at once, and the spread across ranks.

Each K runs `core.matmul.rank_launch.run_ranks` (torchrun, gloo, each CPU rank usable cores // K threads,
at least 1), one K after another. K beyond the cores (4 on a 2-core machine) is oversubscribed on
purpose: the ranks then take turns on the same cores, which is what "together" costs there.

    python bench/ranks.py [--ranks 1 2 4] [--sizes 256 512 1024] [--budget 0.5]

Prints a table (per K and size: median GFLOP/s alone and together, their ratio, the spread across ranks
together, the straggler call) and writes JSON to bench/results/ranks.json with the load before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.cli.output import format_table  # noqa: E402
from core.matmul.rank_launch import run_ranks  # noqa: E402
from core.matmul.rank_worker import RanksConfig  # noqa: E402
from core.platform.machine_load import load_average, usable_cores  # noqa: E402
from core.results.cluster import ClusterRun  # noqa: E402
from core.results.jsonio import to_jsonable  # noqa: E402


def rows_of(k: int, run: ClusterRun) -> list[list[object]]:
    together = {s.n: s for s in run.spread}
    out: list[list[object]] = []
    for c in run.contention:
        s = together[c.n]
        out.append([k, run.ranks[0].threads, c.n, f"{c.alone_gflops or 0:.1f}", f"{c.together_gflops or 0:.1f}",
                    f"{c.ratio or 0:.2f}", f"{s.min or 0:.1f}-{s.max or 0:.1f}",
                    f"{(s.max or 0) / (s.min or 1):.2f}", run.straggler_call])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    parser.add_argument("--budget", type=float, default=0.5, help="seconds per size, rank and phase")
    args = parser.parse_args()
    before = load_average()
    runs = []
    for k in args.ranks:
        print(f"K = {k} ...", file=sys.stderr, flush=True)
        runs.append((k, run_ranks(RanksConfig(sizes=tuple(args.sizes), budget_s=args.budget), k)))
    after = load_average()
    table = [row for k, run in runs for row in rows_of(k, run)]
    print(format_table(["ranks", "threads each", "n", "alone GFLOP/s", "together GFLOP/s", "alone/together",
                        "together min-max", "max/min", "straggler"], table))
    for k, run in runs:
        print(f"K = {k}: straggler {run.straggler_call} ({run.straggler_note}); "
              f"load {run.load.notice if run.load and run.load.notice else 'quiet'}")
    print(f"load average {before} before, {after} after; {usable_cores()} usable cores, {os.cpu_count()} logical")
    out = ROOT / "bench" / "results" / "ranks.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"load_average_before": before, "load_average_after": after, "cores": usable_cores(),
                               "budget_s": args.budget, "runs": [{"ranks": k, "run": to_jsonable(run.to_json())}
                                                                 for k, run in runs]}, indent=1))
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
