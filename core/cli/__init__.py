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


# Each subcommand's help line, here rather than in its module so that listing them imports no module;
# each module's `register` passes its own line from here.
HELP = {
    "devices": "what CPU, RAM and GPUs this machine has",
    "matmul": "time C = A @ B across sizes on the CPU and GPU; find the crossover",
    "roofline": "measure each device's roofs, place every matmul on them, predict the crossover",
    "data": "download the built-in review data sets, or add a local copy",
    "train": "train the review classifier and report loss, accuracy and seconds per epoch",
    "why-parallel": ("marbles (threads, then processes), a chain of tiny steps, the timing bug, the first call, "
                     "location"),
    "results": "list, export, import or delete saved runs",
    "selfcheck": "check that timings here are right: CPU parts, and the GPU ones with CUDA",
    "colab-kit": "write colab.ipynb and this project's wheel (built offline) to a folder",
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


def listing_parser() -> argparse.ArgumentParser:
    """The parser `python -m core --help` (or no subcommand, or a typo) needs: each subcommand's name and help line
    from HELP, none of their modules, so the help shows without importing torch (bench/cli_help.py)."""
    parser = _Parser(prog="python -m core", description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in SUBCOMMANDS:
        sub.add_parser(name, help=HELP[name])
    return parser


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
        chosen = chosen_command(words)
        args = (build_parser(chosen) if chosen else listing_parser()).parse_args(words)
        return int(args.handler(args) or 0)
    except DashboardError as exc:
        from core.plain_text import message_plain  # here: plain_text loads pandas, which `devices` never needs

        print(f"error: {message_plain(exc)}", file=sys.stderr)  # a page shows its `code`; a terminal, plain text
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
