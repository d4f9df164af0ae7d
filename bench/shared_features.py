"""A class pressing Train on the same reviews: feature sets built per session against one shared set.

Each of N sessions (a Review classifier Workbench, as the page keeps one per browser) loads
rt-polarity and prepares the default preset's features and LogisticRegression baseline, all at
once from N threads, as a class pressing Train together does. Twice, each in a fresh child process
so its memory is its own: without the server's SharedBuilds (every session builds and keeps its
own) and with it (core.classifier.shared_builds). Reported: builds, wall seconds until every
session has its features, the child's CPU seconds, and its RSS growth while the sessions hold them.
The sessions stay open (their features kept) when RSS is read, as open tabs keep them.

    python bench/shared_features.py [--data PATH] [--sessions 10,20]

Prints a table and writes bench/results/shared_features.json. rt-polarity is read from
../shared/data/rt-polaritydata (or --data); without it the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from core.cli.output import format_table  # noqa: E402

RT_POLARITY = ROOT.parent / "shared" / "data" / "rt-polaritydata"
RESULTS = ROOT / "bench" / "results"


def child(data: Path, sessions: int, shared: bool) -> dict:
    """One measurement, in this process: N sessions prepare the same features from N threads."""
    from core.classifier.model import ClassifierConfig
    from core.classifier.shared_builds import SharedBuilds
    from core.classifier.workbench import PATH, DataChoice, Workbench

    os.environ["GPU_VS_CPU_DATA_ROOTS"] = str(data)
    me = psutil.Process()
    config = ClassifierConfig(device="cpu")
    store = SharedBuilds() if shared else None
    benches = [Workbench(shared_features=store) for _ in range(sessions)]
    for bench in benches:  # reading the files is not what is compared: every session reads its own copy
        bench.load(DataChoice(PATH, path=str(data)))
    rss0, cpu0, t0 = me.memory_info().rss, sum(me.cpu_times()[:2]), time.perf_counter()
    threads = [threading.Thread(target=bench.prepared, args=(config,)) for bench in benches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    builds = store.builds if store is not None else len({id(b.prep) for b in benches})
    return {"sessions": sessions, "shared": shared, "builds": builds, "wall_s": wall,
            "cpu_s": sum(me.cpu_times()[:2]) - cpu0, "rss_growth_mib": (me.memory_info().rss - rss0) / 2**20,
            "all_prepared": all(b.prep is not None for b in benches)}


def measure(data: Path, sessions: int, shared: bool) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(sessions), "--data", str(data)]
                         + (["--shared"] if shared else []), capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=RT_POLARITY)
    parser.add_argument("--sessions", default="10,20", help="comma-separated session counts (default 10,20)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--shared", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.data, args.child, args.shared)))
        return 0
    if not (args.data / "rt-polarity.pos").exists():
        print(f"rt-polarity not found at {args.data}; nothing to measure")
        return 0
    report: dict = {"load_average": os.getloadavg(), "cpu_count": os.cpu_count(), "rows": []}
    for n in (int(s) for s in args.sessions.split(",")):
        for shared in (False, True):
            report["rows"].append(measure(args.data, n, shared))
    print(f"load average at start {report['load_average'][0]:.2f} ({report['cpu_count']} cores, may be shared)")
    print(format_table(["sessions", "features", "builds", "wall s", "CPU s", "RSS growth MiB"],
                       [[r["sessions"], "shared" if r["shared"] else "per session", r["builds"], r["wall_s"],
                         r["cpu_s"], r["rss_growth_mib"]] for r in report["rows"]]))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "shared_features.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
