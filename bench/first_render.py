"""A fresh server's first page: how long the first student waits, for one or more checkouts taking turns.

For each checkout (`--roots`, default this one) and round, three fresh servers (`streamlit run app.py`, the
websocket client of bench/classroom_server.py) on one SQLite store of 200 saved sweeps: Start here opened first,
then Results 3 s later (the user reading the first page, while app.py's warm-up imports Results' modules);
Results opened first; the Matmul race opened first. The checkouts take turns, round by round, so a change of load
hits all alike. Prints one JSON line per checkout (median and every run) and writes them to
bench/results/first_render.json.

    python bench/first_render.py [--roots CHECKOUT,CHECKOUT,...] [--rounds 3]

Issue 29 compared 58ea9e3 (app.py importing core.results and core.store whole, every page waiting for the
warm-up), this tree, and this tree with app.py's `warm_results()` removed (`git archive` copies of each).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASURES = ("home_first", "results_after_home", "results_first", "matmul_first")

ONE_ROUND = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from bench.classroom_server import PAGES, Student, _free_port, _start_server

def times(first, then, env):
    port = _free_port(); server = _start_server(port, env)
    try:
        student = Student(f"ws://127.0.0.1:{port}/_stcore/stream")
        began = time.perf_counter(); student.open(PAGES[first]); a = time.perf_counter() - began
        b = None
        if then:
            time.sleep(3.0); began = time.perf_counter(); student.open(PAGES[then]); b = time.perf_counter() - began
        student.close()
        return a, b
    finally:
        server.terminate(); server.wait(30)

import os
env = dict(os.environ)
home, after = times("home", "results", env)
print(json.dumps({"home_first": home, "results_after_home": after, "results_first": times("results", None, env)[0],
                  "matmul_first": times("matmul", None, env)[0]}))
"""


def _fill(root: Path, runs: int) -> None:
    """`runs` one-point sweeps through the checkout's own import (bench/board_scale.py's)."""
    subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(root)!r}); "
                    f"from bench.board_scale import _fill; _fill({runs})"], check=True, cwd=root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", default=str(ROOT), help="checkouts to compare, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=200, help="saved sweeps on the board")
    args = parser.parse_args()
    roots = [Path(r).resolve() for r in args.roots.split(",")]
    seen: dict[Path, dict[str, list[float]]] = {root: {m: [] for m in MEASURES} for root in roots}
    with tempfile.TemporaryDirectory() as home:
        os.environ.update({"GPU_VS_CPU_CACHE_DIR": f"{home}/cache", "GPU_VS_CPU_DATA_DIR": f"{home}/data",
                           "GPU_VS_CPU_LOCK_DIR": f"{home}/locks"})
        os.environ.pop("DATABASE_URL", None)
        _fill(roots[0], args.runs)
        for _ in range(args.rounds):
            for root in roots:
                out = subprocess.run([sys.executable, "-c", ONE_ROUND, str(root)], cwd=root, check=True,
                                     capture_output=True, text=True).stdout
                for measure, value in json.loads(out.strip().splitlines()[-1]).items():
                    seen[root][measure].append(round(value, 2))
    rows = [{"root": str(root), **{m: {"median_s": statistics.median(v), "runs": v} for m, v in seen[root].items()}}
            for root in roots]
    for row in rows:
        print(json.dumps(row))
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "first_render.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
