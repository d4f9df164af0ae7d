"""A training run and a small matmul sweep on a quiet machine and on one kept busy by a CPU-bound process.

On a shared classroom server other programs keep some cores busy. A job that takes every core then
waits for a descheduled thread at every step: the issue measured a default training run at 6x its
quiet time with 2 threads. The dashboard now probes the machine before each timed job and defaults
to the cores left free (core.platform.machine_load). This script measures what that buys:

  1. quiet: the default run (threads left to the probe), nothing else started by this script;
  2. busy: the same run while one process spins `while True: pass` on a core;
  3. busy, all cores forced (the old default): the same run with --threads = every core.

Ratios are busy / quiet of the training seconds (target: default at most 1.5x) and, for the sweep,
the geometric mean over sizes of the median ratios. The training data is rt-polarity when it is in
the cache (`python -m core data fetch rt-polarity`), else a synthetic matrix of rt-polarity's shape
(8,529 training reviews, ~105k terms, ~40 terms each). "Quiet" means this script adds no load: on
a machine shared with others the load average is printed and saved with the figures.

    python bench/busy_machine.py [--epochs N] [--sizes 64,128,256,512] [--budget S]

Prints a table and writes bench/results/busy_machine.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.classifier.datasets import is_cached, load_source  # noqa: E402
from core.classifier.features import Features, synthetic_features  # noqa: E402
from core.classifier.model import ClassifierConfig  # noqa: E402
from core.classifier.training import features_for, train  # noqa: E402
from core.cli.output import format_table  # noqa: E402
from core.matmul.config import MatmulOptions, SweepConfig  # noqa: E402
from core.matmul.sweep import run_sweep  # noqa: E402
from core.platform.machine_load import load_average, usable_cores  # noqa: E402

RESULTS = ROOT / "bench" / "results"
TARGET = 1.5
RT_SHAPE = (10_662, 105_000, 40)  # documents, terms, distinct terms per review: rt-polarity with 1-2-grams
HOG = "while True: pass"
SETTLE_S = 1.0  # let the hog reach its core (and the one-minute load average start to rise)


def training_features(config: ClassifierConfig) -> tuple[Features, str]:
    if is_cached("rt-polarity"):
        return features_for(load_source("rt-polarity", allow_download=False), config), "rt-polarity"
    return synthetic_features(*RT_SHAPE), "synthetic, rt-polarity's shape"


def time_training(features: Features, config: ClassifierConfig) -> dict[str, object]:
    result = train(features, config)
    return {"seconds": result.train_seconds, "per_epoch_s": result.seconds_per_epoch, "threads": result.threads,
            "load": None if result.load is None else result.load.to_json(), "accuracy": result.test_accuracy}


def time_sweep(sizes: tuple[int, ...], budget_s: float, threads: int | None) -> dict[str, object]:
    options = MatmulOptions(budget_s=budget_s, check_error=False)
    result = run_sweep(SweepConfig(sizes=sizes, threads=(threads,), options=options))
    return {"medians_s": {r.n: r.median_s for r in result.results},
            "threads": sorted({r.threads for r in result.results if r.threads is not None}),
            "load": None if result.load is None else result.load.to_json()}


class Hog:
    """One CPU-bound process (started here, ended here by its own pid)."""

    def __enter__(self) -> "Hog":
        self.proc = subprocess.Popen([sys.executable, "-c", HOG])
        time.sleep(SETTLE_S)
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


def geomean_ratio(busy: dict, quiet: dict) -> float:
    ratios = [busy[n] / quiet[n] for n in quiet if n in busy and quiet[n]]
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else math.nan


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=ClassifierConfig().epochs)
    parser.add_argument("--sizes", default="64,128,256,512")
    parser.add_argument("--budget", type=float, default=0.5, help="seconds per size of the sweep")
    args = parser.parse_args()
    cores = usable_cores()
    config = ClassifierConfig(epochs=args.epochs, device="cpu")
    sizes = tuple(int(s) for s in args.sizes.split(","))
    features, data = training_features(config)
    runs: dict[str, dict[str, object]] = {}
    load_before = load_average()
    runs["train quiet"] = time_training(features, config)
    runs["sweep quiet"] = time_sweep(sizes, args.budget, None)
    with Hog():
        runs["train busy"] = time_training(features, config)
        all_cores = ClassifierConfig(**{**config.to_dict(), "threads": cores})
        runs["train busy, all cores"] = time_training(features, all_cores)
        runs["sweep busy"] = time_sweep(sizes, args.budget, None)
        runs["sweep busy, all cores"] = time_sweep(sizes, args.budget, cores)
    load_after = load_average()
    quiet_s, quiet_m = runs["train quiet"]["seconds"], runs["sweep quiet"]["medians_s"]
    ratios = {"train default": runs["train busy"]["seconds"] / quiet_s,  # type: ignore[operator]
              "train all cores": runs["train busy, all cores"]["seconds"] / quiet_s,  # type: ignore[operator]
              "sweep default": geomean_ratio(runs["sweep busy"]["medians_s"], quiet_m),  # type: ignore[arg-type]
              "sweep all cores": geomean_ratio(runs["sweep busy, all cores"]["medians_s"], quiet_m)}  # type: ignore[arg-type]
    rows = []
    for name, run in runs.items():
        load = run["load"] or {}
        figure = (f"{run['seconds']:.2f} s ({run['per_epoch_s']:.2f} s/epoch)" if "seconds" in run
                  else ", ".join(f"{n}: {m * 1e3:.3g} ms" for n, m in run["medians_s"].items()))  # type: ignore[union-attr]
        others = load.get("others_cores")
        rows.append([name, run["threads"], figure, "" if others is None else f"{others:.2f}", load.get("busy")])
    print(f"{cores} cores; training data: {data}, {args.epochs} epochs; "
          f"sweep n = {args.sizes}, {args.budget:g} s per size")
    print(f"load average before {load_before}, after {load_after}\n")
    print(format_table(["run", "threads", "time", "others' cores (probe)", "busy"], rows))
    print()
    print(format_table(["busy / quiet", "ratio", f"target at most {TARGET}"],
                       [[k, round(v, 2), "ok" if k.endswith("default") and v <= TARGET else ""]
                        for k, v in ratios.items()]))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "busy_machine.json"
    out.write_text(json.dumps({"cores": cores, "data": data, "epochs": args.epochs, "sizes": sizes,
                               "budget_s": args.budget, "load_average_before": load_before,
                               "load_average_after": load_after, "runs": runs, "ratios": ratios,
                               "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "pid": os.getpid()},
                              indent=2, default=str))
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
