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
Then a Class board of BOARD_RUNS full sweeps: its first read, a refresh with nothing new, and the reread of the
newest MAX_BOARD_RUNS after a delete (which every open board does). Writes bench/results/quiet_load.json.
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

QUIET_CPU_S = 0.2  # a step over this much CPU is heavy enough to move
OLD_IMPORT_LINE_BYTES = 2_000_000  # imports went quiet from this size before this bench (core.store.board)
BOARD_RUNS = 10_000  # the Class board's reread is measured on a store of this many full sweeps


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


def _imdb_like(rt: Path, members: int) -> bytes:
    """An archive in aclImdb's layout, one review of eight rt-polarity snippets per file."""
    import io
    import tarfile

    lines = [line for name in ("rt-polarity.pos", "rt-polarity.neg")
             for line in (rt / name).read_bytes().splitlines() if line.strip()]
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for i in range(members):
            data = b" ".join(lines[(i * 7 + j) % len(lines)] for j in range(8))
            info = tarfile.TarInfo(f"aclImdb/train/{'pos' if i % 2 else 'neg'}/{i}_7.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _results_file(target_bytes: int, most_runs: int) -> bytes:
    """The largest file of minimal runs an import reads in the server: under `target_bytes` and `most_runs`."""
    from bench.board_scale import _runs

    count = most_runs
    while len(data := _runs(count, 0)) >= target_bytes:
        count -= 50
    return data


def measure(rt: Path, rounds: int) -> list[dict[str, Any]]:
    from core.classifier import local_copy
    from core.classifier.browser_paths import read_cost_s
    from core.classifier.datasets import archive_path, md5_of
    from core.classifier.loaders import load_archive, load_folder, load_uploads
    from core.results import files
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
    for copies in (1, 4, 16):
        table = _csv(rt, copies)
        rows.append(_measure(f"upload: a CSV of {copies * 10662:,} reviews ({len(table) / 1e6:.2f} MB)",
                             lambda table=table: load_uploads([("reviews.csv", table)]), rounds))
        rows[-1]["estimate_s"] = read_cost_s(True, "", [("reviews.csv", table)])
    big = _imdb_like(rt, 20_000)
    rows.append(_measure(f"upload: an aclImdb-like archive of 20,000 reviews ({len(big) / 1e6:.2f} MB)",
                         lambda: load_uploads([("reviews.tar.gz", big)]), rounds))
    rows[-1]["estimate_s"] = read_cost_s(True, "", [("reviews.tar.gz", big)])
    results = _results_file(OLD_IMPORT_LINE_BYTES, max_import_runs())
    from core.store.board import import_cost_s

    runs = len(json.loads(results)["runs"])
    rows.append(_measure(f"results file of {runs:,} runs ({len(results) / 1e6:.2f} MB): checked",
                         lambda: files.read_import(results, file="r.json", session="bench"), rounds))

    def imported() -> None:
        with tempfile.TemporaryDirectory() as folder:
            open_store(f"sqlite:///{folder}/board.db").import_json(results, file="r.json")

    rows.append(_measure(f"results file of {runs:,} runs: checked and imported", imported, rounds))
    rows[-1]["estimate_s"] = import_cost_s(results)
    return rows + _board(rounds)


def _board(rounds: int) -> list[dict[str, Any]]:
    """The Class board's first read, its refresh when nothing changed, and its reread after a delete."""
    from bench.export_memory import fill
    from core.store import class_board
    from core.store.database import open_store

    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/board.db"
        fill(url, BOARD_RUNS)
        store = open_store(url)
        quiet = lambda: False  # noqa: E731 - measured as if no timed job ran
        rows = [_measure(f"Class board of {BOARD_RUNS:,} sweeps: first read",
                         lambda: class_board.refresh(store, None, busy=quiet), rounds)]
        board = class_board.refresh(store, None, busy=quiet)
        rows.append(_measure("Class board: a refresh, nothing changed",
                             lambda: class_board.refresh(store, board, busy=quiet), rounds))
        boards = []

        def delete() -> None:  # a board read, then the newest run goes (a student's delete of their latest run)
            boards.append(class_board.refresh(store, None, busy=quiet))
            top = int(store.read_summaries(limit=1).runs[0].run_id)
            with store._transaction() as tx:
                tx.run("DELETE FROM gvc_run_devices WHERE run_id = ?", (top,))
                tx.run("DELETE FROM gvc_runs WHERE id = ?", (top,))

        def reread() -> None:
            class_board.refresh(store, boards.pop(), busy=quiet)

        for _ in range(rounds):
            delete()
        rows.append(_measure("Class board: the reread after a delete (each open board)", reread, rounds))
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
    print(f"{'step':<78} {'CPU':>7} {'wall':>7}  heavy (> {QUIET_CPU_S} s)  the server's estimate   load {load:.1f}")
    for row in rows:
        guess = f"{row['estimate_s']:.3f}s" if "estimate_s" in row else ""
        print(f"{row['step']:<78} {row['cpu_s']:>6.3f}s {row['wall_s']:>6.3f}s  {'yes' if row['heavy'] else 'no':<16} "
              f"{guess}")
    out = ROOT / "bench" / "results" / "quiet_load.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"load_1min": load, "rounds": args.rounds, "steps": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
