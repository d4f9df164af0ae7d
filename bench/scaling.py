"""Data-parallel scaling of the mini-batch classifier: seconds per epoch and the all-reduce's share for K workers.

Each K runs `core.classifier.workers.train_with_workers` (torchrun, gloo, each worker cpu_count // K
threads, at least 1) on rt-polarity with the default mini-batch config, in turn, one after another.
K beyond the cores (4 on a 2-core machine) is oversubscribed on purpose: it shows the cost of
workers that only wait for each other. Ideal is the K = 1 epoch divided by K.

    python bench/scaling.py [--data PATH] [--epochs N] [--workers 1 2 4]

Prints a table and writes JSON to bench/results/scaling.json, with the machine's load as each run started.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.classifier.model import ClassifierConfig  # noqa: E402
from core.classifier.workers import train_with_workers, worker_threads  # noqa: E402
from core.cli.output import format_table  # noqa: E402
from core.results.jsonio import to_jsonable  # noqa: E402

RT_POLARITY = ROOT.parent / "shared" / "data" / "rt-polaritydata"


def measure(data: Path, workers: int, epochs: int) -> dict:
    run = train_with_workers(str(data), ClassifierConfig(device="cpu", epochs=epochs), workers)
    seconds = [e.seconds or 0.0 for e in run.epochs]
    reduce = [e.allreduce_seconds or 0.0 for e in run.epochs]
    return {"workers": workers, "threads_per_worker": worker_threads(workers),
            "seconds_per_epoch": statistics.median(seconds), "allreduce_per_epoch": statistics.median(reduce),
            "allreduce_share": sum(reduce) / sum(seconds), "test_accuracy": run.test_accuracy,
            "load": to_jsonable(run.load)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=RT_POLARITY, help="rt-polarity folder (default: ../shared/...)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    rows = []
    for k in args.workers:
        print(f"K = {k} ...", file=sys.stderr, flush=True)
        rows.append(measure(args.data, k, args.epochs))
    base = rows[0]["seconds_per_epoch"] * rows[0]["workers"]
    table = [[r["workers"], r["threads_per_worker"], f"{r['seconds_per_epoch']:.2f}", f"{base / r['workers']:.2f}",
              f"{r['allreduce_per_epoch']:.2f}", f"{r['allreduce_share']:.0%}", f"{r['test_accuracy']:.4f}",
              f"{r['load']['load_average']:.1f}" if r["load"] else "?"] for r in rows]
    print(format_table(["workers", "threads each", "s/epoch", "ideal s/epoch", "all-reduce s", "all-reduce share",
                        "test accuracy", "load avg"], table))
    out = ROOT / "bench" / "results" / "scaling.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"cpus": os.cpu_count(), "epochs": args.epochs, "runs": rows}, indent=2))
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
