"""Cold against warm cache on the CPU: does the eviction work, and is it kept out of the time?

For n = 64, 128, 256 (one thread, float32) the engine times the product warm and cold, in turns
(warm, cold, cold, warm, ...), and one flush is timed on its own. Targets: cold's median at least
warm's (the eviction works: the matrices are fetched from RAM again), and cold's median well below
warm's plus one flush (the flush, tens of times a small product's time, is not inside the clock).
Prints a table with the load, writes bench/results/cache.json.

    python bench/cache.py [--budget S] [--turns N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.cli.output import format_table  # noqa: E402
from core.matmul.config import MatmulOptions  # noqa: E402
from core.matmul.engine import time_matmul  # noqa: E402
from core.matmul.series import Series  # noqa: E402
from core.platform.cache import cache_flush, llc_bytes  # noqa: E402
from core.platform.machine_load import others_cores  # noqa: E402

SIZES = (64, 128, 256)
SERIES = Series("cpu", "float32", threads=1)


def flush_seconds(turns: int = 20) -> float:
    """Median seconds of one flush of twice the last-level cache, timed on its own."""
    flush = cache_flush(torch.device("cpu"), "cold")
    assert flush is not None
    times = []
    for _ in range(turns):
        start = time.perf_counter()
        flush()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--budget", type=float, default=0.5, help="seconds per measurement (default 0.5)")
    parser.add_argument("--turns", type=int, default=4, help="turns of warm and cold per size (default 4)")
    args = parser.parse_args(argv)
    others_before, load_before = others_cores(0.5), os.getloadavg()[0]
    flush_s = flush_seconds()
    rows, out = [], []
    for n in SIZES:
        medians: dict[str, list[float]] = {"warm": [], "cold": []}
        order = ["warm", "cold"]
        for _ in range(args.turns):
            for choice in order:
                options = MatmulOptions(budget_s=args.budget, unsynced=False, check_error=False, cache=choice)
                medians[choice].append(time_matmul(SERIES, n, options).median_s or 0.0)
            order.reverse()
        warm, cold = statistics.median(medians["warm"]), statistics.median(medians["cold"])
        ok = warm <= cold < warm + flush_s / 2
        rows.append([n, warm * 1e6, cold * 1e6, cold / warm, flush_s * 1e6, "yes" if ok else "NO"])
        out.append({"n": n, "warm_s": medians["warm"], "cold_s": medians["cold"], "warm_median_s": warm,
                    "cold_median_s": cold, "ratio": cold / warm, "ok": ok})
    others_after, load_after = others_cores(0.5), os.getloadavg()[0]
    print(format_table(["n", "warm µs", "cold µs", "cold / warm", "one flush µs", "warm <= cold < warm + flush/2"],
                       rows))
    print(f"last-level cache {llc_bytes() / 2**20:.0f} MiB (flush: twice that); others used {others_before} cores "
          f"before, {others_after} after; load average {load_before:.2f} before, {load_after:.2f} after")
    result = {"sizes": out, "flush_s": flush_s, "llc_bytes": llc_bytes(), "budget_s": args.budget,
              "turns": args.turns, "others_cores": [others_before, others_after],
              "load_average": [load_before, load_after], "torch": torch.__version__,
              "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path = ROOT / "bench" / "results" / "cache.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
