"""`python -m core why-parallel`: the 'why parallel' page's sections, without a browser.

Walks `core.parallel.registry.SECTIONS` like the page; each section waits in line for its devices
itself, so this only passes hooks: progress and the waiting line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from core.cli import HELP
from core.cli.output import print_json, wrap
from core.plain_text import message_plain
from core.cli.waiting import cli_hooks
from core.parallel import registry
from core.parallel.machine import pick_gpu
from core.errors import DashboardError
from core.parallel.section import BUDGET, SECTION_BUDGET_S, Knob, check_budget
from core.platform.jobs import Progress
from core.platform.units import seconds


def _budget(value: str) -> float:
    """Refuse a budget no section could work with before anything runs."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    try:
        check_budget(seconds)
    except DashboardError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return seconds


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("why-parallel", help=HELP["why-parallel"])
    names = ["all", *(s.name for s in registry.SECTIONS)]  # listed in the help: as {a,b,...} the usage line ran to 107
    p.add_argument("--section", choices=names, default="all", metavar="NAME",
                   help=f"one section, or all in page order: {', '.join(names)}")
    p.add_argument("--budget", type=_budget, default=SECTION_BUDGET_S, metavar="S",
                   help=f"seconds per timed section (default {SECTION_BUDGET_S})")
    for knob in registry.knobs():  # every page setting but the budget, spelled --large-n, --processes, ...
        if knob.name != BUDGET.name:
            p.add_argument(f"--{knob.name.replace('_', '-')}", dest=f"knob_{knob.name}", type=_whole(knob),
                           metavar="N", help=f"{knob.label.lower()} (default {knob.default:g})")
    p.add_argument("--json", action="store_true", help="print one JSON object with the raw timings")
    p.set_defaults(handler=run)


def _whole(knob: Knob) -> Callable[[str], int]:
    """A page setting as a flag: a whole number within the page's bounds, else argparse's one-line error."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
        if not knob.low <= number <= knob.high:
            raise argparse.ArgumentTypeError(f"{knob.label.lower()} must be between {knob.low:g} and {knob.high:g}")
        return number
    return parse


def _values(args: argparse.Namespace) -> dict[str, float]:
    """The budget and every setting given on the command line; the rest stay at the page's defaults."""
    given = {k.name: getattr(args, f"knob_{k.name}") for k in registry.knobs() if k.name != BUDGET.name}
    return {BUDGET.name: args.budget, **{name: v for name, v in given.items() if v is not None}}


def _progress(progress: Progress[object]) -> None:
    print(f"  {progress.message}: {progress.done} of {progress.total} steps done", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    chosen = registry.SECTIONS if args.section == "all" else (registry.section(args.section),)
    hooks, sections = cli_hooks(on_progress=_progress), {}
    for section in chosen:
        print(f"{section.title} …", file=sys.stderr)
        sections[section.key] = section.run_summarized(section.config(_values(args)), hooks)
        done = sections[section.key]
        if not args.json:
            notice = f"\n{done['notice']}" if done["notice"] else ""
            verbatim = f"\n{done['verbatim']}" if done["verbatim"] else ""  # torch's own message, as raised
            print(wrap(f"{section.title}  ({seconds(done['wall_s'])})\n{message_plain(done['summary'])}{verbatim}"
                       f"{notice}") + "\n")
    if args.json:  # `load`: the first timed section's probe (each section carries its own)
        load = next((s["load"] for s in sections.values() if s["load"] is not None), None)
        print_json({"gpu": pick_gpu(), "budget_s": args.budget, "load": load, "sections": sections})
    return 0

