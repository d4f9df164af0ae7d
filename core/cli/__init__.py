"""`python -m core ...`: the dashboard's work without a browser, for GPU servers and scripts.

Each subcommand lives in its own module with `register(subparsers)`; its handler takes the
parsed args and returns an exit status. Human tables by default, one JSON object with --json.
Errors a user can cause exit 2 with a one-line message on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from core.cli import data, devices, matmul, results, selfcheck, train, why_parallel
from core.errors import DashboardError

SUBCOMMANDS = [devices, matmul, data, train, why_parallel, results, selfcheck]


class _Parser(argparse.ArgumentParser):
    """argparse prints the whole usage block on a bad flag; we want one line and status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise DashboardError(f"{message} (try: {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m core", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in SUBCOMMANDS:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return int(args.handler(args) or 0)
    except DashboardError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
