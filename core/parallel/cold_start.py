"""Time the first matrix products of a brand-new Python process: the only truly cold calls.

A long-running dashboard server has usually multiplied matrices already, so its "first call"
finds the math library, its thread pool and (on a GPU) cuBLAS ready, and looks no slower than
the rest. A fresh `python -m core.parallel.cold_start` process shows what a student's first cell pays.

The parent holds the device lock while the child runs; the child must not take it (it would
wait for its own parent).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from core.platform.devices import synchronize
from core.errors import DashboardError
from core.platform.timing import Measurement, measure, torch_threads

ROOT = Path(__file__).resolve().parents[2]  # the folder holding the core package
START_ALLOWANCE_S = 120.0  # importing torch and creating a CUDA context on a slow, busy machine

ColdTimings = dict[tuple[str, int], Measurement]  # (device, n) -> timings of a @ a
FreshRunner = Callable[[Sequence[int], Sequence[str], float, "int | None"], ColdTimings]


def probe(sizes: Sequence[int], devices: Sequence[str], budget_s: float, cpu_threads: int | None = None) -> list[dict]:
    """In this process: for each device and size, in order, make a and time a @ a
    (with `cpu_threads` torch threads on the CPU; None leaves torch's default).

    The input is created and the device synchronized before timing, so a GPU's context set-up
    is not counted: the first product pays only the math library's and kernels' own set-up.
    """
    rows = []
    for name in devices:
        device = torch.device(name)
        for size in sizes:
            a = torch.randn(size, size, device=device)
            synchronize(device)
            with torch_threads(cpu_threads if device.type == "cpu" else None):
                m = measure(lambda: a @ a, device, budget_s=budget_s)
            rows.append({"device": name, "size": size, "times_s": list(m.times_s),
                         "calls_per_block": m.calls_per_block, "first_call_s": m.first_call_s})
    return rows


def parse(rows: list[dict]) -> ColdTimings:
    """The child's JSON rows back into Measurements."""
    try:
        return {
            (str(r["device"]), int(r["size"])): Measurement(
                tuple(float(t) for t in r["times_s"]), int(r["calls_per_block"]), float(r["first_call_s"])
            )
            for r in rows
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise DashboardError(f"the fresh process returned unreadable timings ({exc})") from None


def run_in_fresh_process(sizes: Sequence[int], devices: Sequence[str], budget_s: float,
                         cpu_threads: int | None = None) -> ColdTimings:
    """Start `python -m core.parallel.cold_start` and return its timings; a failure is a DashboardError."""
    command = [sys.executable, "-m", "core.parallel.cold_start", "--budget", str(budget_s),
               "--sizes", *map(str, sizes), "--devices", *devices]
    command += ["--threads", str(cpu_threads)] if cpu_threads is not None else []
    timeout_s = START_ALLOWANCE_S + budget_s * len(sizes) * len(devices)
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise DashboardError(f"the fresh Python process took over {timeout_s:.0f} s; try again when "
                             "the machine is less busy") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise DashboardError(f"the fresh Python process failed: {last}")
    try:
        rows = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise DashboardError("the fresh Python process printed no timings") from None
    return parse(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m core.parallel.cold_start", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", required=True)
    parser.add_argument("--devices", nargs="+", default=["cpu"])
    parser.add_argument("--budget", type=float, default=0.5, help="seconds per (device, size)")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's own)")
    args = parser.parse_args(argv)
    print(json.dumps(probe(args.sizes, args.devices, args.budget, args.threads)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
