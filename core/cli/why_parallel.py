"""`python -m core why-parallel`: the 'why parallel' page's five measurements, without a browser."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

from core.parallel import demos
from core.parallel import text
from core.cli.output import print_json
from core.cli.waiting import print_waiting
from core.platform.device_lock import hold_devices

NAMES = {key.replace("_", "-"): key for key in text.SECTIONS}  # CLI spelling -> section key
NAMES_BY_KEY = {key: name for name, key in NAMES.items()}
SUMMARIES = {
    "marbles": text.summarize_marbles,
    "chain": text.summarize_chain,
    "timing_bug": text.summarize_timing_bug,
    "first_call": text.summarize_first_call,
    "location": text.summarize_location,
}


def _budget(value: str) -> float:
    """Refuse a budget no section could work with before anything runs."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not seconds >= demos.MIN_SECTION_BUDGET_S:
        raise argparse.ArgumentTypeError(f"must be at least {demos.MIN_SECTION_BUDGET_S} s, got {value}")
    return seconds


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("why-parallel", help="marbles, a chain of tiny steps, the timing bug, the first call, location")
    p.add_argument("--section", choices=["all", *NAMES], default="all", help="one section, or all in page order")
    p.add_argument("--budget", type=_budget, default=demos.SECTION_BUDGET_S, metavar="S",
                   help=f"seconds per timed section (default {demos.SECTION_BUDGET_S})")
    p.add_argument("--json", action="store_true", help="print one JSON object with the raw timings")
    p.set_defaults(handler=run)


def _progress(progress: demos.Progress) -> None:
    print(f"  {progress.label}: {progress.done} of {progress.total} steps done", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    runners = demos.section_runners(args.budget)
    keys = list(runners) if args.section == "all" else [NAMES[args.section]]
    waiting = print_waiting()
    sections = {}
    for key in keys:
        print(f"{text.SECTIONS[key]} …", file=sys.stderr)
        start = time.perf_counter()
        with hold_devices(demos.section_devices(key), on_wait=waiting,
                          label=f"why-parallel {NAMES_BY_KEY[key]} (command line)") as job:
            result = runners[key](demos.JobHooks(on_progress=_progress, job=job))
        wall_s = time.perf_counter() - start
        sections[key] = {"wall_s": wall_s, "summary": SUMMARIES[key](result), "result": dataclasses.asdict(result)}
        if not args.json:
            print(f"{text.SECTIONS[key]}  ({wall_s:.1f} s)\n{sections[key]['summary']}\n")
    if args.json:
        print_json({"gpu": demos.pick_gpu(), "budget_s": args.budget, "sections": sections})
    return 0
