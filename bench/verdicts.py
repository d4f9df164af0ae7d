"""The default Matmul race, three times on a quiet machine and three times beside a CPU-bound process:
do the calls hold?

Issue 20: the same button told three different stories on a busy 2-core machine. The race now
times the series of each size in alternation and calls each size `faster`, `same` or `unclear`
(core.matmul.verdict). This script runs the CLI's default race (`python -m core matmul` with no
flags: 1 thread against all cores without a GPU, CPU against GPU with one), alternating quiet and
busy runs (busy: one process spinning `while True: pass`), and checks the issue's targets:

  - no two runs give opposite confident calls at one size (one says A is faster, another B);
  - on the quiet runs every measured size from 512 up is called (faster or same), not unclear.

"Quiet" means this script adds no load: on a shared machine other programs may still run, and
each run's own load probe (others' CPU while it ran, per size) is printed and saved beside it.

    python bench/verdicts.py [--runs 3] [--sizes 64,128,...] [--budget S]

Prints a table of calls per size and run, and writes bench/results/verdicts.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.cli import build_parser  # noqa: E402
from core.cli.matmul import config_from_args  # noqa: E402
from core.cli.output import format_table  # noqa: E402
from core.matmul.sweep import run_sweep  # noqa: E402
from core.platform.machine_load import load_average, usable_cores  # noqa: E402
from core.results.matmul import MatmulSweep  # noqa: E402

RESULTS = ROOT / "bench" / "results"
HOG = "while True: pass"
SETTLE_S = 1.0  # let the competing process reach its core
CALLED_FROM = 512  # on quiet runs, sizes from here up must be called


def short(label: str) -> str:
    """'cpu float32 2 threads' -> '2 threads', 'cuda:0 float32 TF32 off' -> 'cuda:0'."""
    parts = label.split()
    return " ".join(parts[2:]) if parts[0] == "cpu" else parts[0]


def cell(sweep: MatmulSweep, n: int) -> str:
    """What one run said at size n: the faster series and its ratio, 'same', 'unclear (busy)' or 'skipped'."""
    verdicts = [v for v in sweep.verdicts or () if v.n == n]
    if not verdicts:
        return "skipped"
    v = verdicts[0]  # the headline comparison comes first
    if v.call == "faster":
        return f"{short(v.a)} ×{v.ratio:.2f}"
    if v.call == "same":
        return f"same ×{v.ratio:.2f}"
    return "unclear (busy)" if v.busy else "unclear"


@dataclass
class Run:
    busy: bool  # run beside the competing process
    load_average_before: float | None
    sweep: MatmulSweep

    @property
    def others_cores(self) -> dict[int, float | None]:
        """CPU other programs used while each size was timed (max over the size's series)."""
        return {p.n: p.others_cores for p in self.sweep.results}

    @property
    def most_others(self) -> str:
        values = [c for c in self.others_cores.values() if c is not None]
        return f"{max(values):.2f}" if values else "-"


def run_once(busy: bool, args: argparse.Namespace) -> Run:
    argv = (["matmul"] + ([f"--sizes={args.sizes}"] if args.sizes else [])
            + ([f"--budget={args.budget}"] if args.budget else []))
    config = config_from_args(build_parser().parse_args(argv))
    hog = subprocess.Popen([sys.executable, "-c", HOG]) if busy else None
    try:
        if hog is not None:
            time.sleep(SETTLE_S)
        load_before = load_average()
        sweep = run_sweep(config)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    return Run(busy, load_before, sweep)


def check(runs: list[Run], sizes: list[int]) -> list[str]:
    """The issue's targets, as a list of what failed (empty: all met)."""
    problems = []
    for n in sizes:
        winners = {v.a for r in runs for v in r.sweep.verdicts or () if v.n == n and v.call == "faster"}
        if len(winners) > 1:
            problems.append(f"n={n}: opposite confident calls ({' / '.join(sorted(winners))})")
    for i, r in enumerate(runs):
        if r.busy:
            continue
        for v in r.sweep.verdicts or ():
            if v.n >= CALLED_FROM and v.call == "unclear":
                problems.append(f"quiet run {i + 1}, n={v.n}: unclear ({'busy' if v.busy else v.why})")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="quiet runs, and as many busy ones (default 3)")
    parser.add_argument("--sizes", help="as the CLI's --sizes (default: the CLI's default)")
    parser.add_argument("--budget", help="as the CLI's --budget (default: the CLI's default)")
    args = parser.parse_args()
    runs = []
    for i in range(2 * args.runs):
        run = run_once(busy=i % 2 == 1, args=args)
        runs.append(run)
        call = run.sweep.headline_crossover.call if run.sweep.headline_crossover else "-"
        print(f"run {i + 1} ({'busy' if run.busy else 'quiet'}): {run.sweep.wall_s or 0:.1f} s, crossover {call}",
              flush=True)
    sizes = sorted({n for r in runs for n in r.sweep.settings["sizes"]})
    headers = ["n"] + [f"{i + 1} {'busy' if r.busy else 'quiet'}" for i, r in enumerate(runs)]
    rows: list[list[object]] = [[n] + [cell(r.sweep, n) for r in runs] for n in sizes]
    rows.append(["others' cores (max)"] + [r.most_others for r in runs])
    rows.append(["load avg before"] + [f"{r.load_average_before:.2f}" if r.load_average_before is not None else "-"
                                       for r in runs])
    rows.append(["crossover"] + [r.sweep.headline_crossover.call if r.sweep.headline_crossover else "-" for r in runs])
    print(format_table(headers, rows))
    problems = check(runs, sizes)
    print("targets met" if not problems else "targets missed:\n  " + "\n  ".join(problems))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"cores": usable_cores(), "table": {"headers": headers, "rows": rows}, "problems": problems,
           "runs": [{"busy": r.busy, "load_average_before": r.load_average_before, "others_cores": r.others_cores,
                     "sweep": r.sweep.to_json()} for r in runs]}
    (RESULTS / "verdicts.json").write_text(json.dumps(out, indent=1, default=str))
    print(f"wrote {RESULTS / 'verdicts.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
