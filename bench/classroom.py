"""A class pressing Run at once: K small sweeps through the device lock, against the same sweep alone.

The lock's promise is that a sweep measures the same whether or not others wait behind it, and
that the class as a whole loses little to the queue. This starts K identical small sweeps at the
same moment (a barrier), each holding the lock as the page does and then, the lock released,
rendering its result as the page (figures, table, JSON) or the CLI (table, JSON) does: CPU work
that overlaps the next job's timing. It compares:

- each job's medians with the same sweep run alone (K runs one after another, before the batch):
  the geometric mean of its per-size ratios, and its worst size (target: within 10 %);
- the batch's wall time with the sum of the alone runs' wall times (the queue's overhead);
- that no two jobs' timed regions overlapped (the lock serialized them).

Two ways a class arrives, both by default:
- `threads`: K threads of this one process, which is what several browser sessions of one
  Streamlit server are;
- `processes`: K separate Python processes, like several `python -m core matmul` users.
Two controls: `processes-teardown` lets each process exit the ordinary way, with 0.3-0.5 s of
interpreter teardown after it released the lock, while the next job is timing (`python -m core`
skips it), and `unlocked` gives each process its own lock folder, so nothing waits: what the lock
prevents. The machine may be shared: the load average is printed with the figures.

    python bench/classroom.py [--jobs 5] [--sizes 64,128,256,512] [--budget 0.25] [--threads 1] [--devices cpu,cuda]
                              [--modes threads,processes,processes-teardown,unlocked]
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.charts.matmul import gflops_figure, speedup_figure, time_figure  # noqa: E402
from core.cli.matmul import render  # noqa: E402
from core.cli.output import format_table  # noqa: E402
from core.platform.device_lock import Job  # noqa: E402
from core.platform.jobs import JobHooks  # noqa: E402
from core.platform.devices import available_devices, has_gpu  # noqa: E402
from core.platform.paths import LOCK_ENV  # noqa: E402
from core.matmul.config import MatmulOptions, SweepConfig  # noqa: E402
from core.matmul.report import results_frame  # noqa: E402
from core.matmul.sweep import run_sweep  # noqa: E402
from core.platform.units import readable  # noqa: E402
from core.results.table import human_table  # noqa: E402

TARGET = 0.10  # each job's medians within 10 % of the same sweep alone
MODES = ("threads", "processes", "processes-teardown", "unlocked")
START_TIMEOUT_S = 300.0  # spawned processes import torch before the barrier; a busy 2-core box is slow


def _medians(result) -> dict[str, float]:
    """{'cpu float32 1 thread @ 256': median seconds} for every timed point of a sweep."""
    return {f"{r.label} @ {r.n}": r.median_s for r in result.results}


def render_like_the_page(result) -> None:
    """What the Matmul race page does after the sweep has released the lock: the three figures and
    the table, serialized as Streamlit sends them, and the JSON it saves. This CPU work runs while
    the next student's sweep is timing, so the benchmark does it too."""
    frame = results_frame(result.results)
    for figure in (time_figure(frame), gflops_figure(frame), speedup_figure(frame, result.crossovers)):
        figure.to_json()
    readable(human_table(result.results)).to_json()
    json.dumps(result.to_json(), default=str)


def render_like_the_cli(result) -> None:
    """What `python -m core matmul` does after the sweep: its table and its JSON object."""
    render(result)
    json.dumps(result.to_json(), default=str)


def timed_job(config: SweepConfig, index: int, render_like=render_like_the_page) -> dict[str, Any]:
    """One student's sweep, waiting in line as the page's does; when it waited, ran, and rendered."""
    asked = time.time()
    held: list[tuple[float, Job]] = []
    result = run_sweep(config, JobHooks(on_start=lambda job: held.append((time.time(), job))))
    ended = time.time()
    started, job = held[0]
    render_like(result)
    return {"job": index, "pid": os.getpid(), "asked": asked, "started": started, "ended": ended,
            "rendered_s": time.time() - ended, "waited_s": job.waited_s, "sweep_wall_s": result.wall_s,
            "medians": _medians(result)}


def _process_worker(config: SweepConfig, index: int, lock_dir: str, barrier, queue, teardown: bool) -> None:
    """A separate Python process: its own lock folder only for the unlocked control. It ends as
    `python -m core` does (os._exit, no interpreter teardown) unless `teardown`."""
    os.environ[LOCK_ENV] = lock_dir
    try:
        barrier.wait(START_TIMEOUT_S)
        queue.put(timed_job(config, index, render_like_the_cli))
    except BaseException as exc:  # noqa: BLE001 - report any failure to the parent instead of hanging it
        queue.put({"job": index, "error": f"{type(exc).__name__}: {exc}"})
    if not teardown:
        queue.close()
        queue.join_thread()  # the result is in the pipe before the process goes
        os._exit(0)


def run_threads(config: SweepConfig, jobs: int, first: int = 0) -> tuple[float, list[dict[str, Any]]]:
    """K threads of this process released together: several browser sessions of one server."""
    barrier = threading.Barrier(jobs + 1)
    out: list[dict[str, Any]] = []

    def student(index: int) -> None:
        barrier.wait()
        try:
            out.append(timed_job(config, index))
        except Exception as exc:  # noqa: BLE001
            out.append({"job": index, "error": f"{type(exc).__name__}: {exc}"})

    threads = [threading.Thread(target=student, args=(first + i,)) for i in range(jobs)]
    for t in threads:
        t.start()
    barrier.wait()
    released = time.time()
    for t in threads:
        t.join()
    return released, sorted(out, key=lambda j: j["job"])


def run_processes(config: SweepConfig, jobs: int, lock_dirs: list[str], first: int = 0, teardown: bool = False
                  ) -> tuple[float, list[dict[str, Any]]]:
    """K spawned Python processes released together (after each has imported torch).

    A Python process that used torch spends 0.3-0.5 s of CPU in the interpreter's teardown after
    its last line, when it has released the lock; `python -m core` skips it (core/cli/entry.py).
    `teardown` lets the workers exit the ordinary way, to show what that teardown costs the next job.
    """
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(jobs + 1), ctx.Queue()
    procs = [ctx.Process(target=_process_worker, args=(config, first + i, lock_dirs[i], barrier, queue, teardown))
             for i in range(jobs)]
    for p in procs:
        p.start()
    barrier.wait(START_TIMEOUT_S)
    released = time.time()
    out = [queue.get(timeout=START_TIMEOUT_S) for _ in procs]
    for p in procs:
        p.join()
    return released, sorted(out, key=lambda j: j["job"])


def measure_alone(kind: str, config: SweepConfig, jobs: int, scratch: Path) -> dict[str, Any]:
    """The same sweep `jobs` times one after another, each started as the batch starts it (a new
    thread, or a new process): the baseline per point (median over the runs) and its own spread.

    The kind matters: on a busy machine torch's CPU threads behave differently in the main thread
    of a process and in the other threads of a server, so each batch is held against its own kind.
    """
    before, runs = _load(), []
    for i in range(jobs):
        if kind == "threads":
            runs += run_threads(config, 1, first=i)[1]
        else:
            runs += run_processes(config, 1, [str(scratch / "locks")], first=i)[1]
    failed = [r for r in runs if "error" in r]
    if failed:
        raise SystemExit(f"{kind}, alone: {failed[0]['error']}")
    keys = set.intersection(*(set(r["medians"]) for r in runs))
    baseline = {k: statistics.median(r["medians"][k] for r in runs) for k in sorted(keys)}
    for r in runs:
        r.update(compare(r, baseline))
    return {"runs": runs, "baseline": baseline, "sum_s": sum(r["ended"] - r["started"] for r in runs),
            "load": [before, _load()]}


def compare(job: dict[str, Any], baseline: dict[str, float]) -> dict[str, Any]:
    """A job's medians against the baseline: geometric-mean ratio, worst point, points within TARGET."""
    ratios = {k: job["medians"][k] / baseline[k] for k in baseline if k in job["medians"] and baseline[k] > 0}
    logs = [math.log(r) for r in ratios.values()]
    worst = max(ratios, key=lambda k: abs(math.log(ratios[k])))
    return {"ratio": math.exp(statistics.fmean(logs)), "worst_point": worst, "worst_ratio": ratios[worst],
            "within": sum(abs(r - 1) <= TARGET for r in ratios.values()), "points": len(ratios),
            "ratios": ratios}


def overlaps(jobs: list[dict[str, Any]]) -> int:
    """How many pairs of jobs held the devices at the same time (0 when the lock serialized them)."""
    spans = sorted((j["started"], j["ended"]) for j in jobs)
    return sum(1 for (_, end), (start, _) in zip(spans, spans[1:]) if start < end)


def summarize(mode: str, released: float, jobs: list[dict[str, Any]], baseline: dict[str, float],
              alone_sum_s: float, load: tuple[float, float]) -> dict[str, Any]:
    failed = [j for j in jobs if "error" in j]
    if failed:
        raise SystemExit(f"{mode}: {len(failed)} job(s) failed: {failed[0]['error']}")
    for j in jobs:
        j.update(compare(j, baseline))
    total = max(j["ended"] for j in jobs) - released
    return {"mode": mode, "jobs": jobs, "total_wall_s": total, "alone_sum_s": alone_sum_s,
            "overhead": total / alone_sum_s - 1, "overlapping_pairs": overlaps(jobs),
            "worst_job_ratio": max((j["ratio"] for j in jobs), key=lambda r: abs(r - 1)),
            "load_before": load[0], "load_after": load[1]}


def _load() -> float:
    return os.getloadavg()[0]


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(","))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5, help="K: students pressing Run at once")
    parser.add_argument("--sizes", type=_ints, default=(64, 128, 256, 512), help="the small sweep's sizes")
    parser.add_argument("--budget", type=float, default=0.25, help="seconds per size and series")
    parser.add_argument("--threads", type=_ints, default=(1,),
                        help="CPU thread counts (series). Default 1: on a small shared CPU a 2-thread product "
                             "flips between its normal time and a ~16 ms stall, lock or no lock")
    parser.add_argument("--devices", default=None,
                        help="comma-separated (default: cpu and the first GPU, if any, as the page)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of: {', '.join(MODES)}")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",")]
    if set(modes) - set(MODES) or args.jobs < 2:
        parser.error(f"--modes takes {', '.join(MODES)}; --jobs at least 2")

    gpu = available_devices()[:1] if has_gpu() else []
    devices = tuple(args.devices.split(",")) if args.devices else ("cpu", *gpu)
    config = SweepConfig(sizes=args.sizes, devices=devices, threads=tuple(dict.fromkeys(args.threads)),
                         options=MatmulOptions(budget_s=args.budget))
    with tempfile.TemporaryDirectory(prefix="classroom-bench-") as tmp:
        return run_bench(args, modes, config, devices, Path(tmp))


def run_bench(args: argparse.Namespace, modes: list[str], config: SweepConfig, devices: tuple[str, ...],
              scratch: Path) -> int:
    """Every phase, the tables and the JSON file; `scratch` holds the lock folders."""
    os.environ[LOCK_ENV] = str(scratch / "locks")  # a lock folder of its own: no real user waits on it
    print(f"K = {args.jobs} sweeps of n = {list(config.sizes)} on {', '.join(devices)}, threads "
          f"{list(config.threads)}, {config.options.budget_s:g} s per size and series; {os.cpu_count()} logical cores",
          file=sys.stderr)

    run_sweep(config)  # warm-up: the first sweep of this process pays for torch's lazy setup
    alone: dict[str, dict[str, Any]] = {}
    phases: list[dict[str, Any]] = []
    for mode in modes:
        kind = "threads" if mode == "threads" else "processes"
        if kind not in alone:
            alone[kind] = measure_alone(kind, config, args.jobs, scratch)
        base = alone[kind]
        before = _load()
        if mode == "threads":
            released, jobs = run_threads(config, args.jobs)
        else:
            dirs = [str(scratch / ("locks" if mode != "unlocked" else f"own-locks-{i}")) for i in range(args.jobs)]
            released, jobs = run_processes(config, args.jobs, dirs, teardown=mode == "processes-teardown")
        phases.append(summarize(mode, released, jobs, base["baseline"], base["sum_s"], (before, _load())))

    rows = []
    for kind, base in alone.items():
        rows += [[f"{kind}, alone", a["job"], 0.0, a["ended"] - a["started"], a["rendered_s"], a["ratio"],
                  f"{a['worst_ratio']:.3f} at {a['worst_point']}", f"{a['within']}/{a['points']}"]
                 for a in base["runs"]]
    for phase in phases:
        rows += [[f"{phase['mode']}, together", j["job"], j["waited_s"], j["ended"] - j["started"], j["rendered_s"],
                  j["ratio"],
                  f"{j['worst_ratio']:.3f} at {j['worst_point']}", f"{j['within']}/{j['points']}"]
                 for j in phase["jobs"]]
    print(format_table(["run", "job", "waited s", "held s", "render s", "median / alone", "worst point", "within 10%"],
                       rows))
    print()
    summary = [[f"{kind}, one after another", base["sum_s"], None, None, None,
                f"{base['load'][0]:.2f} → {base['load'][1]:.2f}"] for kind, base in alone.items()]
    summary += [[f"{p['mode']}, together", p["total_wall_s"], p["overhead"] * 100, p["overlapping_pairs"],
                 p["worst_job_ratio"], f"{p['load_before']:.2f} → {p['load_after']:.2f}"] for p in phases]
    print(format_table(["batch of K", "wall s", "vs sum alone %", "overlaps", "worst job ratio", "load avg (1 min)"],
                       summary))
    for p in phases:
        if p["mode"] != "unlocked":
            ok = abs(p["worst_job_ratio"] - 1) <= TARGET and p["overlapping_pairs"] == 0
            print(f"{p['mode']}: every job within {TARGET:.0%} of alone and serialized: {'yes' if ok else 'NO'}")

    out = ROOT / "bench" / "results" / f"classroom-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "machine": platform.node(), "cores": os.cpu_count(), "python": platform.python_version(),
        "config": config.to_dict(), "jobs": args.jobs, "target": TARGET, "alone": alone, "phases": phases,
    }, indent=2))
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
