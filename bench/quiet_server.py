"""A timed race beside the server's own heavy work: do a large board's export and a feature build still spoil it?

Issue 31: an export of 10,000 runs held a core for over a minute beside the class's races, whose verdicts
then read "cannot tell on a machine this busy". Exports, imports and the Review classifier's feature builds
of the server now run as quiet work (core.platform.quiet_work: a child process, stopped while a timed job
holds a device). This bench fills a SQLite board with `--board` runs, then runs the CLI's default
race (1 thread against all cores without a GPU) in alternated pairs: alone, then beside the board's JSON
export and a feature build, each started from a thread of its own just before it (as two other sessions'
Download and Train would), through the product's own paths (`core.store.board.exports`, a server's
`Workbench(quiet=True).prepared`, the default settings). The build's reviews are rt-polarity when it is in
the cache, else synthetic ones of its size (10,662 short reviews, the same ~1 M characters); `--no-build`
leaves it out. With `--control`, each pair also gets a race beside the old paths: the same export and build
in threads of the server process (no child, no pause; the build not holding the CPU either, which made the
race wait for it).

    python bench/quiet_server.py [--pairs 3] [--board 10000] [--control] [--no-build] [--sizes 64,...] [--budget S]

Prints the calls per size and run (`unclear (busy)` marks a size the machine's load left uncalled), the
busy calls per run, and per size the ratio of each series' median beside the export to the same
series alone in its pair; writes bench/results/quiet_server.json. Target: no `unclear (busy)` call beside
the export that the alone run of its pair does not also make, at the sizes both runs timed (since issue 31.5
both runs time the same sizes: core.matmul.sizes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.verdicts import cell  # noqa: E402
import psutil  # noqa: E402

import numpy as np  # noqa: E402

from core.classifier.baseline import features_and_baseline  # noqa: E402
from core.classifier.datasets import is_cached, load_dataset  # noqa: E402
from core.classifier.loaders import Reviews  # noqa: E402
from core.classifier.model import ClassifierConfig  # noqa: E402
from core.classifier.training import feature_settings  # noqa: E402
from core.classifier.workbench import Workbench  # noqa: E402
from core.cli import build_parser  # noqa: E402
from core.cli.matmul import config_from_args  # noqa: E402
from core.cli.output import format_table  # noqa: E402
from core.matmul.sweep import run_sweep  # noqa: E402
from core.platform.machine_load import load_average, usable_cores  # noqa: E402
from core.results.matmul import MatmulSweep  # noqa: E402
from core.store import board  # noqa: E402
from core.store.database import open_store  # noqa: E402

RESULTS = ROOT / "bench" / "results"
CHUNK = 2_000  # runs per import: the store's default cap per import
HEAD_START_S = 1.0  # the export is under way (its child spawned and reading) when the race starts


def fill(url: str, count: int) -> list[int]:
    """A board of `count` minimal sweeps, through the store's own import (bench/board_scale.py's runs)."""
    from bench.board_scale import _runs

    store = open_store(url)
    for start in range(0, count, CHUNK):
        store.import_json(_runs(min(CHUNK, count - start), start), file="bench", session="bench")
    return [r.run_id for r in store.read_summaries().runs]


def review_set() -> Reviews:
    """rt-polarity when the cache has it, else 10,662 synthetic reviews of its length (Zipf-distributed words)."""
    if is_cached("rt-polarity"):
        return load_dataset("rt-polarity", allow_download=False)
    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(20_000)])
    zipf = 1.0 / np.arange(1, len(vocab) + 1)
    lengths = rng.integers(8, 35, 10_662)
    words = vocab[rng.choice(len(vocab), size=int(lengths.sum()), p=zipf / zipf.sum())]
    cuts = np.cumsum(lengths)[:-1]
    texts = tuple(" ".join(review) for review in np.split(words, cuts))
    return Reviews(texts, (np.arange(len(texts)) % 2).astype(np.int8), "synthetic, rt-polarity's size")


def build(reviews: Reviews, beside: str) -> dict[str, Any]:
    """The default feature build and its baseline: a server session's (quiet work), or in this thread."""
    start = time.monotonic()
    if beside == "quiet":
        Workbench(reviews=reviews, reviews_key="bench", quiet=True).prepared(ClassifierConfig())
    else:
        features_and_baseline(reviews, feature_settings(ClassifierConfig()))
    return {"build_s": time.monotonic() - start}


def race(args: argparse.Namespace, url: str | None, ids: list[int], beside: str,
         reviews: Reviews | None) -> dict[str, Any]:
    """One default race; beside 'quiet' or 'thread' an export of the board and a feature build run, started just
    before it."""
    argv = (["matmul"] + ([f"--sizes={args.sizes}"] if args.sizes else [])
            + ([f"--budget={args.budget}"] if args.budget else []))
    config = config_from_args(build_parser().parse_args(argv))
    export: dict[str, Any] = {}

    def work() -> None:
        start = time.monotonic()
        if beside == "quiet":
            data = board.exports(url, ids)[0].data()  # the product's path: quiet work from QUIET_EXPORT_RUNS up
        else:
            data = board.export_data(url, ids, "json")  # the old path: in a thread of the server
        export.update(seconds=time.monotonic() - start, bytes=len(data))

    threads = [] if beside == "alone" else [threading.Thread(target=work)]
    if reviews is not None and threads:
        threads.append(threading.Thread(target=lambda: export.update(build(reviews, beside))))
    for thread in threads:
        thread.start()
    if threads:
        time.sleep(HEAD_START_S)
    before = load_average()
    children_before = children_cpu_s()
    sweep = run_sweep(config)
    race_done = time.monotonic()
    children_during = sum(children_cpu_s().get(pid, 0.0) - cpu for pid, cpu in children_before.items())
    for thread in threads:
        thread.join()
    return {"beside": beside, "load_average_before": before, "sweep": sweep,
            "export_s": export.get("seconds"), "export_bytes": export.get("bytes"), "build_s": export.get("build_s"),
            "quiet_processes_cpu_s_during_race": children_during if beside == "quiet" else None,
            "child_processes_at_race_start": len(children_before),
            "work_after_race_s": time.monotonic() - race_done if threads else None}


def children_cpu_s() -> dict[int, float]:
    """CPU seconds each child process of this one has used so far (the quiet export's and build's processes)."""
    out = {}
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        out[child.pid] = times.user + times.system
    return out


def busy_sizes(sweep: MatmulSweep) -> list[int]:
    return sorted({v.n for v in sweep.verdicts or () if v.call == "unclear" and v.busy})


def called_sizes(sweep: MatmulSweep) -> set[int]:
    """The sizes the run has a verdict for (timed in both series; not left out by the size plan)."""
    return {v.n for v in sweep.verdicts or ()}


def ratios(beside: MatmulSweep, alone: MatmulSweep) -> dict[str, dict[int, float]]:
    """Per series and size: median beside the export / median alone."""
    alone_at = {(p.label, p.n): p.median_s for p in alone.results}
    out: dict[str, dict[int, float]] = {}
    for p in beside.results:
        base = alone_at.get((p.label, p.n))
        if base and p.median_s:
            out.setdefault(p.label, {})[p.n] = round(p.median_s / base, 3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--board", type=int, default=10_000, help="runs on the exported board (default 10,000)")
    parser.add_argument("--control", action="store_true", help="also race beside the export in a server thread")
    parser.add_argument("--sizes", help="as the CLI's --sizes (default: the CLI's default)")
    parser.add_argument("--budget", help="as the CLI's --budget (default: the CLI's default)")
    parser.add_argument("--no-build", action="store_true", help="the export alone beside the race, no feature build")
    args = parser.parse_args()
    reviews = None if args.no_build else review_set()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'board.sqlite3'}"
        start = time.monotonic()
        ids = fill(url, args.board)
        print(f"board of {len(ids)} runs filled in {time.monotonic() - start:.0f} s", flush=True)
        runs = []
        for pair in range(args.pairs):
            kinds = ["alone", "quiet"] + (["thread"] if args.control else [])
            for beside in kinds if pair % 2 == 0 else list(reversed(kinds)):
                run = race(args, url, ids, beside, reviews)
                run["pair"] = pair + 1
                runs.append(run)
                export = (f", export {run['export_s']:.0f} s ({run['export_bytes'] / 1e6:.0f} MB)"
                          if run["export_s"] else "")
                if run["build_s"]:
                    export += f", feature build {run['build_s']:.0f} s"
                if run["work_after_race_s"] is not None:
                    export += f", both done {run['work_after_race_s']:.0f} s after the race"
                if (during := run["quiet_processes_cpu_s_during_race"]) is not None:
                    export += (f"; the quiet processes ({run['child_processes_at_race_start']} at the race's start) "
                               f"used {during:.2f} s of CPU during the race")
                print(f"pair {pair + 1}, {beside}: race {run['sweep'].wall_s or 0:.1f} s, busy calls at "
                      f"{busy_sizes(run['sweep']) or 'none'}{export}", flush=True)
    sizes = sorted({n for r in runs for n in r["sweep"].settings["sizes"]})
    headers = ["n"] + [f"{r['pair']} {r['beside']}" for r in runs]
    rows: list[list[object]] = [[n] + [cell(r["sweep"], n) for r in runs] for n in sizes]
    rows.append(["others' cores (max)"] + [f"{max((p.others_cores or 0) for p in r['sweep'].results):.2f}"
                                           for r in runs])
    rows.append(["load avg before"] + [f"{r['load_average_before'] or 0:.2f}" for r in runs])
    print(format_table(headers, rows))
    pairs = []
    for pair in range(1, args.pairs + 1):
        alone = next(r for r in runs if r["pair"] == pair and r["beside"] == "alone")
        for other in (r for r in runs if r["pair"] == pair and r["beside"] != "alone"):
            both = called_sizes(alone["sweep"]) & called_sizes(other["sweep"])  # a size skipped in one is no evidence
            extra = sorted(set(busy_sizes(other["sweep"])) & both - set(busy_sizes(alone["sweep"])))
            pairs.append({"pair": pair, "beside": other["beside"], "busy_alone": busy_sizes(alone["sweep"]),
                          "busy_beside": busy_sizes(other["sweep"]), "extra_busy": extra,
                          "ratios": ratios(other["sweep"], alone["sweep"])})
    for p in pairs:
        flat = [v for series in p["ratios"].values() for v in series.values()]
        spread = f"{min(flat):.2f}-{max(flat):.2f} (median {statistics.median(flat):.2f})" if flat else "-"
        print(f"pair {p['pair']} {p['beside']}: busy calls alone {p['busy_alone'] or 'none'}, beside "
              f"{p['busy_beside'] or 'none'}; extra {p['extra_busy'] or 'none'}; median ratios beside/alone {spread}")
        for series, by_n in p["ratios"].items():
            print(f"    {series}: " + ", ".join(f"{n}: {v:.2f}" for n, v in by_n.items()))
    met = all(not p["extra_busy"] for p in pairs if p["beside"] == "quiet")
    print("target met: no busy call beside the quiet work that its alone run does not make" if met
          else "target missed: busy calls beside the quiet work that the alone run did not make")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"cores": usable_cores(), "board_runs": args.board, "feature_build": None if reviews is None else
           f"{reviews.source}: {reviews.n} reviews", "table": {"headers": headers, "rows": rows},
           "pairs": pairs, "target_met": met,
           "runs": [{k: v for k, v in r.items() if k != "sweep"} | {"sweep": r["sweep"].to_json()} for r in runs]}
    (RESULTS / "quiet_server.json").write_text(json.dumps(out, indent=1, default=str))
    print(f"wrote {RESULTS / 'quiet_server.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
