"""`python -m core colab-kit --out DIR`: the Colab notebook and this project's wheel, to upload to Colab."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.cli import HELP
from core.cli.output import print_json, wrap
from core.colab_kit import write_kit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("colab-kit", help=HELP["colab-kit"])
    p.add_argument("--out", required=True, help="the folder to write them to (made if missing)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    kit = write_kit(Path(args.out).expanduser())
    if args.json:
        print_json({"notebook": str(kit.notebook), "wheel": str(kit.wheel)})
    else:
        print(wrap([f"notebook: {kit.notebook}", f"wheel:    {kit.wheel}",
                    "On Colab: File > Upload notebook (the .ipynb), then drop the .whl into the Files panel (left) "
                    "and run the cells: the install cell finds the wheel there."]))
    return 0
