"""How long `python -m core --help` takes, against a bare `python -c pass`.

The target (issue 34) is at most 1 s: the help lists the subcommands from core.cli.HELP and imports none
of their modules, so no torch (which alone takes seconds on a busy 2-core machine). The commands take
turns (round-robin, the first one rotating), so a change of load hits all alike; each runs in a fresh
process with its output thrown away, and the table shows the median wall time of --runs runs and the
ratio to `python -c pass` (an interpreter's start-up, which no CLI can beat). `python -m core devices`,
which must import torch, is shown for scale. Writes everything to bench/results/ as JSON.

    python bench/cli_help.py [--runs N] [--python PATH] [--root CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.cli.output import format_table, wrap  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from cli_startup import measure, wall_s  # noqa: E402  (its alternating wall-clock runs)

TARGET_S = 1.0  # `python -m core --help` within a second (issue 34)
BASELINE = "python -c pass"
HELP = "python -m core --help"


def commands(python: str) -> dict[str, list[str]]:
    """The command lines timed, by the label the table shows."""
    return {
        BASELINE: [python, "-c", "pass"],
        HELP: [python, "-m", "core", "--help"],
        "python -m core selfcheck --help": [python, "-m", "core", "selfcheck", "--help"],
        "python -m core devices": [python, "-m", "core", "devices"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per command (the table shows the median)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to time (default: this one)")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the checkout whose `core` is timed (default: this one; e.g. an older commit's)")
    args = parser.parse_args()

    cmds = commands(args.python)
    root = args.root.resolve()
    wall_s(cmds[HELP], root)  # warm the file cache, so the first timed run is not the odd one out
    load_before = os.getloadavg()
    times = measure(cmds, args.runs, root)
    load_after = os.getloadavg()

    base = statistics.median(times[BASELINE])
    rows = [[label, statistics.median(t), min(t), max(t), statistics.median(t) / base] for label, t in times.items()]
    print(format_table(["command", "median (s)", "min (s)", "max (s)", "vs python -c pass"], rows))
    help_s = statistics.median(times[HELP])
    print("\n" + wrap(f"`{HELP}`: {help_s:.3g} s, {help_s / base:.3g}x `{BASELINE}` (target at most {TARGET_S:g} s: "
          f"{'within' if help_s <= TARGET_S else 'OVER'}); load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after, {os.cpu_count()} CPUs"))

    out = ROOT / "bench" / "results" / f"cli_help-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "machine": platform.node(), "python": args.python, "root": str(root), "cpus": os.cpu_count(),
        "runs": args.runs, "load_before": load_before, "load_after": load_after, "target_s": TARGET_S,
        "help_median_s": help_s, "ratio_help_vs_python": help_s / base,
        "commands": {label: {"argv": cmds[label][1:], "times_s": t, "median_s": statistics.median(t)}
                     for label, t in times.items()},
    }, indent=2))
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
