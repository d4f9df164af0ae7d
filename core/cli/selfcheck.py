"""`python -m core selfcheck`: can this machine's timings be trusted? Table or JSON, and a JSON file."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from core.cli import HELP
from core.cli.output import TABLE_WIDTH, cut_cells, format_table, print_json, wrap
from core.results.jsonio import dumps
from core.cli.waiting import cli_hooks
from core.errors import DashboardError
from core.platform.paths import data_dir
from core.platform.units import seconds
from core import selfcheck
from core.selfcheck import Outcome, Report, run_checks, select


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("selfcheck", help=HELP["selfcheck"])
    names = ", ".join(c.name for c in selfcheck.CHECKS)
    p.add_argument("--only", help=f"comma-separated checks to run (default: all): {names}")
    p.add_argument("--out", help="where to write the JSON report (default: selfcheck/ in the data folder)")
    p.add_argument("--json", action="store_true", help="print the JSON report instead of a table")
    p.set_defaults(handler=run)


def default_out() -> Path:
    return data_dir() / "selfcheck" / f"selfcheck-{time.strftime('%Y%m%d-%H%M%S')}.json"


def _progress(outcome: Outcome) -> None:
    print(f"{outcome.status:4}  {outcome.name} ({seconds(outcome.seconds)})", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    checks = select([n.strip() for n in args.only.split(",")] if args.only else None, selfcheck.CHECKS)
    out = report_path(args.out)
    report = run_checks(checks, on_outcome=_progress, hooks=cli_hooks())
    try:
        out.write_text(dumps(report.to_json(), indent=2))
    except OSError as exc:  # the folder went away or filled up while the checks ran: still show the results
        written = f"the report could not be written to {out} ({exc.strerror or type(exc).__name__})"
    else:
        written = f"report written to {out}"
    if args.json:
        print_json(report.to_json())
    else:
        print(render(report))
        print(wrap(written))
    return 0 if report.passed else 1


def report_path(given: str | None) -> Path:
    """Where the report goes, checked before the checks run: a folder gets the default file name inside it."""
    out = Path(given).expanduser() if given else default_out()
    if out.is_dir():
        out = out / default_out().name
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "a"):
            pass
    except OSError as exc:
        raise DashboardError(f"cannot write the report to {out} ({exc.strerror or type(exc).__name__}); "
                             "give --out a writable file") from None
    return out


def render(report: Report) -> str:
    """Each check on one line (its detail cut to fit 100 columns), the full details below, then the verdict."""
    rows = [[o.name, o.status.upper(), round(o.seconds, 1), o.detail] for o in report.outcomes]
    headers = ["check", "result", "s", "detail"]
    table = format_table(headers, rows, max_width=TABLE_WIDTH, elide=["detail"])
    cut = cut_cells(headers, rows, "detail", max_width=TABLE_WIDTH, elide=["detail"])
    prose = [f"{report.outcomes[i].name}: {report.outcomes[i].detail}" for i in cut]
    if report.skipped:
        prose.append(f"skipped (they need a CUDA GPU): {', '.join(report.skipped)}")
    if not report.passed:
        prose.append(f"SOME CHECKS FAILED in {seconds(report.wall_s)}")
    else:
        prose.append(f"{report.headline} ({seconds(report.wall_s)})")
        if report.busy is not None and report.busy.notice:
            prose.append(report.busy.notice)
    return table + "\n\n" + wrap(prose)

