"""A full board's export: peak memory and time of the CLI's JSON and CSV export, and of the page's download.

Fills a fresh SQLite store with `--runs` (10,000) matmul sweeps as a class saves them (16 points of CPU and
GPU, 30 raw samples each: ~16 kB of JSON a run, as the issue's 158 MiB export of 10,000 runs), then measures
in a subprocess each:
- `python -m core results export --format json|csv --output FILE`: its peak RSS (getrusage of the child) and
  wall time, and the file's size;
- the Results page's Download (core.store.board.exports, what the Streamlit server runs when it is pressed)
  of every run: the peak RSS it adds to the process that builds it (the server's own memory is not counted),
  and what the file holds (the export up to the page's limit, or the line pointing to the CLI).
`--before` also measures the whole-board writer the export replaced (every run read, then the file built in
memory): the issue's 1.6 GB (JSON) and 1.0 GB (CSV), for comparison; it takes minutes.

    python bench/export_memory.py [--runs 10000] [--before]

Target (issue 30 item 7): <= 200 MiB peak in the server and in the CLI for 10,000 runs. Prints a table and
writes bench/results/export_memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SEEDS = 20  # distinct runs saved through the store; the rest are copies of their rows with new uids
SIZES = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
SAMPLES = 30

# Runs `argv` as a child and prints its peak RSS (KiB, Linux's ru_maxrss) and wall seconds.
CHILD = """
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.perf_counter() - start)
"""

# The page's download built in this process: the RSS it adds over the process's peak before it.
PAGE = """
import resource, sys, time
from core.store import board
from core.store.database import open_store
url, fmt = sys.argv[1], sys.argv[2]
ids = [run_id for run_id, _, _ in open_store(url).export_order()]
export = {e.fmt: e for e in board.exports(url, ids)}[fmt]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
data = export.data()
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(0, peak, wall, peak - base, len(data), int(data.startswith(b"The export of")))
"""

# The whole-board writers the streamed export replaced: every run read, then the file built in memory.
BEFORE = """
import resource, sys, time
from core.results import files
from core.results.csvio import csv_text
from core.store.database import open_store
from core.store.frames import tidy_frame
url, fmt = sys.argv[1], sys.argv[2]
start = time.perf_counter()
runs = sorted(open_store(url).list_runs(), key=lambda r: (r.created_at, r.run_id))
data = (files.export_text([r.record for r in runs]) if fmt == "json" else csv_text(tidy_frame(runs))).encode()
print(0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter() - start, 0, len(data), 0)
"""


def _sweep(rng: random.Random) -> Any:
    from core.results.kinds import read_result

    points = [{"device": device, "n": n, "dtype": "float32",
               "times_s": [2 * n**3 / rate * (1 + 0.05 * rng.random()) for _ in range(SAMPLES)]}
              for device, rate in (("cpu", 5e10), ("cuda:0", 5e12)) for n in SIZES]
    return read_result("matmul", {"results": points})


def fill(url: str, runs: int) -> None:
    """SEEDS runs saved as a page saves them, then their rows copied (new uids) up to `runs`."""
    from core.results.machine import read_machine
    from core.store.access import Owner
    from core.store.database import open_store

    store = open_store(url)
    rng = random.Random(0)
    machine = read_machine({"cpu": {"name": "Lab Xeon 8480C", "logical_cores": 112},
                            "gpus": [{"index": 0, "name": "NVIDIA H200", "total_memory_bytes": 150 * 2**30}]}, "m")
    for i in range(min(SEEDS, runs)):
        store.save(_sweep(rng), label=f"student {i}", owner=Owner(f"token {i}"), machine=machine)
    columns = ("kind, created_at, label, machine_label, machine_json, settings_json, versions_json, payload_json, "
               "provenance_json, owner, source, sort_at, summary_json, stored_at")
    with store._transaction() as tx:
        copy = 0
        while (held := int(tx.run("SELECT COUNT(*) FROM gvc_runs")[0][0])) < runs:
            copy += 1
            tx.run(f"INSERT INTO gvc_runs (uid, {columns}) SELECT uid || '-' || ?, {columns} FROM gvc_runs "
                   f"WHERE id <= ? ORDER BY id LIMIT ?", (copy, SEEDS, runs - held))
        tx.run("INSERT INTO gvc_run_devices (run_id, device) SELECT r.id, d.device FROM gvc_runs r JOIN gvc_runs s "
               "ON s.uid = substr(r.uid, 1, 32) JOIN gvc_run_devices d ON d.run_id = s.id WHERE r.id > ?", (SEEDS,))


def _child(argv: list[str], env: dict[str, str]) -> list[float]:
    out = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, env=env, cwd=ROOT,
                         check=True).stdout.split()
    return [float(x) for x in out]


def _script(code: str, url: str, fmt: str, env: dict[str, str]) -> list[float]:
    done = subprocess.run([sys.executable, "-c", code, url, fmt], capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    return [float(x) for x in done.stdout.split()]


def measure(runs: int, before: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "GPU_VS_CPU_DATA_DIR": f"{home}/data", "GPU_VS_CPU_CACHE_DIR": f"{home}/cache",
               "PYTHONPATH": str(ROOT)}
        env.pop("DATABASE_URL", None)
        url = f"sqlite:///{home}/board.sqlite3"
        start = time.perf_counter()
        fill(url, runs)
        print(f"filled {runs:,} runs in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        for fmt in ("json", "csv"):
            out = Path(home) / f"export.{fmt}"
            code, kib, wall = _child([sys.executable, "-m", "core", "results", "export", "--format", fmt,
                                      "--output", str(out), "--db", url], env)
            rows.append({"what": f"CLI export {fmt}", "runs": runs, "exit": int(code), "peak_mib": kib / 1024,
                         "added_mib": None, "wall_s": wall, "file_mib": out.stat().st_size / 2**20})
            out.unlink()
        for fmt in ("json", "csv"):
            _, kib, wall, added, size, refused = _script(PAGE, url, fmt, env)
            rows.append({"what": f"page download {fmt}", "runs": runs, "exit": 0, "peak_mib": kib / 1024,
                         "added_mib": added / 1024, "wall_s": wall, "file_mib": size / 2**20,
                         "points_to_cli": bool(refused)})
        for fmt in ("json", "csv") if before else ():
            _, kib, wall, _, size, _ = _script(BEFORE, url, fmt, env)
            rows.append({"what": f"before: whole-board {fmt}", "runs": runs, "exit": 0, "peak_mib": kib / 1024,
                         "added_mib": None, "wall_s": wall, "file_mib": size / 2**20})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--before", action="store_true", help="also the whole-board writers the export replaced")
    args = parser.parse_args()
    rows = measure(args.runs, args.before)
    print(f"{'what':<26} {'runs':>7} {'peak RSS':>10} {'added':>9} {'wall':>8} {'file':>10}")
    for r in rows:
        added = f"{r['added_mib']:.0f} MiB" if r["added_mib"] is not None else ""
        note = "  (the file points to the CLI)" if r.get("points_to_cli") else ""
        print(f"{r['what']:<26} {r['runs']:>7,} {r['peak_mib']:>6.0f} MiB {added:>9} {r['wall_s']:>6.1f} s "
              f"{r['file_mib']:>6.1f} MiB{note}")
    out = ROOT / "bench" / "results" / "export_memory.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
