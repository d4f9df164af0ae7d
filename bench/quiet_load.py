"""How much of the server's CPU each step of reading review data and checking an upload takes (issue 31, item 2).

Untimed work over QUIET_CPU_S of CPU is moved to quiet work (core.platform.quiet_work) when a server does it; a
step under it stays in the server, where a process of its own would cost more than the step (a spawned child's
start and imports: ~1 s of CPU on the 2-core VM). Each step is run ROUNDS times in this process and its median CPU
time (user + system, all threads) and wall time are reported; the machine may be busy, so wall times are noisy,
CPU times much less so.

    python bench/quiet_load.py [--rt /work/shared/data/rt-polaritydata] [--rounds 3]

Steps: rt-polarity from its folder (a path choice), packed into the cache (`data add`), read from its archive
(the built-in choice, once per server), its md5, an upload of the archive, of the .pos + .neg pair and of a
~5 MB CSV; the largest results file an import reads in the server (under QUIET_IMPORT_BYTES and the
import cap) checked (core.results.files.read_import) and imported.
Writes bench/results/quiet_load.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUIET_CPU_S = 0.2  # the brief's line: a step over this much CPU is heavy enough to move


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _measure(name: str, work: Callable[[], Any], rounds: int) -> dict[str, Any]:
    cpus, walls = [], []
    for _ in range(rounds):
        cpu, wall = _cpu(), time.perf_counter()
        work()
        cpus.append(_cpu() - cpu)
        walls.append(time.perf_counter() - wall)
    cpu_s = statistics.median(cpus)
    return {"step": name, "cpu_s": cpu_s, "wall_s": statistics.median(walls), "heavy": cpu_s > QUIET_CPU_S}


def _csv(rt: Path, copies: int) -> bytes:
    lines = ["text,label"]
    for _ in range(copies):
        for file, label in (("rt-polarity.pos", "pos"), ("rt-polarity.neg", "neg")):
            text = (rt / file).read_bytes().decode("cp1252")
            lines += ['"' + line.replace('"', '""') + f'",{label}' for line in text.splitlines() if line.strip()]
    return ("\n".join(lines) + "\n").encode()


def _results_file(target_bytes: int, most_runs: int) -> bytes:
    """The largest file of minimal runs an import reads in the server: under `target_bytes` and `most_runs`."""
    from bench.board_scale import _runs

    count = most_runs
    while len(data := _runs(count, 0)) >= target_bytes:
        count -= 50
    return data


def measure(rt: Path, rounds: int) -> list[dict[str, Any]]:
    from core.classifier import local_copy
    from core.classifier.datasets import archive_path, md5_of
    from core.classifier.loaders import load_archive, load_folder, load_uploads
    from core.results import files
    from core.store.board import QUIET_IMPORT_BYTES
    from core.store.database import max_import_runs, open_store

    rows = [_measure("rt-polarity: read its folder (a path choice)", lambda: load_folder(rt), rounds)]

    def add() -> None:
        archive_path("rt-polarity").unlink(missing_ok=True)
        local_copy.add_local_copy("rt-polarity", rt)

    rows.append(_measure("rt-polarity: `data add` (pack the folder, check the archive)", add, rounds))
    archive = archive_path("rt-polarity")
    rows.append(_measure("rt-polarity: read the cached archive (the built-in choice)",
                         lambda: load_archive(archive), rounds))
    rows.append(_measure("rt-polarity: md5 of the archive", lambda: md5_of(archive), rounds))
    packed = archive.read_bytes()
    rows.append(_measure(f"upload: the archive ({len(packed) / 1e6:.2f} MB)",
                         lambda: load_uploads([("rt-polaritydata.tar.gz", packed)]), rounds))
    pair = [(f, (rt / f).read_bytes()) for f in ("rt-polarity.pos", "rt-polarity.neg")]
    rows.append(_measure(f"upload: .pos + .neg ({sum(len(d) for _, d in pair) / 1e6:.2f} MB)",
                         lambda: load_uploads(pair), rounds))
    for copies in (1, 4):
        table = _csv(rt, copies)
        rows.append(_measure(f"upload: a CSV of {copies * 10662:,} reviews ({len(table) / 1e6:.2f} MB)",
                             lambda table=table: load_uploads([("reviews.csv", table)]), rounds))
    results = _results_file(QUIET_IMPORT_BYTES, max_import_runs())
    runs = len(json.loads(results)["runs"])
    rows.append(_measure(f"results file of {runs:,} runs ({len(results) / 1e6:.2f} MB): checked",
                         lambda: files.read_import(results, file="r.json", session="bench"), rounds))

    def imported() -> None:
        with tempfile.TemporaryDirectory() as folder:
            open_store(f"sqlite:///{folder}/board.db").import_json(results, file="r.json")

    rows.append(_measure(f"results file of {runs:,} runs: checked and imported", imported, rounds))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rt", type=Path, default=Path("/work/shared/data/rt-polaritydata"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        os.environ["GPU_VS_CPU_CACHE_DIR"] = cache
        rows = measure(args.rt, args.rounds)
    load = os.getloadavg()[0]
    print(f"{'step':<78} {'CPU':>8} {'wall':>8}  heavy (> {QUIET_CPU_S} s CPU)   load {load:.1f}")
    for row in rows:
        print(f"{row['step']:<78} {row['cpu_s']:>7.3f}s {row['wall_s']:>7.3f}s  {'yes' if row['heavy'] else 'no'}")
    out = ROOT / "bench" / "results" / "quiet_load.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"load_1min": load, "rounds": args.rounds, "steps": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
