"""`python -m core matmul --ranks K` on one machine: K torchrun ranks, every device held, a failure named.

The job holds every device the ranks use (the CPU, or cuda:0..K-1) for the whole run, starts
`python -m torch.distributed.run --standalone --nproc-per-node K -m core.matmul.rank_worker ...` through
core.platform.torchrun (so a Stop, an error or the death of this process ends every rank), relays rank
0's progress and returns its run.

When the launch fails, the one message names the rank and its host, from what the ranks said and what
this machine saw of their processes (polled by pid while the run goes on):
- a rank whose own error came back: that error (it names its rank and host);
- a rank that never said it was joining: it never joined;
- a rank stopped by a signal (SIGSTOP, a debugger): it hung;
- a rank whose process ended first: it died (a rank that said `ended`, ended by torchrun's SIGTERM once another
  died, is never the one);
- otherwise the ranks that timed out waiting name the one that did not answer: it hung.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil

from core.errors import DashboardError
from core.matmul.rank_worker import RanksConfig, check_config
from core.matmul.ranks import oversubscription
from core.platform import torchrun
from core.platform.device_lock import JobCancelled
from core.platform.devices import cuda_count
from core.platform.jobs import JobHooks, Progress, RunningJob, run_job
from core.platform.machine_load import usable_cores
from core.platform.units import byte_size
from core.results.cluster import ClusterRun

WORKER_MODULE = "core.matmul.rank_worker"
MAX_RANKS = 64
POLL_S = 0.02  # how often the ranks' processes are looked at: a death is ordered against the others within this
Launch = Callable[[list[str], int, RunningJob, torchrun.Emit], torchrun.Launched]


def rank_devices(config: RanksConfig, ranks: int, gpus: int) -> list[str]:
    """The devices the job holds: every GPU a rank uses, or the CPU the CPU ranks share. Too few GPUs,
    or more CPU ranks than twice the usable cores, is one line before anything starts."""
    if not 1 <= ranks <= MAX_RANKS:
        raise DashboardError(f"--ranks must be between 1 and {MAX_RANKS}, not {ranks}")
    if config.device == "cuda" or (config.device == "auto" and gpus):
        if ranks > gpus:
            raise DashboardError(f"--ranks {ranks} needs {ranks} GPUs (one per rank); this machine has {gpus}. "
                                 "Use fewer --ranks, or --devices cpu")
        return [f"cuda:{i}" for i in range(ranks)]
    most = max(2, 2 * usable_cores())  # as Why parallel's processes: more only take turns on the same cores
    if ranks > most:
        raise DashboardError(f"--ranks {ranks} CPU ranks is more than twice this machine's {usable_cores()} usable "
                             f"cores; use at most {most}: more processes only take turns on the same cores")
    return ["cpu"]


def crowding(config: RanksConfig, ranks: int, gpus: int) -> str | None:
    """What to say before a run whose CPU ranks would outnumber this machine's usable cores with their threads
    (allowed, as Why parallel's processes are, but such a run names no straggler: core.matmul.ranks); None when
    they fit, or the ranks are on GPUs."""
    if ranks < 2 or rank_devices(config, ranks, gpus) != ["cpu"]:
        return None
    cores = usable_cores()
    threads = config.threads or max(1, cores // ranks)
    return oversubscription(ranks, threads * ranks, cores) if threads * ranks > cores else None


def check_fits(config: RanksConfig, ranks: int, devices: list[str]) -> None:
    """The largest size on every rank at once, before anything starts: CPU ranks share one RAM, a GPU rank
    has its own GPU."""
    import torch

    from core.matmul import guards

    n = max(config.sizes)
    need = guards.memory_need(torch.device(devices[0]), config.dtype, n, check_error=False)
    if devices != ["cpu"]:
        for device in devices:
            guards.check_memory(guards.memory_need(torch.device(device), config.dtype, n, check_error=False))
        return
    free = guards.free_device_bytes(torch.device("cpu"))
    if need.device_bytes * ranks > free:
        raise DashboardError(f"n={n} on {ranks} CPU ranks needs {byte_size(need.device_bytes * ranks)} at once, "
                             f"but only {byte_size(free)} is free; choose smaller sizes or fewer ranks")


def most_ranks(gpus: int) -> int:
    """The most ranks a page offers: one per GPU, else twice the usable cores (what rank_devices accepts)."""
    return min(MAX_RANKS, gpus if gpus else max(2, 2 * usable_cores()))


PAGE_SIZES = {"small (64, 128, 256)": (64, 128, 256), "medium (256, 512, 1024)": (256, 512, 1024),
              "large (1024, 2048, 4096)": (1024, 2048, 4096)}  # the page's sweeps: a few seconds per rank on a CPU


def launcher_command(config: RanksConfig, ranks: int) -> list[str]:
    return torchrun.launcher_command(ranks, WORKER_MODULE, config.to_args())


class _RankFailed(Exception):
    """A rank reported its error: the run has failed, so every rank is ended now rather than after torchrun's
    own 30 s grace for a rank that does not answer its SIGTERM (a stopped one)."""


@dataclass
class _Seen:
    """What one rank said and what became of its process."""

    rank: int
    hostname: str
    pid: int
    process: psutil.Process | None
    ended_at: float | None = None  # this follower's clock when the process was first seen gone
    stopped: bool = False  # seen stopped by a signal
    ended_by_launcher: bool = False  # it said `ended`: torchrun's SIGTERM ended it, it did not fail


@dataclass
class _Follower:
    job: RunningJob
    ranks: int
    seen: dict[int, _Seen] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)
    result: ClusterRun | None = None
    clock: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "joining":
            self._joined(int(event["rank"]), str(event.get("hostname")), int(event["pid"]))
        elif kind == "progress":
            self.job.report(Progress(int(event["done"]), int(event["total"]), str(event["message"])))
        elif kind == "result":
            self.result = ClusterRun.from_json(event["run"], "result")
        elif kind == "ended":
            self._ended_by_launcher(event.get("rank"))
        elif kind == "error":
            self.errors[int(event.get("rank") or 0)] = str(event.get("message"))
            self.poll()  # the processes as they are now, before the group is ended
            raise _RankFailed()

    def _joined(self, rank: int, host: str, pid: int) -> None:
        try:
            process: psutil.Process | None = psutil.Process(pid)
        except psutil.Error:
            process = None
        with self.lock:
            self.seen[rank] = _Seen(rank, host, pid, process, ended_at=self.clock if process is None else None)

    def _ended_by_launcher(self, rank: Any) -> None:
        with self.lock:
            if (s := self.seen.get(int(rank) if str(rank).isdecimal() else -1)) is not None:
                s.ended_by_launcher = True

    def poll(self) -> None:
        """One look at every rank's process: the first seen gone, the ones stopped."""
        with self.lock:
            self.clock += 1
            for s in self.seen.values():
                if s.ended_at is not None or s.process is None:
                    continue
                try:
                    status = s.process.status() if s.process.is_running() else psutil.STATUS_ZOMBIE
                except psutil.Error:
                    status = psutil.STATUS_ZOMBIE
                if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
                    s.ended_at = self.clock
                elif status == psutil.STATUS_STOPPED:
                    s.stopped = True

    def culprit(self, timeout_s: float) -> str | None:
        """The one message naming the rank that failed, or None when nothing points at one."""
        with self.lock:
            seen = dict(self.seen)
        peer_named = [m for r, m in sorted(self.errors.items()) if "seen from rank" in m]  # by heartbeats
        own = [m for r, m in sorted(self.errors.items())
               if not any(x in m for x in ("another rank", "waited", "could not join the other ranks",
                                           "seen from rank"))]
        if own:
            return own[0]
        missing = [r for r in range(self.ranks) if r not in seen]
        if missing:
            return (f"rank {missing[0]} on this machine never joined the job (no sign of it within the "
                    f"{timeout_s:g} s process-group timeout)")
        stopped = [s for s in seen.values() if s.stopped]
        if stopped:
            first = stopped[0]
            return f"rank {first.rank} on {first.hostname} hung: its process was stopped (pid {first.pid})"
        gone = [s for s in seen.values() if s.ended_at is not None]
        failed = [s for s in gone if not s.ended_by_launcher] or gone  # all said `ended`: a kill not by torchrun
        ended = sorted(failed, key=lambda s: (s.ended_at, s.rank))
        if ended and (len(ended) == 1 or ended[0].ended_at != ended[1].ended_at):
            return f"rank {ended[0].rank} on {ended[0].hostname} died (pid {ended[0].pid}) before the run finished"
        if peer_named:
            return peer_named[0]
        silent = [s for r, s in sorted(seen.items()) if r not in self.errors]
        if self.errors and len(silent) == 1:
            return (f"rank {silent[0].rank} on {silent[0].hostname} hung: it gave no answer within the "
                    f"{timeout_s:g} s process-group timeout")
        return next(iter(self.errors.values()), None)


def _watch(follower: _Follower, done: threading.Event) -> None:
    while not done.wait(POLL_S):
        follower.poll()


def run_ranks(config: RanksConfig, ranks: int, hooks: JobHooks | None = None, *, gpus: int | None = None,
              launch: Launch = torchrun.follow) -> ClusterRun:
    """Time the sweep on `ranks` torchrun ranks of this machine, together and then each alone; rank 0's run.

    A Stop ends every rank (JobCancelled: nothing is kept, since the straggler needs every rank); a rank
    that dies, hangs or never joins is one DashboardError naming it; the devices are free again either way.
    """
    check_config(config)
    devices = rank_devices(config, ranks, cuda_count() if gpus is None else gpus)
    check_fits(config, ranks, devices)
    threads = config.threads or max(1, usable_cores() // ranks)
    with run_job(devices, hooks, label=f"matmul on {ranks} ranks", measure_load=True) as job:
        follower = _Follower(job, ranks)
        done = threading.Event()
        threading.Thread(target=_watch, args=(follower, done), daemon=True).start()
        try:
            launched: torchrun.Launched | None = launch(launcher_command(config, ranks), threads, job, follower.event)
        except _RankFailed:
            launched = None  # follow ended every rank on its way out
        finally:
            done.set()
        if launched is not None and launched.stopped:
            raise JobCancelled(f"{job.stop_reason()}; every rank was ended")
        if launched is not None and follower.result is not None and launched.code == 0:
            from dataclasses import replace

            return replace(follower.result, load=job.load)
        if launched is not None:
            follower.poll()
        named = follower.culprit(config.timeout_s)
        code = 1 if launched is None else launched.code or 0
        raise DashboardError((named or f"a rank failed: the torchrun launcher exited with code {code} "
                              f"({torchrun.exit_meaning(code)})") + "; every rank was ended and the devices are free")
