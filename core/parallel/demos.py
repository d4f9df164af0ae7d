"""The 'why parallel' measurements: marbles, a chain of tiny steps, the timing bug, the cold first
call, and where a tensor lives.

Each section is one function that takes a config dataclass, holds the devices it times (the
device lock), reports progress through `JobHooks`, and returns a frozen dataclass of raw
`Measurement`s; speed-ups and ratios are derived properties. The tensors are made through an
injectable `make(shape, device)` so the GPU branches can be exercised on a CPU-only machine
with a faked `torch.cuda` (tests pass a maker that ignores the device).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

import torch

from core.platform import clock
from core.parallel.cold_start import FreshRunner, run_in_fresh_process
from core.platform.device_lock import CancelCheck, Job, JobCancelled, WaitCallback, hold_devices
from core.platform.devices import available_devices, device_key
from core.errors import DashboardError
from core.platform.memory import free_device_bytes, release_device_memory
from core.platform.timing import Measurement, measure, time_block, torch_threads
from core.platform.units import gib

R = TypeVar("R")
TensorMaker = Callable[[tuple[int, ...], torch.device], torch.Tensor]
CPU = "cpu"

MIN_SECTION_BUDGET_S = 0.05  # below this no measurement gets even one warm call in
SECTION_BUDGET_S = 2.5  # default per timed section: the whole page stays near 10 s on 2 cores
FLOAT32_BYTES = 4
LIVE_COPIES = 3  # input, result and a workspace alive at once while a product runs


def random_tensor(shape: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """The default maker: standard normal float32 values, created directly on `device`."""
    return torch.randn(*shape, device=device)


@dataclass(frozen=True)
class Progress(Generic[R]):
    """One finished step of a section, with everything measured so far (kept if the user stops)."""

    done: int
    total: int
    label: str  # the step just finished (or, with done = 0, about to start), e.g. "n = 1024, 2 threads"
    partial: R

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0


@dataclass(frozen=True)
class JobHooks:
    """Who listens to a running section; core never knows whether it is a page or the CLI."""

    on_progress: Callable[[Progress], None] | None = None
    on_wait: WaitCallback | None = None  # (device, jobs ahead) while waiting for the lock
    should_cancel: CancelCheck | None = None  # checked while waiting and between steps
    job: Job | None = None  # the caller's hold of the devices: its time cap is checked between steps

    def report(self, progress: Progress) -> None:
        if self.on_progress is not None:
            self.on_progress(progress)

    def check_cancel(self) -> None:
        """Between steps: raise JobCancelled if the user stopped, JobTimedOut past the job's time cap."""
        if self.should_cancel is not None and self.should_cancel():
            raise JobCancelled("stopped by the user; the steps finished so far are kept")
        if self.job is not None:
            self.job.check()


def pick_gpu(devices: Sequence[str] | None = None) -> str | None:
    """The first non-CPU device of `devices` (default: what is present), or None."""
    names = available_devices() if devices is None else list(devices)
    return next((d for d in names if d != CPU), None)


def load_average() -> float | None:
    """Runnable processes over the last minute (None where the OS has no such figure).

    Above about half the cores, other programs compete with our threads: an extra thread then
    waits for a free core at every step and can make a product slower, not faster.
    """
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def usable_cores() -> int:
    """Cores this process may run on (a container or taskset may allow fewer than the machine has)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def thread_ladder(max_threads: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to and including max_threads: every doubling, so a 64-core box stays quick."""
    _check_threads(max_threads)
    ladder = [1 << i for i in range(max_threads.bit_length()) if 1 << i <= max_threads]
    if ladder[-1] != max_threads:
        ladder.append(max_threads)
    return tuple(ladder)


def _check_sizes(sizes: Sequence[int], what: str) -> None:
    if not sizes or any(n < 1 for n in sizes):
        raise DashboardError(f"{what} must be whole numbers of at least 1, got {tuple(sizes)}")


def _check_threads(threads: int | None) -> None:
    if threads is not None and threads < 1:
        raise DashboardError(f"thread count must be at least 1, got {threads}")


def _check_budget(budget_s: float) -> None:
    if not budget_s >= MIN_SECTION_BUDGET_S:
        raise DashboardError(f"time budget must be at least {MIN_SECTION_BUDGET_S} s, got {budget_s} s")


def require_memory(values: int, device: torch.device, what: str) -> None:
    """Refuse, with a message, a size whose float32 tensors would not fit in free memory, before
    allocating: an out-of-memory crash would take the whole dashboard down with it."""
    need = values * FLOAT32_BYTES
    free = free_device_bytes(device)
    if need > free:
        raise DashboardError(f"{what} needs about {gib(need)} on {device_key(device)} but only {gib(free)} is free; "
                             "choose a smaller size")


@contextmanager
def _holding(devices: Sequence[str], hooks: JobHooks) -> Iterator[None]:
    """Hold the devices a section times; release GPU memory it cached, whatever happens."""
    try:
        with hold_devices(devices, on_wait=hooks.on_wait, should_cancel=hooks.should_cancel):
            yield
    finally:
        for name in devices:
            if name != CPU:
                release_device_memory(torch.device(name))


# 1. Marbles ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MarblesConfig:
    sizes: tuple[int, ...] = (64, 1024)  # a small n where threads gain nothing, a large n where they do
    max_threads: int | None = None  # None: every core this process may use
    budget_s: float = SECTION_BUDGET_S  # the whole section, warm-up calls included

    def __post_init__(self) -> None:
        _check_sizes(self.sizes, "matrix sizes")
        _check_budget(self.budget_s)
        _check_threads(self.max_threads)


@dataclass(frozen=True)
class MarblesPoint:
    size: int  # n of the n x n product a @ a
    device: str  # 'cpu', 'cuda:0', 'mps'
    threads: int | None  # CPU threads torch used; None on a GPU
    measurement: Measurement


@dataclass(frozen=True)
class MarblesResult:
    points: tuple[MarblesPoint, ...]
    threads: tuple[int, ...]  # the ladder of CPU thread counts tried
    gpu: str | None
    load_before: float | None = None  # 1-minute load average when the section started
    cores: int = 1  # cores this process could use

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(p.size for p in self.points))

    def baseline(self, size: int) -> MarblesPoint | None:
        """One CPU worker at this size: what every speed-up is measured against."""
        return next((p for p in self.points if p.size == size and p.device == CPU and p.threads == 1), None)

    def speedup(self, point: MarblesPoint) -> float | None:
        """How many times faster than one CPU thread at the same size (None before that is measured)."""
        base = self.baseline(point.size)
        return None if base is None else base.measurement.median_s / point.measurement.median_s

    def cpu_points(self, size: int) -> tuple[MarblesPoint, ...]:
        return tuple(p for p in self.points if p.size == size and p.device == CPU)

    def gpu_point(self, size: int) -> MarblesPoint | None:
        return next((p for p in self.points if p.size == size and p.device != CPU), None)


def run_marbles(
    config: MarblesConfig = MarblesConfig(),
    *,
    devices: Sequence[str] | None = None,
    hooks: JobHooks = JobHooks(),
    make: TensorMaker = random_tensor,
) -> MarblesResult:
    """Time the same a @ a with 1, 2, 4, ... CPU threads, then on the GPU if there is one.

    The budget is shared evenly by every (size, workers) pair so a bigger machine does not
    take longer per pair than the defaults promise.
    """
    gpu = pick_gpu(devices)
    threads = thread_ladder(config.max_threads or usable_cores())
    plan: list[tuple[int, str, int | None]] = [(n, CPU, t) for n in config.sizes for t in threads]
    plan += [(n, gpu, None) for n in config.sizes] if gpu else []
    per_point_s = config.budget_s / len(plan)
    points: list[MarblesPoint] = []
    with _holding([CPU] + ([gpu] if gpu else []), hooks):
        load, cores = load_average(), usable_cores()
        for size, name, n_threads in plan:
            hooks.check_cancel()
            device = torch.device(name)
            require_memory(LIVE_COPIES * size * size, device, f"n = {size}")
            a = make((size, size), device)
            with torch_threads(n_threads):
                m = measure(lambda: a @ a, device, budget_s=per_point_s)
            del a
            points.append(MarblesPoint(size, name, n_threads, m))
            label = f"n = {size}, " + (f"{n_threads} thread{'s' * (n_threads > 1)}" if n_threads else name)
            partial = MarblesResult(tuple(points), threads, gpu, load, cores)
            hooks.report(Progress(len(points), len(plan), label, partial))
    return MarblesResult(tuple(points), threads, gpu, load, cores)


# 2. One big operation vs a chain of tiny dependent steps --------------------------------------

Shape = Literal["one op", "chain"]


@dataclass(frozen=True)
class ChainConfig:
    steps: int = 1000  # tiny steps that must run one after another
    rows: int = 8  # rows of x in each step: x is (rows, width)
    width: int = 128  # W is (width, width)
    cpu_threads: int | None = 1  # steady on a busy machine; None: torch's default (all cores)
    budget_s: float = SECTION_BUDGET_S  # the whole section, warm-up calls included

    def __post_init__(self) -> None:
        _check_sizes((self.steps, self.rows, self.width), "steps, rows and width")
        _check_threads(self.cpu_threads)
        _check_budget(self.budget_s)

    @property
    def flops(self) -> int:
        """Multiply-adds of the matmuls counted as 2 FLOPs each; identical for both shapes."""
        return 2 * self.steps * self.rows * self.width * self.width


@dataclass(frozen=True)
class ChainPoint:
    device: str
    shape: Shape
    measurement: Measurement


@dataclass(frozen=True)
class ChainResult:
    config: ChainConfig
    points: tuple[ChainPoint, ...]
    gpu: str | None

    def time_s(self, device: str, shape: Shape) -> float | None:
        point = next((p for p in self.points if p.device == device and p.shape == shape), None)
        return None if point is None else point.measurement.median_s

    def per_step_s(self, device: str) -> float | None:
        """Seconds one tiny step of the chain costs on `device`: mostly overhead, not arithmetic."""
        chain = self.time_s(device, "chain")
        return None if chain is None else chain / self.config.steps

    def gpu_speedup(self, shape: Shape) -> float | None:
        """CPU time / GPU time for one shape: far above 1 for the big op, near or below 1 for the chain."""
        if self.gpu is None:
            return None
        cpu, gpu = self.time_s(CPU, shape), self.time_s(self.gpu, shape)
        return None if cpu is None or gpu is None else cpu / gpu


def chain_of_steps(x: torch.Tensor, w: torch.Tensor, steps: int) -> torch.Tensor:
    """x = tanh(x @ W), `steps` times: each step needs the previous one, so none can overlap."""
    for _ in range(steps):
        x = torch.tanh(x @ w)
    return x


def run_chain(
    config: ChainConfig = ChainConfig(),
    *,
    devices: Sequence[str] | None = None,
    hooks: JobHooks = JobHooks(),
    make: TensorMaker = random_tensor,
) -> ChainResult:
    """The same arithmetic twice per device: one (steps*rows, width) @ W, and `steps` dependent
    (rows, width) @ W products. Both apply tanh to the same number of values."""
    gpu = pick_gpu(devices)
    names = [CPU] + ([gpu] if gpu else [])
    total = 2 * len(names)
    per_point_s = config.budget_s / total
    points: list[ChainPoint] = []
    with _holding(names, hooks):
        for name in names:
            device = torch.device(name)
            require_memory(LIVE_COPIES * config.steps * config.rows * config.width, device,
                           f"{config.steps} steps of {config.rows} rows by {config.width}")
            w = make((config.width, config.width), device) / math.sqrt(config.width)  # keeps tanh out of saturation
            x = make((config.rows, config.width), device)
            wide = make((config.steps * config.rows, config.width), device)
            jobs: list[tuple[Shape, Callable[[], object]]] = [
                ("one op", lambda: torch.tanh(wide @ w)),
                ("chain", lambda: chain_of_steps(x, w, config.steps)),
            ]
            for shape, fn in jobs:
                hooks.check_cancel()
                with torch_threads(config.cpu_threads if name == CPU else None):
                    m = measure(fn, device, budget_s=per_point_s)
                points.append(ChainPoint(name, shape, m))
                partial = ChainResult(config, tuple(points), gpu)
                hooks.report(Progress(len(points), total, f"{shape} on {name}", partial))
            del w, x, wide
    return ChainResult(config, tuple(points), gpu)


# 3. The timing bug ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimingBugConfig:
    cpu_size: int = 1024  # n for the CPU product: both clocks agree there
    gpu_size: int = 8192  # n for the GPU product: large, so the real work dwarfs the launch
    repeats: int = 5  # single calls per reading, as a student's cell would time it
    cpu_threads: int | None = 1  # steady on a busy machine; None: torch's default (all cores)
    budget_s: float = SECTION_BUDGET_S  # the whole section; repeats usually end it sooner

    def __post_init__(self) -> None:
        _check_sizes((self.cpu_size, self.gpu_size, self.repeats), "sizes and repeats")
        _check_threads(self.cpu_threads)
        _check_budget(self.budget_s)


@dataclass(frozen=True)
class SyncPoint:
    device: str
    size: int
    unsynced: Measurement  # clock read right after the call returned: wrong on a GPU
    synced: Measurement  # clock read after waiting for the device: the real time

    @property
    def ratio(self) -> float:
        """Real time / measured-without-waiting: about 1 on a CPU, often hundreds on a GPU."""
        return self.synced.median_s / max(self.unsynced.median_s, 1e-12)


@dataclass(frozen=True)
class TimingBugResult:
    points: tuple[SyncPoint, ...]
    gpu: str | None

    def point(self, device: str) -> SyncPoint | None:
        return next((p for p in self.points if p.device == device), None)


def _paired_calls(fn: Callable[[], object], device: torch.device, *, repeats: int, budget_s: float,
                  first_call_s: float) -> tuple[Measurement, Measurement]:
    """Time single calls the way a notebook cell times one line: alternately without and with a
    synchronize, so a burst of load from other programs hits both readings alike.

    Not `measure(sync=False)`: its block size comes from an unsynchronized probe, so on a GPU it
    would queue hundreds of big products and then wait seconds for them to drain.
    """
    unsynced: list[float] = []
    synced: list[float] = []
    start = clock.now(device)
    while len(synced) < repeats and (not synced or clock.now(device) - start < budget_s):
        unsynced.append(time_block(fn, 1, device, sync=False))  # drains the device afterwards, untimed
        synced.append(time_block(fn, 1, device, sync=True))
    return (Measurement(tuple(unsynced), 1, first_call_s, synchronized=False),
            Measurement(tuple(synced), 1, first_call_s, synchronized=True))


def run_timing_bug(
    config: TimingBugConfig = TimingBugConfig(),
    *,
    devices: Sequence[str] | None = None,
    hooks: JobHooks = JobHooks(),
    make: TensorMaker = random_tensor,
) -> TimingBugResult:
    """Per device: one warm-up product, then single calls timed alternately without and with a synchronize."""
    gpu = pick_gpu(devices)
    plan = [(CPU, config.cpu_size)] + ([(gpu, config.gpu_size)] if gpu else [])
    per_device_s = config.budget_s / len(plan)
    points: list[SyncPoint] = []
    with _holding([name for name, _ in plan], hooks):
        for name, size in plan:
            hooks.check_cancel()
            device = torch.device(name)
            require_memory(LIVE_COPIES * size * size, device, f"n = {size}")
            a = make((size, size), device)
            fn = lambda: a @ a  # noqa: E731
            with torch_threads(config.cpu_threads if name == CPU else None):
                first = time_block(fn, 1, device)
                unsynced, synced = _paired_calls(fn, device, repeats=config.repeats, budget_s=per_device_s,
                                                 first_call_s=first)
            del a, fn
            points.append(SyncPoint(name, size, unsynced, synced))
            hooks.report(Progress(len(points), len(plan), f"n = {size} on {name}", TimingBugResult(tuple(points), gpu)))
    return TimingBugResult(tuple(points), gpu)


# 4. First-call overhead -------------------------------------------------------------------------


@dataclass(frozen=True)
class FirstCallConfig:
    sizes: tuple[int, ...] = (64, 1024)  # small first: it pays the process's one-time set-up
    cpu_threads: int | None = 1  # steady on a busy machine; None: torch's default (all cores)
    budget_s: float = SECTION_BUDGET_S  # timed products in both processes, not the fresh one's start-up

    def __post_init__(self) -> None:
        _check_sizes(self.sizes, "matrix sizes")
        _check_threads(self.cpu_threads)
        _check_budget(self.budget_s)


@dataclass(frozen=True)
class FirstCallPoint:
    device: str
    size: int
    fresh: Measurement  # in a brand-new Python process: its first_call_s is truly cold
    here: Measurement  # in this already-running process: often warm from earlier work

    @property
    def cold_ratio(self) -> float:
        """Cold first call / warmed median, both from the fresh process (one run, one ratio)."""
        return self.fresh.first_call_s / self.fresh.median_s

    @property
    def here_ratio(self) -> float:
        return self.here.first_call_s / self.here.median_s


@dataclass(frozen=True)
class FirstCallResult:
    points: tuple[FirstCallPoint, ...]
    gpu: str | None


def run_first_call(
    config: FirstCallConfig = FirstCallConfig(),
    *,
    devices: Sequence[str] | None = None,
    hooks: JobHooks = JobHooks(),
    make: TensorMaker = random_tensor,
    fresh: FreshRunner = run_in_fresh_process,
) -> FirstCallResult:
    """First a new Python process times each size (so the first call is really cold), then this
    process times the same sizes (whose first call is cold only if nothing ran here before)."""
    gpu = pick_gpu(devices)
    names = [CPU] + ([gpu] if gpu else [])
    plan = [(name, size) for name in names for size in config.sizes]
    per_point_s = config.budget_s / (2 * len(plan))
    total = 1 + len(plan)
    points: list[FirstCallPoint] = []
    for name in names:
        require_memory(LIVE_COPIES * max(config.sizes) ** 2, torch.device(name), f"n = {max(config.sizes)}")
    with _holding(names, hooks):
        hooks.check_cancel()
        hooks.report(Progress(0, total, "starting a fresh Python process", FirstCallResult((), gpu)))
        cold = fresh(config.sizes, names, per_point_s, config.cpu_threads)
        hooks.report(Progress(1, total, "timed in a fresh Python process", FirstCallResult((), gpu)))
        for name, size in plan:
            hooks.check_cancel()
            if (name, size) not in cold:
                raise DashboardError(f"the fresh process returned no timing for n = {size} on {name}")
            device = torch.device(name)
            a = make((size, size), device)
            with torch_threads(config.cpu_threads if name == CPU else None):
                here = measure(lambda: a @ a, device, budget_s=per_point_s)
            del a
            points.append(FirstCallPoint(name, size, cold[(name, size)], here))
            hooks.report(Progress(1 + len(points), total, f"n = {size} on {name}", FirstCallResult(tuple(points), gpu)))
    return FirstCallResult(tuple(points), gpu)


# 5. Location is part of the value ---------------------------------------------------------------


@dataclass(frozen=True)
class LocationResult:
    gpu: str | None  # None: nothing to mix the CPU with on this machine
    error: str | None = None  # torch's own message for a_cpu @ a_gpu, exactly as raised
    error_type: str | None = None  # e.g. 'RuntimeError'
    fixed_device: str | None = None  # where a_cpu.to(a_gpu.device) @ a_gpu ended up

    @property
    def refused(self) -> bool:
        return self.error is not None


def run_location(
    *,
    devices: Sequence[str] | None = None,
    make: TensorMaker = random_tensor,
    multiply: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = torch.matmul,
) -> LocationResult:
    """Multiply a CPU tensor by a GPU tensor and keep torch's real complaint, then do it right.

    Not timed and only 2 x 2, so it takes no device lock and cannot disturb anyone's timing.
    """
    gpu = pick_gpu(devices)
    if gpu is None:
        return LocationResult(gpu=None)
    a_cpu = make((2, 2), torch.device(CPU))
    a_gpu = make((2, 2), torch.device(gpu))
    error: str | None
    error_type: str | None
    try:
        multiply(a_cpu, a_gpu)
    except (RuntimeError, TypeError, ValueError) as exc:
        error, error_type = str(exc), type(exc).__name__
    else:
        error = error_type = None
    fixed = multiply(a_cpu.to(a_gpu.device), a_gpu)
    return LocationResult(gpu, error, error_type, device_key(fixed.device))


# All sections -------------------------------------------------------------------------------------

UNTIMED_SECTIONS = frozenset({"location"})  # 2 x 2 and not timed: needs no device lock


def section_devices(key: str, devices: Sequence[str] | None = None) -> list[str]:
    """The devices section `key` times, and so holds: the CPU and the first GPU if any; none if untimed.

    A page or the CLI holds these around the section (to show the line and enforce the cap); the
    section's own hold of the same devices in the same thread then passes straight through.
    """
    if key in UNTIMED_SECTIONS:
        return []
    gpu = pick_gpu(devices)
    return [CPU] + ([gpu] if gpu else [])


SectionRunner = Callable[[JobHooks], object]


def section_runners(
    budget_s: float = SECTION_BUDGET_S,
    devices: Sequence[str] | None = None,
    *,
    marbles: MarblesConfig | None = None,
    chain: ChainConfig | None = None,
    timing_bug: TimingBugConfig | None = None,
    first_call: FirstCallConfig | None = None,
) -> dict[str, SectionRunner]:
    """Every section in page order, each with its given config or its default sizes and `budget_s`:
    the page passes its settings, the CLI and the benchmark take the defaults."""
    marbles = marbles or MarblesConfig(budget_s=budget_s)
    chain = chain or ChainConfig(budget_s=budget_s)
    timing_bug = timing_bug or TimingBugConfig(budget_s=budget_s)
    first_call = first_call or FirstCallConfig(budget_s=budget_s)
    return {
        "marbles": lambda hooks: run_marbles(marbles, devices=devices, hooks=hooks),
        "chain": lambda hooks: run_chain(chain, devices=devices, hooks=hooks),
        "timing_bug": lambda hooks: run_timing_bug(timing_bug, devices=devices, hooks=hooks),
        "first_call": lambda hooks: run_first_call(first_call, devices=devices, hooks=hooks),
        "location": lambda hooks: run_location(devices=devices),
    }
