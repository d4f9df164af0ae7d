"""How long the 'why parallel' page takes with its default settings, section by section.

The page promises about 15 s for all five sections on a 2-core CPU. This runs exactly what its
Run buttons run with the settings untouched (`section_runners()`), prints a table of wall times
and the figures each section measured, and writes everything to bench/results/ as JSON.

    python bench/why_parallel.py [--budget S] [--repeat N]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.parallel import demos  # noqa: E402
from core.cli.output import format_table  # noqa: E402
from core.cli.why_parallel import SUMMARIES  # noqa: E402
from core.parallel.text import SECTIONS  # noqa: E402

PAGE_TARGET_S = 15.0  # the "whole page under about 15 s on a 2-core CPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=demos.SECTION_BUDGET_S, help="seconds per timed section")
    parser.add_argument("--repeat", type=int, default=1, help="run the whole page this many times")
    args = parser.parse_args()

    runs = []
    for _ in range(args.repeat):
        runners = demos.section_runners(args.budget)
        sections, load = {}, demos.load_average()
        for key, runner in runners.items():
            start = time.perf_counter()
            result = runner(demos.JobHooks())
            sections[key] = {"wall_s": time.perf_counter() - start, "summary": SUMMARIES[key](result),
                             "result": dataclasses.asdict(result)}
        runs.append({"load_before": load, "total_s": sum(s["wall_s"] for s in sections.values()),
                     "sections": sections})

    rows = [[SECTIONS[key]] + [run["sections"][key]["wall_s"] for run in runs] for key in SECTIONS]
    rows.append(["whole page"] + [run["total_s"] for run in runs])
    rows.append(["load average before"] + [run["load_before"] for run in runs])
    print(format_table(["section"] + [f"run {i + 1} (s)" for i in range(len(runs))], rows))
    worst = max(run["total_s"] for run in runs)
    print(f"\nslowest whole page {worst:.1f} s; target about {PAGE_TARGET_S:.0f} s: "
          f"{'within' if worst <= PAGE_TARGET_S else 'OVER'}")
    for key in SECTIONS:
        print(f"\n{SECTIONS[key]} (last run)\n{runs[-1]['sections'][key]['summary']}")

    out = ROOT / "bench" / "results" / f"why_parallel-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": platform.node(), "gpu": demos.pick_gpu(), "cores": demos.usable_cores(),
                               "budget_s": args.budget, "runs": runs}, indent=2))
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
