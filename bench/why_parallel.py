"""How long the 'why parallel' page takes with its default settings, section by section.

The page promises about 15 s for all five sections on a 2-core CPU. This runs exactly what its
Run buttons run with the settings untouched (every section of `core.parallel.registry`, each
with its default config), prints a table of wall times and the figures each section measured,
and writes everything to bench/results/ as JSON.

    python bench/why_parallel.py [--budget S] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.cli.output import format_table  # noqa: E402
from core.parallel import registry  # noqa: E402
from core.parallel.machine import load_average, pick_gpu, usable_cores  # noqa: E402
from core.parallel.section import BUDGET, SECTION_BUDGET_S  # noqa: E402

PAGE_TARGET_S = 15.0  # the "whole page under about 15 s on a 2-core CPU"


def run_page(budget_s: float) -> dict:
    """Every section once, in page order, as the page's Run buttons would with default settings."""
    load = load_average()
    sections = {s.key: s.run_summarized(s.config({BUDGET.name: budget_s})) for s in registry.SECTIONS}
    return {"load_before": load, "total_s": sum(s["wall_s"] for s in sections.values()), "sections": sections}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=SECTION_BUDGET_S, help="seconds per timed section")
    parser.add_argument("--repeat", type=int, default=1, help="run the whole page this many times")
    args = parser.parse_args(argv)

    runs = [run_page(args.budget) for _ in range(args.repeat)]
    rows = [[s.title] + [run["sections"][s.key]["wall_s"] for run in runs] for s in registry.SECTIONS]
    rows.append(["whole page"] + [run["total_s"] for run in runs])
    rows.append(["load average before"] + [run["load_before"] for run in runs])
    print(format_table(["section"] + [f"run {i + 1} (s)" for i in range(len(runs))], rows))
    worst = max(run["total_s"] for run in runs)
    print(f"\nslowest whole page {worst:.1f} s; target about {PAGE_TARGET_S:.0f} s: "
          f"{'within' if worst <= PAGE_TARGET_S else 'OVER'}")
    for s in registry.SECTIONS:
        print(f"\n{s.title} (last run)\n{runs[-1]['sections'][s.key]['summary']}")

    out = ROOT / "bench" / "results" / f"why_parallel-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": platform.node(), "gpu": pick_gpu(), "cores": usable_cores(),
                               "budget_s": args.budget, "runs": runs}, indent=2))
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
