"""`python -m core ...`: the dashboard's work without a browser, for GPU servers and scripts.

Each subcommand lives in its own module with `register(subparsers)`; its handler takes the
parsed args and returns an exit status. Human tables by default, one JSON object with --json.
Errors a user can cause exit 2 with a one-line message on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from core.errors import DashboardError

# Subcommand name -> its module under core.cli, in the order `--help` lists them.
SUBCOMMANDS = {
    "devices": "devices",
    "matmul": "matmul",
    "roofline": "roofline",
    "data": "data",
    "train": "train",
    "why-parallel": "why_parallel",
    "results": "results",
    "selfcheck": "selfcheck",
    "colab-kit": "colab_kit",
}


class _Parser(argparse.ArgumentParser):
    """argparse prints the whole usage block on a bad flag; we want one line and status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise DashboardError(f"{message} (try: {self.prog} --help)")


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line, if it is one we know.

    The top-level parser has no options of its own besides --help, so the first word that is
    not an option is the subcommand; anything else (--help, a typo, nothing) gets None.
    """
    for word in argv:
        if not word.startswith("-"):
            return word if word in SUBCOMMANDS else None
    return None


def _modules(names: Sequence[str]) -> list[ModuleType]:
    return [importlib.import_module(f"core.cli.{SUBCOMMANDS[name]}") for name in names]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser, with every subcommand, or with `only` that one.

    Each subcommand's module imports what it needs (scikit-learn for train, the store for
    results, ...), which together take seconds; building just the chosen one keeps
    `python -m core devices` about as quick as `import torch` (bench/cli_startup.py).
    """
    parser = _Parser(prog="python -m core", description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in _modules([only] if only else list(SUBCOMMANDS)):
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser(chosen_command(words)).parse_args(words)
        return int(args.handler(args) or 0)
    except DashboardError as exc:
        from core.plain_text import message_plain  # here: plain_text loads pandas, which `devices` never needs

        print(f"error: {message_plain(exc)}", file=sys.stderr)  # a page shows its `code`; a terminal, plain text
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
