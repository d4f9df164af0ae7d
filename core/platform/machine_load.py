"""How much of the machine other programs are using right now, and how many threads that leaves us.

On a shared classroom server (load 1-4 on 2 cores) a timed job that takes every core waits for a
descheduled thread at every step: a training run with 2 threads took 6x its quiet time while one
thread took about its quiet time. So before a timed job we watch the CPU for a moment, count what
*other* processes used (the whole machine's busy time less this process's own), default the
thread count to the cores that are actually free, and tell the user when the figures may be noisy.
The load average is kept too, and is the fallback where the OS gives no CPU times.

Only the CPUs this process may run on are counted (a container or taskset on a large server: a
neighbour on the other cores takes nothing from us). A figure is called busy when others took
cores the measurement needed: on a 2-core machine racing 1 thread against 2, half a core is
enough; on a 64-core server racing 1 thread against 8, others may use 56 cores before it matters
(`busy_for`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psutil

from core.results.load import MachineLoad

PROBE_S = 0.2  # long enough to see a CPU-bound neighbour, short enough to go unnoticed before a run
PROBE_ENV = "GPU_VS_CPU_LOAD_PROBE_S"  # another probe length (the tests shorten it: it counts toward a job's cap)
MAX_PROBE_S = 5.0
BUSY_OTHERS_CORES = 0.5  # half a core taken by others already shows in two-thread timings
IDLE_FIELDS = ("idle", "iowait")  # CPU time nobody used; everything else (steal included) was taken


def usable_cores() -> int:
    """Cores this process may run on (a container or taskset may allow fewer than the machine has)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def load_average() -> float | None:
    """Runnable processes over the last minute (None where the OS has no such figure)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _our_cpus() -> list[int] | None:
    """Indexes into psutil.cpu_times(percpu=True) of the CPUs we may run on; None: count the whole
    machine (we may run on every CPU, or the OS will not say which, or numbering does not match)."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows: no affinity call, every CPU is ours
        return None
    machine = psutil.cpu_count() or 0
    if len(allowed) >= machine or not allowed or allowed[-1] >= machine:
        return None
    return allowed


def _busy_s(times: Any) -> float:
    """Seconds of CPU time, summed over cores, that someone used (from psutil.cpu_times())."""
    total = sum(float(getattr(times, name)) for name in times._fields if name not in ("guest", "guest_nice"))
    return total - sum(float(getattr(times, name, 0.0)) for name in IDLE_FIELDS)


def _own_s(family: Sequence[psutil.Process] = ()) -> float:
    """CPU seconds this process (all its threads) and `family` have used."""
    return sum(float(t.user + t.system) for t in (p.cpu_times() for p in (psutil.Process(), *family)))


@dataclass(frozen=True)
class CpuReading:
    """The machine's and this process's CPU seconds at one instant: two readings bracket a window."""

    busy_s: float  # CPU time anyone used, summed over the cores counted
    own_s: float  # CPU time this process (and the family it was read with) used
    at_s: float  # time.perf_counter() when read
    cpus: int | None = None  # how many CPUs busy_s covers (None: the whole machine's)


def cpu_reading(family: Sequence[psutil.Process] = ()) -> CpuReading | None:
    """Read the CPU counters now, over the CPUs we may run on (None where the OS will not say, or a
    process of `family` is gone). `family`: processes of the same job (a rank's siblings) whose CPU is
    ours rather than a stranger's: counted as our own, what each of them really used, not a guess."""
    try:
        ours = _our_cpus()
        if ours is None:
            return CpuReading(_busy_s(psutil.cpu_times()), _own_s(family), time.perf_counter())
        per_cpu = psutil.cpu_times(percpu=True)
        if len(per_cpu) != (psutil.cpu_count() or 0):  # an offline CPU shifts the indexes: count them all
            return CpuReading(sum(_busy_s(t) for t in per_cpu), _own_s(family), time.perf_counter(), len(per_cpu))
        return CpuReading(sum(_busy_s(per_cpu[i]) for i in ours), _own_s(family), time.perf_counter(), len(ours))
    except (psutil.Error, OSError, AttributeError, NotImplementedError, IndexError):
        return None


def others_between(before: CpuReading | None, after: CpuReading | None) -> float | None:
    """CPU other processes used between two readings, in cores: works while we compute too, so a
    timed window (one size of a sweep) can say whether a neighbour ran during it."""
    if before is None or after is None or after.at_s <= before.at_s:
        return None
    cpus = after.cpus or psutil.cpu_count() or usable_cores()
    others = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    return min(float(cpus), max(0.0, others / (after.at_s - before.at_s)))


def others_cores(seconds: float = PROBE_S) -> float | None:
    """CPU other processes used while we slept for `seconds`, in cores; None if the OS will not say."""
    before = cpu_reading()
    time.sleep(seconds)
    return others_between(before, cpu_reading())


def free_cores(cores: int, others: float | None, load: float | None) -> int:
    """Cores left for our threads: all of them less what others use (rounded), at least one.

    Without a probe the load average stands in; it counts runnable processes, this one included
    only while it computes, which it does not while it waits to start a job.
    """
    taken = others if others is not None else (load or 0.0)
    return max(1, min(cores, int(cores - taken + 0.5)))


def is_busy(cores: int, others: float | None, load: float | None, needed: int | None = None) -> bool:
    """Would a figure timed now be noisy? Half a core taken by others beyond the cores the job leaves idle
    (`needed` of `cores`; None: it needs every core) is enough to show."""
    if others is not None:
        return busy_for(others, cores=cores, needed=cores if needed is None else min(cores, needed))
    return load is not None and load >= max(1.0, cores / 2)


def busy_for(others: float | None, *, cores: int, needed: int) -> bool:
    """Did other programs take cores a measurement needed? Busy when what they used reaches into the
    `needed` cores (of `cores` we may use) by at least BUSY_OTHERS_CORES: the cores the measurement
    left idle are theirs to use. A comparison timed in alternation needs the most any one of its
    series uses (its CPU threads; a GPU series one core, the thread that launches and waits)."""
    if others is None:
        return False
    return others >= max(0, cores - needed) + BUSY_OTHERS_CORES


def explained_slowdown(others: float | None, *, spare: float = 0.0) -> float:
    """How many times slower other programs could have made a measurement that used every core but
    `spare`: 1 / (1 - e), e being what they used beyond the spare cores (inf from a whole core on).

    Why this bound and not the cores' share (c / (c - e)): the threads of a product meet at its end,
    so one thread that shares its core with a stranger for a fraction e of the time holds the others
    back by that much, however many cores the product has; a neighbour lands on a core, not spread
    over all of them. A difference smaller than this is one the neighbour could have made."""
    beyond = max(0.0, (others or 0.0) - spare)
    return 1.0 / (1.0 - beyond) if beyond < 1.0 else float("inf")


def probe_seconds() -> float:
    """PROBE_S, or GPU_VS_CPU_LOAD_PROBE_S when set to a number from 0 to MAX_PROBE_S."""
    try:
        value = float(os.environ.get(PROBE_ENV, PROBE_S))
    except ValueError:
        return PROBE_S
    return value if 0.0 <= value <= MAX_PROBE_S else PROBE_S


def probe_load(seconds: float | None = None, needed: int | None = None) -> MachineLoad:
    """Watch the machine for `seconds` (default: probe_seconds()) and say how busy it is for a job that
    keeps `needed` cores busy (None: every core). Call it while holding the devices, so a classmate's job
    that just finished is not counted."""
    seconds = probe_seconds() if seconds is None else seconds
    cores, load, others = usable_cores(), load_average(), others_cores(seconds)
    return MachineLoad(cores=cores, others_cores=others, load_average=load, free_cores=free_cores(cores, others, load),
                       busy=is_busy(cores, others, load, needed), probe_s=seconds)


def default_threads(requested: int | None, load: MachineLoad | None) -> int | None:
    """The thread count a job uses: the user's if given, else the free cores (None: leave torch's)."""
    if requested is not None:
        return requested
    return None if load is None else load.free_cores
