"""The roofline on a quiet machine and beside a CPU-bound process: is every constant that moved flagged?

Issue 20's target for the roofline: with one competing process, either the wake-up cost stays within 3x of
the quiet figure or it is flagged `noisy`; and the predicted crossover is within 2x of the measured one or a
constant it rests on is flagged (or the measured crossover is called `unclear`: the run says "cannot tell"
rather than a size). This script runs `run_roofline` (CPU: all threads against one) alternately
quiet (this script adds no load; other programs may still run, and each run's own per-constant load is kept)
and busy (one process spinning `while True: pass`), and checks both targets for every busy run against the
median of the quiet ones.

    python bench/roofline_noise.py [--runs 2] [--budget S]

Prints a table per run and the checks, writes bench/results/roofline_noise.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.cli.output import format_table  # noqa: E402
from core.results.roofline import RooflineRun  # noqa: E402
from core.roofline.run import RooflineConfig, run_roofline  # noqa: E402

HOG = "while True: pass"
SETTLE_S = 1.0
WAKE_FACTOR = 3.0  # the targets
CROSSOVER_FACTOR = 2.0


def run_once(busy: bool, budget_s: float) -> RooflineRun:
    hog = subprocess.Popen([sys.executable, "-c", HOG]) if busy else None
    try:
        if hog is not None:
            time.sleep(SETTLE_S)
        return run_roofline(RooflineConfig(devices=("cpu",), budget_s=budget_s))
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def challenger_wake(run: RooflineRun) -> tuple[float | None, bool]:
    roofs = next((d for d in run.devices_roofs if d.series == run.challenger), None)
    return (None, False) if roofs is None else (roofs.wake_s, roofs.is_noisy("wake_s"))


def pair_flagged(run: RooflineRun) -> bool:
    return any(d.noisy for d in run.devices_roofs if d.series in (run.challenger, run.baseline))


def measured_unclear(run: RooflineRun) -> bool:
    """The race's verdicts could not call the measured crossover: the run says 'cannot tell', not a size."""
    return run.measured_crossover is not None and run.measured_crossover.call == "unclear"


def measured(run: RooflineRun) -> str:
    """'found 64-128', 'none', 'unclear (busy)' or 'no call' (a run older than the verdicts)."""
    c = run.measured_crossover
    if c is None:
        return "no call"
    busy = " (busy)" if any(v.busy for v in run.verdicts or ()) else ""
    return f"{c.call} {c.n_low or ''}-{c.n_high}" if c.call == "found" else f"{c.call}{busy}"


def checks(runs: list[tuple[bool, RooflineRun]]) -> list[str]:
    quiet = [w for busy, r in runs if not busy for w in [challenger_wake(r)[0]] if w]
    reference = statistics.median(quiet) if quiet else None
    lines = []
    for i, (busy, run) in enumerate(runs):
        wake, flagged = challenger_wake(run)
        if busy and reference and wake is not None:
            within = reference / WAKE_FACTOR <= wake <= reference * WAKE_FACTOR
            lines.append(f"run {i + 1} (busy): wake-up {wake * 1e6:.3g} µs against quiet {reference * 1e6:.3g} µs: "
                         + ("within 3x" if within else "outside 3x") + (", flagged" if flagged else ", not flagged")
                         + (" -> ok" if within or flagged else " -> FAIL"))
        p, m = run.predicted_crossover_n, run.measured_crossover_n
        close = p is not None and m is not None and 1 / CROSSOVER_FACTOR <= p / m <= CROSSOVER_FACTOR
        flagged = pair_flagged(run) or measured_unclear(run)
        lines.append(f"run {i + 1} ({'busy' if busy else 'quiet'}): crossover predicted {p} "
                     f"[{run.predicted_crossover_low}-{run.predicted_crossover_high}], measured {m} ({measured(run)}): "
                     + ("within 2x" if close else "not within 2x") + (", flagged" if flagged else ", not flagged")
                     + (" -> ok" if close or flagged else " -> FAIL"))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="quiet and busy runs each, alternating (default 2)")
    parser.add_argument("--budget", type=float, default=0.2, help="seconds per measurement (default 0.2)")
    args = parser.parse_args(argv)
    runs: list[tuple[bool, RooflineRun]] = []
    loads = []
    for i in range(2 * args.runs):
        busy = i % 2 == 1
        before = os.getloadavg()[0]
        runs.append((busy, run_once(busy, args.budget)))
        loads.append((before, os.getloadavg()[0]))
    rows = []
    for i, ((busy, run), (lb, la)) in enumerate(zip(runs, loads)):
        for d in run.devices_roofs:
            rows.append([i + 1, "busy" if busy else "quiet", d.series, d.bandwidth_gbs, d.peak_gflops,
                         None if d.launch_s is None else d.launch_s * 1e6, None if d.wake_s is None else d.wake_s * 1e6,
                         ", ".join(d.noisy or ()) or "-", f"{lb:.1f}/{la:.1f}"])
    print(format_table(["run", "load", "series", "GB/s", "GFLOP/s", "launch µs", "wake µs", "noisy",
                        "load avg before/after"], rows))
    lines = checks(runs)
    print("\n".join(lines))
    out = {"runs": [{"busy": busy, "result": run.to_json(), "load_average": list(load)}
                    for (busy, run), load in zip(runs, loads)], "checks": lines}
    path = ROOT / "bench" / "results" / "roofline_noise.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2, default=str) + "\n")
    return 1 if any(line.endswith("FAIL") for line in lines) else 0


if __name__ == "__main__":
    raise SystemExit(main())
