"""How long `python -m core devices` takes to start, against a bare `import torch`.

Every CLI run pays torch's import; the target is that `devices` costs at most 1.3x that, i.e. the
CLI imports only the chosen subcommand's module. `--help` (which imports no subcommand module and no
torch: bench/cli_help.py) is shown for scale. The commands take turns (round-robin, the first one
rotating), so a change of load hits all alike; each is run in a fresh process with its output thrown
away, and the table shows the median wall time of --runs runs. `python -m core` leaves with os._exit
(core/cli/entry.py), skipping the 0.3-0.5 s interpreter teardown a bare `import torch` pays, so
`import torch` without teardown is shown too: the CLI's own cost is the difference to that. Writes
everything to bench/results/ as JSON.

    python bench/cli_startup.py [--runs N] [--python PATH] [--root CHECKOUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.cli.output import format_table  # noqa: E402

TARGET_RATIO = 1.3  # `python -m core devices` within 1.3x of `import torch`
BASELINE = "import torch"
NO_TEARDOWN = "import torch, then os._exit"  # what core/cli/entry.py does: no interpreter teardown


def commands(python: str) -> dict[str, list[str]]:
    """The command lines timed, by the label the table shows."""
    return {
        BASELINE: [python, "-c", "import torch"],
        NO_TEARDOWN: [python, "-c", "import os, torch; os._exit(0)"],
        "core devices": [python, "-m", "core", "devices"],
        "core devices --json": [python, "-m", "core", "devices", "--json"],
        "core --help (no subcommand module)": [python, "-m", "core", "--help"],
    }


def wall_s(argv: list[str], cwd: Path = ROOT) -> float:
    """Seconds from start to exit of one fresh process; a failing command stops the benchmark."""
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def measure(cmds: dict[str, list[str]], runs: int, cwd: Path) -> dict[str, list[float]]:
    """`runs` wall times per command, taking turns, with the first command rotating each round."""
    labels = list(cmds)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for i in range(runs):
        for label in labels[i % len(labels):] + labels[:i % len(labels)]:
            times[label].append(wall_s(cmds[label], cwd))
    return times


def torch_version(python: str) -> str:
    out = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per command (the table shows the median)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter to time (default: this one)")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the checkout whose `core` is timed (default: this one; e.g. an older commit's)")
    args = parser.parse_args()

    cmds = commands(args.python)
    wall_s(cmds[BASELINE])  # warm the file cache, so the first timed run is not the odd one out
    load_before = os.getloadavg()
    times = measure(cmds, args.runs, args.root.resolve())
    load_after = os.getloadavg()

    base = statistics.median(times[BASELINE])
    rows = [[label, statistics.median(t), min(t), max(t), statistics.median(t) / base] for label, t in times.items()]
    print(format_table(["command", "median (s)", "min (s)", "max (s)", "vs import torch"], rows))
    ratio = statistics.median(times["core devices"]) / base
    own = statistics.median(times["core devices"]) / statistics.median(times[NO_TEARDOWN])
    print(f"\n`python -m core devices` / `import torch`: {ratio:.2f}x (target at most {TARGET_RATIO}x: "
          f"{'within' if ratio <= TARGET_RATIO else 'OVER'}); {own:.2f}x `import torch` without teardown, as the "
          f"CLI ends; torch {torch_version(args.python)}, "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after, {os.cpu_count()} CPUs")

    out = ROOT / "bench" / "results" / f"cli_startup-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "machine": platform.node(), "python": args.python, "root": str(args.root.resolve()),
        "torch": torch_version(args.python),
        "cpus": os.cpu_count(), "runs": args.runs, "load_before": load_before, "load_after": load_after,
        "ratio_devices_vs_import_torch": ratio, "ratio_devices_vs_import_torch_no_teardown": own,
        "target_ratio": TARGET_RATIO,
        "commands": {label: {"argv": cmds[label][1:], "times_s": t, "median_s": statistics.median(t)}
                     for label, t in times.items()},
    }, indent=2))
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
