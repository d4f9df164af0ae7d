"""`python -m core matmul --ranks K` and `--distributed`: the Matmul race on every device of a torchrun job.

`--ranks K` starts K ranks on this machine itself (core.matmul.rank_launch); `--distributed` is what
each rank runs under the user's own torchrun, on one machine or many:

    torchrun --nnodes N --nproc-per-node G --rdzv-backend c10d --rdzv-endpoint HOST:PORT \\
        -m core matmul --distributed --json

Every rank measures; rank 0 alone prints (a table, or one JSON object with --json) and saves (--save).
"""

from __future__ import annotations

import argparse
import sys
import time

from core.cli.output import TABLE_WIDTH, format_table, print_json, wrap
from core.cli.results import save_if_requested
from core.cli.waiting import cli_hooks
from core.errors import DashboardError
from core.matmul.rank_worker import DEFAULT_SIZES, RanksConfig
from core.platform.jobs import Progress
from core.platform.torchrun import DEFAULT_TIMEOUT_S
from core.platform.units import number, seconds
from core.results.cluster import NAMED, NONE, ClusterRun


def register_flags(p: argparse.ArgumentParser) -> None:
    """The matmul subcommand's flags for a run on every rank."""
    p.add_argument("--ranks", type=int, metavar="K", help="time the sweep on K torchrun ranks of this machine "
                   "(one per GPU, else CPU ranks sharing the cores), all at once and then each alone")
    p.add_argument("--distributed", action="store_true", help="this process is one rank of your own torchrun job "
                   "(many machines: README 'Every device at once'); rank 0 prints and saves")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"with --ranks/--distributed: a rank silent this long has hung (default {DEFAULT_TIMEOUT_S:g})")


def _whole_numbers(text: str, what: str, example: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise DashboardError(f"{what}s {text[:40]!r} are not whole numbers; give e.g. {example}") from None


def _budget(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise DashboardError(f"budget {text[:40]!r} is not a number of seconds; give e.g. --budget 0.5") from None


def config_from_args(args: argparse.Namespace) -> RanksConfig:
    sizes = _whole_numbers(args.sizes, "size", "--sizes 256,512") if args.sizes else DEFAULT_SIZES
    threads = _whole_numbers(args.threads, "thread count", "--threads 2") if args.threads else None
    if threads is not None and len(threads) != 1:
        raise DashboardError("--threads takes one number with --ranks/--distributed: each CPU rank's threads")
    device = (args.devices or "auto").strip()
    if "," in device:
        raise DashboardError("--devices takes one of auto, cpu or cuda with --ranks/--distributed: "
                             "each rank gets its own cuda:LOCAL_RANK")
    if "," in args.dtype:
        raise DashboardError("--dtype takes one dtype with --ranks/--distributed")
    if not 0 < args.timeout <= 3600:
        raise DashboardError(f"--timeout must be more than 0 and at most 3600 s, not {args.timeout:g}")
    settings = {"sizes": list(sizes), "budget": args.budget, "dtype": args.dtype, "devices": device,
                "threads": threads[0] if threads else None, "ranks": args.ranks, "distributed": args.distributed}
    return RanksConfig(sizes=tuple(sorted(set(sizes))), budget_s=_budget(args.budget), dtype=args.dtype.strip(),
                       device=device, threads=threads[0] if threads else None, timeout_s=args.timeout,
                       settings=settings)


def _progress(progress: Progress[object]) -> None:
    print(f"[{progress.done}/{progress.total}] {progress.message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    """Both modes: refuse what cannot run before anything starts, measure, then rank 0 prints and saves."""
    if args.ranks is not None and args.distributed:
        raise DashboardError("--ranks starts the ranks itself; --distributed runs under your torchrun: give one")
    if args.guess or args.end_to_end or args.cache != "warm" or args.tf32 != "off":
        raise DashboardError("--guess, --end-to-end, --cache and --tf32 are not for --ranks/--distributed")
    config = config_from_args(args)
    hooks = cli_hooks(on_progress=None if args.quiet else _progress)
    if args.distributed:
        from core.matmul.rank_worker import measure_ranks
        from core.platform.parent_watch import die_with_parent

        die_with_parent()  # the user's torchrun killed outright leaves no rank computing on
        result = measure_ranks(config, distributed=True, hooks=hooks)
        if result is None:  # not rank 0: rank 0 speaks for the job
            return 0
    else:
        from core.matmul.rank_launch import crowding, run_ranks
        from core.platform.devices import cuda_count

        if crowded := crowding(config, args.ranks, cuda_count()):
            print(f"warning: {crowded}", file=sys.stderr, flush=True)
        result = run_ranks(config, args.ranks, hooks)
    payload = result.to_json()
    if args.json:
        print_json(payload)
    else:
        print(render(result, command_seconds() if not args.distributed else None))
    save_if_requested(args, result)
    return 0


def render(run: ClusterRun, command_s: float | None = None) -> str:
    """Per rank and size: GFLOP/s together and alone; then the spread, the contention and the straggler.

    `command_s`: seconds since the command's process started (launching torchrun and the ranks included),
    the wall time a person timed; the run's own `wall_s` is rank 0's, from its sweep's start."""
    rows = []
    for r in run.ranks:
        alone = {p.n: p.gflops for p in r.alone}
        rows += [[r.rank, r.hostname, r.device, p.n, p.gflops, alone.get(p.n), len(p.times_s),
                  "busy" if p.busy else ""] for p in r.together]
    header = ["rank", "host", "device", "n", "GFLOP/s together", "GFLOP/s alone", "samples", "machine"]
    lines = [format_table(header, rows, max_width=TABLE_WIDTH, elide=["host", "device"]), ""]
    prose = [f"n={s.n}: together {number(s.min or 0)} / {number(s.median or 0)} / {number(s.max or 0)} GFLOP/s "
             "(min / median / max)" for s in run.spread]
    prose += [f"n={c.n}: alone / together = {number(c.ratio or 0)} (median {number(c.alone_gflops or 0)} alone, "
              f"{number(c.together_gflops or 0)} together)" for c in run.contention]
    if run.straggler_call == NAMED:
        prose += [f"straggler: rank {s.rank} on {s.hostname} ({s.device}) is {s.below_median or 0:.0%} "
                  f"below the median at n={s.n} "
                  f"(slowdown {number(s.slowdown_low or 0)}-{number(s.slowdown_high or 0)}x)" for s in run.stragglers]
    elif run.straggler_call == NONE:
        prose.append(f"straggler: none ({run.straggler_note})")
    else:
        prose.append(f"straggler: cannot tell ({run.straggler_note})")
    if any(p.busy for r in run.ranks for p in r.together):
        prose.append("machine busy: other programs took CPU while that size was timed on that rank")
    timed = f"the sweep on the ranks {seconds(run.wall_s)}" if run.wall_s is not None else ""
    if command_s is not None:
        prose.append(f"{len(run.ranks)} ranks on {run.hosts} host(s); wall time {seconds(command_s)} since the "
                     f"command started, with starting torchrun and the ranks{f' ({timed})' if timed else ''}")
    else:
        prose.append(f"{len(run.ranks)} ranks on {run.hosts} host(s){f'; {timed}' if timed else ''}")
    if run.load is not None and run.load.notice:
        prose.append(run.load.notice)
    return "\n".join(lines) + wrap(prose)


def command_seconds() -> float | None:
    """Seconds since this process started (psutil reads the OS's start time): the wall time a person sees."""
    import psutil

    try:
        return max(0.0, time.time() - psutil.Process().create_time())
    except (psutil.Error, OSError):
        return None
