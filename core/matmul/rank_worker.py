"""One torchrun rank of the matmul race on every device: time the sweep together with the others, then alone.

Started by `python -m core matmul --ranks K` (core.matmul.rank_launch, through core.platform.torchrun)
as `python -m core.matmul.rank_worker ...`, or by the user's own torchrun on many machines as
`python -m core matmul --distributed` (core.cli.ranks calls `measure_ranks` in that process).

Each rank uses `cuda:LOCAL_RANK` where there are GPUs (or --device cuda), else the CPU with its share
of the cores (usable cores // ranks on this machine). The ranks talk over gloo, only to line up
(a barrier before every size, so "together" means at the same time) and to gather the records at the
end; rank 0 builds the run (core.matmul.ranks) and reports it.

Every rank prints three events of its own, whichever its rank: `joining` (rank, host, pid) just before it
joins the process group, `error` when it fails, and `ended` when a SIGTERM ends it (torchrun ends the other
ranks so once one has died); rank 0 also prints progress and the result. The launcher on one machine names a
rank that died, hung or never joined from them (core.matmul.rank_launch).
Once joined, every rank ticks a heartbeat in the job's rendezvous store, so under the user's torchrun, where
no launcher of ours watches the processes, a rank whose collective failed names the peer that went silent.

GVC_TEST_SLOW_RANK=R:S (tests only) makes rank R sleep S seconds inside every timed call: a straggler
on purpose. GVC_TEST_LATE_RANK=R makes rank R wait an hour before joining: a rank that never joins.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import threading
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil
import torch

from core.errors import DashboardError
from core.matmul import engine
from core.matmul.guards import check_memory, memory_need
from core.matmul.series import DTYPES
from core.matmul.ranks import contention, judge_stragglers, rank_point, spread
from core.matmul.verdict import MIN_SAMPLES
from core.platform import gpu_ids, timing
from core.platform.devices import cuda_count, device_key, synchronize
from core.platform.jobs import JobHooks, Progress, RunningJob, run_job
from core.platform.machine_load import busy_for, cpu_reading, others_between, usable_cores
from core.platform.parent_watch import die_with_parent
from core.platform.torchrun import DEFAULT_TIMEOUT_S, WorkerEnv, emit_event, exit_now, local_gpu_index, worker_env
from core.results.cluster import ClusterRun, RankPoint, RankRecord
from core.results.jsonio import to_jsonable

Event = dict[str, Any]
SLOW_ENV, LATE_ENV = "GVC_TEST_SLOW_RANK", "GVC_TEST_LATE_RANK"
DEFAULT_SIZES = (256, 512, 1024)
MAX_SIZE = 16384


@dataclass(frozen=True)
class RanksConfig:
    """One run on every rank."""

    sizes: tuple[int, ...] = DEFAULT_SIZES  # the sweep every rank times, smallest first
    budget_s: float = 0.5  # seconds per size on each rank, in each phase
    dtype: str = "float32"
    device: str = "auto"  # auto: cuda:LOCAL_RANK when this machine has GPUs, else the CPU; or cpu, cuda
    threads: int | None = None  # per CPU rank; None: this machine's usable cores shared among its ranks
    timeout_s: float = DEFAULT_TIMEOUT_S  # a rank silent this long in a collective has hung: fail, name it
    seed: int = 0
    settings: dict[str, Any] = field(default_factory=dict)  # as the user gave them, saved with the run

    def to_args(self) -> list[str]:
        """The worker's command-line flags for this config."""
        return ["--config", json.dumps(to_jsonable(asdict(self)))]


def check_config(config: RanksConfig) -> None:
    """The settings a rank would refuse, refused before anything starts."""
    if not config.sizes or any(not 1 <= n <= MAX_SIZE for n in config.sizes):
        raise DashboardError(f"sizes must be between 1 and {MAX_SIZE}; got {list(config.sizes)[:8]}")
    if not 0 < config.budget_s <= 60:
        raise DashboardError(f"--budget must be more than 0 and at most 60 s per size, not {config.budget_s:g}")
    if config.dtype not in DTYPES:
        raise DashboardError(f"--dtype {config.dtype!r} is not one of {', '.join(DTYPES)}")
    if config.device not in ("auto", "cpu", "cuda"):
        raise DashboardError(f"--devices for ranks is auto, cpu or cuda (each rank takes cuda:LOCAL_RANK), "
                             f"not {config.device!r}")
    if config.threads is not None and config.threads < 1:
        raise DashboardError(f"--threads must be at least 1, not {config.threads}")


def rank_device(config: RanksConfig, local_rank: int, local_ranks: int, gpus: int, host: str) -> torch.device:
    """cuda:LOCAL_RANK on a machine with GPUs (or asked for), cuda:0 where the rank sees one GPU (a launcher
    giving each rank its own; ranks sharing one are refused once they meet: `shared_gpu`), else the CPU; one
    line when this rank sees fewer GPUs than ranks started on its machine."""
    if config.device == "cpu" or (config.device == "auto" and gpus == 0):
        return torch.device("cpu")
    index = local_gpu_index(local_rank, gpus) if gpus == 1 or local_ranks <= gpus else None
    if index is None:
        raise DashboardError(f"{host} has {gpus} GPU(s) but {local_ranks} ranks were started on it: give "
                             f"--nproc-per-node {gpus} or fewer, or --devices cpu")
    return torch.device("cuda", index)


def gpu_place(device: torch.device) -> str | None:
    """What every rank calls this rank's GPU (its physical id), or None on the CPU or when torch says nothing."""
    return gpu_ids.physical_id(device.index or 0) if device.type == "cuda" else None


def shared_gpu(places: list[tuple[str, str | None]], hosts: list[str]) -> str | None:
    """The one line for two ranks of one machine on one GPU (each rank's (machine, GPU id)), else None: their
    timings would be each other's, and a straggler could never be told from a neighbour."""
    first: dict[tuple[str, str], int] = {}
    for rank, (machine, gpu) in enumerate(places):
        if gpu is None:
            continue
        if (machine, gpu) in first:
            return (f"ranks {first[(machine, gpu)]} and {rank} on {hosts[rank]} were given the same GPU ({gpu}): "
                    "give each rank its own GPU (--nproc-per-node no more than the GPUs, or one per rank in "
                    "CUDA_VISIBLE_DEVICES), or --devices cpu")
        first[(machine, gpu)] = rank
    return None


def rank_threads(config: RanksConfig, device: torch.device, local_ranks: int, cores: int) -> int | None:
    """A CPU rank's share of this machine's cores (at least one); None on a GPU (torch's own)."""
    if device.type != "cpu":
        return None
    return config.threads or max(1, cores // max(1, local_ranks))


def device_name(device: torch.device, threads: int | None) -> str:
    if device.type == "cuda":
        return str(torch.cuda.get_device_properties(device).name)[:120]
    from core.platform.hardware import cpu_name

    return f"{cpu_name()[:100]}, {threads} thread{'s' * (threads != 1)}"


def _test_delay(rank: int) -> float:
    """Seconds rank `rank` sleeps inside each timed call (GVC_TEST_SLOW_RANK=R:S), 0 for every other rank."""
    spec = os.environ.get(SLOW_ENV, "")
    who, _, seconds = spec.partition(":")
    return float(seconds) if who.strip() == str(rank) and seconds else 0.0


@dataclass
class _Rank:
    """Where this rank sits and what it times with."""

    env: WorkerEnv
    host: str
    device: torch.device
    threads: int | None
    local_ranks: int
    cores: int
    delay_s: float

    def per_rank_cores(self) -> int:
        if self.device.type != "cpu":
            return 1  # a GPU rank keeps one core busy launching and waiting
        return self.threads or 1

    def time_size(self, config: RanksConfig, n: int, *, together: bool) -> RankPoint:
        """One size timed on this rank's device, with how busy the machine was meanwhile; a size that does not
        fit is one line naming this rank (a CPU allocation past the RAM would not raise: the kernel kills)."""
        try:
            check_memory(memory_need(self.device, config.dtype, n, check_error=False))
        except DashboardError as exc:
            raise DashboardError(f"rank {self.env.rank} on {self.host}: {exc}") from None
        ops = engine.make_operands(self.device, DTYPES[config.dtype], n, seed=config.seed, end_to_end=False)
        synchronize(self.device)
        fn: Callable[[], object] = engine.product(ops)
        if self.delay_s:
            fn = _slowed(fn, self.delay_s)
        family = siblings()
        before = cpu_reading(family)
        with timing.torch_threads(self.threads):
            measured = timing.measure(fn, self.device, budget_s=config.budget_s, min_samples=MIN_SAMPLES)
        others = others_between(before, cpu_reading(family))
        needed = min(self.cores, self.per_rank_cores() * (self.local_ranks if together else 1))
        busy = busy_for(others, cores=self.cores, needed=needed)
        return rank_point(n, measured.times_s, others_cores=others, busy=busy, spare_cores=self.cores - needed)


def siblings() -> list[psutil.Process]:
    """The other ranks of this job on this machine: the processes our parent (torchrun's agent, Slurm's
    step) started with our very command line. Their CPU is the job's own, read as it was really used:
    guessing it (a sibling's threads times the window) hid a stranger's load whenever the stranger had
    slowed the sibling too, and that was the load that made an undisturbed rank look like a straggler."""
    try:
        me = psutil.Process()
        parent, command = me.parent(), me.cmdline()
        if parent is None:
            return []
        return [p for p in parent.children() if p.pid != me.pid and _same_command(p, command)]
    except psutil.Error:
        return []


def _same_command(process: psutil.Process, command: list[str]) -> bool:
    try:
        return process.cmdline() == command
    except psutil.Error:
        return False


def _slowed(fn: Callable[[], object], delay_s: float) -> Callable[[], object]:
    """`fn`, then a sleep inside the same timed call: a straggler on purpose (tests only)."""
    def call() -> object:
        out = fn()
        time.sleep(delay_s)
        return out
    return call


def _sweep(rank: _Rank, config: RanksConfig, report: Callable[[str, int, int], None]) -> RankRecord:
    """Together (a barrier before each size, so all ranks time it at once), then each rank alone."""
    import torch.distributed as dist

    together: list[RankPoint] = []
    alone: list[RankPoint] = []
    steps = len(config.sizes) * (1 + rank.env.world_size)
    for n in config.sizes:
        dist.barrier()
        together.append(rank.time_size(config, n, together=True))
        report(f"n={n}: all {rank.env.world_size} ranks at once", len(together), steps)
    for turn in range(rank.env.world_size):
        dist.barrier()
        if turn == rank.env.rank:
            alone.extend(rank.time_size(config, n, together=False) for n in config.sizes)
        report(f"rank {turn} alone", len(config.sizes) * (2 + turn), steps)
    dist.barrier()
    return RankRecord(rank=rank.env.rank, hostname=rank.host, device=device_key(rank.device),
                      device_name=device_name(rank.device, rank.threads), threads=rank.threads,
                      cores=rank.cores if rank.device.type == "cpu" else None,
                      together=tuple(together), alone=tuple(alone))


def build_run(records: list[RankRecord], config: RanksConfig, *, mode: str, wall_s: float,
              job: RunningJob | None = None) -> ClusterRun:
    """Rank 0's run from every rank's record: the spread, the contention and the stragglers derived once."""
    from core.platform.hardware import inspect_machine
    from core.results.files import utc_now

    ranks = sorted(records, key=lambda r: r.rank)
    stragglers, call, note = judge_stragglers(ranks)
    return ClusterRun(ranks=tuple(ranks), spread=spread(ranks), spread_alone=spread(ranks, "alone"),
                      contention=contention(ranks), stragglers=stragglers, straggler_call=call,
                      straggler_note=note[:2000], dtype=config.dtype, hosts=len({r.hostname for r in ranks}),
                      mode=mode, wall_s=wall_s, finished_at=utc_now(), settings=to_jsonable(config.settings),
                      machine=inspect_machine().record(), load=None if job is None else job.load)


Place = tuple[str, str, str | None]  # one rank's (host name, machine, GPU id), as every rank learns it


def machine_of(host: str) -> str:
    """This machine, as the ranks tell machines apart: its host name and the kernel's boot id (two containers
    of one machine share the boot id, two machines that happen to share a host name do not)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    return f"{host} {boot}".strip()


def machine_devices(places: list[Place], machine: str, device: torch.device) -> list[str]:
    """The devices every rank of `machine` uses, named so that the holder can lock GPUs it does not see
    itself: each GPU's physical id ('cuda-GPU-...', as core.platform.device_lock names a GPU's line), or,
    where torch gives none, cuda:0..K-1 of the K ranks there; the CPU the CPU ranks share."""
    if device.type == "cpu":
        return ["cpu"]
    here = [gpu for _, m, gpu in places if m == machine]
    if all(gpu is not None for gpu in here):
        return [f"cuda-{gpu}" for gpu in sorted({g for g in here if g is not None})]
    return [f"cuda:{i}" for i in range(len(here))]


def _machine_lock(distributed: bool, rank: _Rank, places: list[Place],
                  hooks: JobHooks | None) -> AbstractContextManager[RunningJob | None]:
    """Under the user's torchrun, the first rank of each machine holds every device of that machine's ranks
    for the run, once the rendezvous has said which ranks share a machine: two torchrun agents on one machine
    then hold one machine lock between them, not one each, waiting for each other until the timeout. The
    ranks time nothing before the next barrier, which every machine's holder reaches holding its devices.
    On one machine the launcher holds them already."""
    machine = places[rank.env.rank][1]
    first = min(r for r, place in enumerate(places) if place[1] == machine)
    if distributed and rank.env.rank == first:
        return run_job(machine_devices(places, machine, rank.device), hooks,
                       label=f"matmul on {rank.env.world_size} ranks", measure_load=True)
    return nullcontext()


def measure_ranks(config: RanksConfig, *, distributed: bool = False, hooks: JobHooks | None = None,
                  environ: dict[str, str] | None = None,
                  say: Callable[[Event], None] | None = None) -> ClusterRun | None:
    """This rank's part of the run; rank 0 returns the whole run, every other rank None.

    `say` gets this rank's events (`joining`, and on rank 0 `progress`): the launched worker prints them
    for the launcher; under the user's torchrun (the default) rank 0's progress goes to `hooks.on_progress`,
    so stdout stays the one table or JSON object.
    Raises a DashboardError naming this rank and its host when something fails on it (a peer that died
    or hung shows up here as a collective that failed or timed out).
    """
    import torch.distributed as dist

    env = worker_env(environ)
    host = socket.gethostname()[:120] or "unknown host"
    local_ranks = int((environ or os.environ).get("LOCAL_WORLD_SIZE", "1"))
    check_config(config)
    device = rank_device(config, env.local_rank, local_ranks, cuda_count(), host)
    cores = usable_cores()
    rank = _Rank(env, host, device, rank_threads(config, device, local_ranks, cores), local_ranks, cores,
                 _test_delay(env.rank))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    started = time.perf_counter()
    tell = say or _to_hooks(hooks)
    if os.environ.get(LATE_ENV, "").strip() == str(env.rank):
        time.sleep(3600)  # tests only: a rank that never joins
    tell({"event": "joining", "rank": env.rank, "hostname": host, "pid": os.getpid()})
    with _group(config.timeout_s, rank) as places, _machine_lock(distributed, rank, places, hooks) as job:
        record = _sweep(rank, config, (lambda message, done, total: tell(
            {"event": "progress", "message": message, "done": done, "total": total})) if env.rank == 0
            else (lambda message, done, total: None))
        gathered: list[Any] = [None] * env.world_size
        dist.all_gather_object(gathered, record.to_json())
        if env.rank != 0:
            return None
        records = [RankRecord.from_json(r, f"ranks[{i}]") for i, r in enumerate(gathered)]
        return build_run(records, config, mode="torchrun" if distributed else "one machine",
                         wall_s=time.perf_counter() - started, job=job)


def _to_hooks(hooks: JobHooks | None) -> Callable[[Event], None]:
    """Rank 0's progress events as the caller's progress hook (the CLI's stderr line); the rest unsaid."""
    def tell(event: Event) -> None:
        if event.get("event") == "progress" and hooks is not None and hooks.on_progress is not None:
            hooks.on_progress(Progress(int(event["done"]), int(event["total"]), str(event["message"])))
    return tell


HEARTBEAT_S = 0.5  # how often a rank ticks its counter in the job's store; a peer that stopped ticking is the culprit


class _Heartbeat:
    """This rank's tick in the job's key-value store (the rendezvous store every rank already reaches, on
    every machine), so a rank whose collective failed can name the peer that stopped: died or hung."""

    def __init__(self, rank: int, world: int) -> None:
        import torch.distributed as dist

        self.rank, self.world = rank, world
        self.store = dist.distributed_c10d._get_default_store()
        self.done = threading.Event()
        threading.Thread(target=self._tick, daemon=True, name="rank-heartbeat").start()

    @staticmethod
    def key(rank: int) -> str:
        return f"gvc/heartbeat/{rank}"

    def _tick(self) -> None:
        while not self.done.wait(HEARTBEAT_S):
            try:
                self.store.add(self.key(self.rank), 1)
            except Exception:  # noqa: BLE001 - the store is gone: nothing left to tell
                return

    def silent(self) -> list[int]:
        """The other ranks whose counters did not move over three beats."""
        try:
            before = [self.store.add(self.key(r), 0) for r in range(self.world)]
            time.sleep(3 * HEARTBEAT_S)
            after = [self.store.add(self.key(r), 0) for r in range(self.world)]
        except Exception:  # noqa: BLE001
            return []
        return [r for r in range(self.world) if r != self.rank and before[r] == after[r]]


def _join_failed(rank: _Rank, timeout_s: float, waited_s: float, exc: BaseException) -> str:
    """Why this rank could not join, by how long it tried: a timeout says it waited; an earlier failure
    (a refused connection after 2 s) says when, not "waited 10 s" (issue 30)."""
    where = f"rank {rank.env.rank} on {rank.host}"
    if waited_s >= 0.9 * timeout_s:
        return f"{where}: waited {waited_s:.0f} s for the other ranks to join and gave up ({_first_line(exc)})"
    return f"{where}: could not join the other ranks after {waited_s:.1f} s ({_first_line(exc)})"


@contextmanager
def _group(timeout_s: float, rank: _Rank) -> Iterator[list[Place]]:
    """This rank in the gloo group, yielding where every rank is (`Place`); a failed or timed-out collective
    becomes one line naming the rank whose heartbeat stopped (else this one)."""
    import torch.distributed as dist
    from datetime import timedelta

    started = time.monotonic()
    try:
        dist.init_process_group("gloo", timeout=timedelta(seconds=timeout_s))
    except Exception as exc:  # noqa: BLE001 - the store's and gloo's errors have no common type
        raise DashboardError(_join_failed(rank, timeout_s, time.monotonic() - started, exc)) from None
    hosts: list[Any] = [None] * rank.env.world_size
    beat: _Heartbeat | None = None
    try:
        gathered: list[Any] = [None] * rank.env.world_size
        dist.all_gather_object(gathered, (rank.host, machine_of(rank.host), gpu_place(rank.device)))
        places: list[Place] = [(str(h), str(m), None if g is None else str(g)) for h, m, g in gathered]
        hosts[:] = [host for host, _, _ in places]
        shared = shared_gpu([(machine, gpu) for _, machine, gpu in places], hosts)
        if shared is not None:  # every rank saw the same list: every rank stops with this line
            raise DashboardError(shared)
        beat = _Heartbeat(rank.env.rank, rank.env.world_size)
        yield places
    except DashboardError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise DashboardError(_failure(exc, timeout_s, rank, hosts, beat)) from None
    finally:
        if beat is not None:
            beat.done.set()
        dist.destroy_process_group()


def _failure(exc: BaseException, timeout_s: float, rank: _Rank, hosts: list[Any], beat: _Heartbeat | None) -> str:
    """The one line for a failed collective: the silent peer by name where the heartbeats show one."""
    silent = beat.silent() if beat is not None else []
    if len(silent) == 1:
        what = "hung" if _timed_out(exc) else "died"
        return (f"rank {silent[0]} on {hosts[silent[0]] or 'its host'} {what}: its heartbeat stopped (seen from rank "
                f"{rank.env.rank} on {rank.host}, {_collective_failure(exc, timeout_s)})")
    return f"rank {rank.env.rank} on {rank.host}: {_collective_failure(exc, timeout_s)}"


def _timed_out(exc: BaseException) -> bool:
    text = str(exc)
    return "Timed out" in text or "timed out" in text or "Timeout" in text


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[-1] if text else type(exc).__name__)[:300]


def _collective_failure(exc: BaseException, timeout_s: float) -> str:
    text = str(exc)
    if _timed_out(exc):
        return f"timed out: another rank gave no answer within the {timeout_s:g} s process-group timeout (hung)"
    if "closed" in text or "reset" in text or "Broken pipe" in text:
        return "another rank closed its connection (it died)"
    return f"a collective failed ({_first_line(exc)})"


def _ended_by_sigterm(rank: str | None) -> None:
    """Say `ended` (this rank did not fail: the launcher ended it) and leave at once, as SIGTERM's default would.

    torchrun ends every other rank with SIGTERM about 0.1 s after one dies (its monitor's interval); the launcher
    told the dead rank from the ended ones only by seeing the processes go in that order (core.matmul.rank_launch
    polls them every 20 ms), and on a loaded machine its poller slept through the gap: both gone at one look, no
    rank named. Python runs a signal's handler only between bytecodes, which a rank blocked in a collective does
    not reach, so the C-level handler's wakeup byte wakes a thread that says it at once."""
    def say() -> None:
        emit_event({"event": "ended", "rank": rank, "signal": "SIGTERM"})
        exit_now(128 + signal.SIGTERM)

    def watch(fd: int) -> None:
        while os.read(fd, 1) != bytes([signal.SIGTERM]):
            pass
        say()

    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    signal.signal(signal.SIGTERM, lambda signum, frame: say())
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    threading.Thread(target=watch, args=(read_fd,), daemon=True, name="sigterm-ended").start()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m core.matmul.rank_worker",
                                description="one rank of the matmul race on every device (start it with torchrun)")
    p.add_argument("--config", required=True, help="RanksConfig as JSON")
    args = p.parse_args(argv)
    raw = json.loads(args.config)
    config = RanksConfig(**{**raw, "sizes": tuple(raw["sizes"])})
    die_with_parent()  # a launcher killed outright leaves no rank computing on
    _ended_by_sigterm(os.environ.get("RANK"))
    try:
        run = measure_ranks(config, say=emit_event)
    except DashboardError as exc:
        emit_event({"event": "error", "message": str(exc), "rank": os.environ.get("RANK")})
        print(f"rank error: {exc}", file=sys.stderr, flush=True)
        return 2
    if run is not None:
        emit_event({"event": "result", "run": run.to_json()})
    return 0


if __name__ == "__main__":
    exit_now(main())
