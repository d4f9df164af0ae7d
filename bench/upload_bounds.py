"""Review classifier uploads built to make the parser build a huge table: refusal time and memory.

Each case goes through `core.classifier.loaders.load_upload`, the path a page upload takes. For each:
wall seconds (untraced), the peak of Python's traced allocations (tracemalloc, a second run) and the RSS growth,
once alone and once as two tabs at once (two threads, as the server runs two sessions).

    python bench/upload_bounds.py [--cases NAME,...]

Targets (issue 21, item 4): the 1,000,000-column file and the 100 MB cases refused in <= 1 s with
<= 50 MB of memory growth, two tabs at once likewise. Issue 30, item 2: a .tar.gz of a million (and two
million) empty members refused in <= 2 s with <= 50 MiB (two tabs: read one at a time, by the archive lock).
The valid 100 MB table is real work (read under the one-parse-at-a-time lock) and is listed for its cost, not
refused. Each case runs in a fresh process, so one case's memory never shows in another's RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MB_100 = 100 * 2**20


def _cases() -> dict[str, Any]:
    """million-columns: the 9.9 MB file of the hostile pass; first-line: 100 MB of one header line;
    second-line: a short header, then one 100 MB line; wide-rows: 100 MB of rows of 1,000 fields under a
    two-column header; wide-rows-later: the same after 100 KB of good rows (past the rows sampled before
    parsing); valid-table: 100 MB of two-column reviews (read, not refused)."""
    row = b"a," * 999 + b"1\n"
    good = b"text,label\n" + b"fine review,1\nbad review,0\n" * 5000
    review = b"\"this movie was fine, really; " + b"words " * 30 + b"\",1\n\"dull\",0\n"
    return {
        "million-columns": lambda: b"col0000," * 999_999 + b"col0000\n" + b"1," * 999_999 + b"1\n",
        "first-line": lambda: b"c," * (MB_100 // 2),
        "second-line": lambda: b"text,label\n" + b"x," * (MB_100 // 2) + b"1\n",
        "wide-rows": lambda: b"text,label\n" + row * (MB_100 // len(row)),
        "wide-rows-later": lambda: good + row * ((MB_100 - len(good)) // len(row)),
        "valid-table": lambda: b"text,label\n" + review * (MB_100 // len(review)),
        "archive-million-empty": lambda: _empty_members_gz(1_048_576),
        "archive-2m-empty": lambda: _empty_members_gz(2_097_152),
    }


def _empty_members_gz(count: int) -> bytes:
    """The hostile pass's .tar.gz of `count` empty members (2.3 MB for a million; issue 30, item 2)."""
    import tarfile
    import zlib

    header = tarfile.TarInfo("bomb/x.txt").tobuf(format=tarfile.USTAR_FORMAT)
    packer = zlib.compressobj(6, wbits=31)
    parts = [packer.compress(header * 8192) for _ in range(count // 8192)]
    return b"".join([*parts, packer.compress(b"\0" * 1024), packer.flush()])


def _one(name: str, tabs: int) -> dict[str, Any]:
    import psutil

    from core.classifier import loaders
    from core.errors import DashboardError

    loaders.load_upload(b"text,label\ngood,1\nbad,0\nfine,1\ndull,0\n", "warm.csv")  # the parser's lazy imports,
    data = _cases()[name]()  # done once by a server's first upload
    proc = psutil.Process()
    rss_before = proc.memory_info().rss
    outcomes: list[str] = []

    def upload() -> None:
        try:
            filename = "big.tar.gz" if name.startswith("archive") else "big.csv"
            outcomes.append(f"read {loaders.load_upload(data, filename).n} reviews")
        except DashboardError as exc:
            outcomes.append("refused: " + str(exc)[:100])

    def tabs_at_once() -> float:
        started = time.perf_counter()
        threads = [threading.Thread(target=upload) for _ in range(tabs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.perf_counter() - started

    elapsed = tabs_at_once()  # timed untraced: tracemalloc slows a Python loop (tar_scan's) several times
    tracemalloc.start()
    tabs_at_once()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"case": name, "tabs": tabs, "mb": round(len(data) / 2**20, 1), "seconds": round(elapsed, 2),
            "traced_peak_mib": round(peak / 2**20, 1),
            "rss_growth_mib": round((proc.memory_info().rss - rss_before) / 2**20, 1),
            "outcome": outcomes[0], "load_average": [round(x, 2) for x in os.getloadavg()]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(_cases()), help="comma-separated case names")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: "name|tabs"
    args = parser.parse_args()
    if args.one:
        name, tabs = args.one.rsplit("|", 1)
        print(json.dumps(_one(name, int(tabs))))
        return 0
    rows = []
    for name in args.cases.split(","):
        for tabs in (1, 2):
            out = subprocess.run([sys.executable, __file__, "--one", f"{name}|{tabs}"], capture_output=True, text=True,
                                 check=True, timeout=900)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            row = rows[-1]
            print(f"{row['case']:16} tabs {tabs}  {row['seconds']:6.2f} s  traced {row['traced_peak_mib']:7.1f} MiB  "
                  f"RSS +{row['rss_growth_mib']:7.1f} MiB  {row['outcome'][:60]}", flush=True)
    (ROOT / "bench" / "results" / "upload_bounds.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
