"""A sweep over matrix sizes and series (device x dtype x threads x TF32), with guards and the crossover.

The page builds a `SweepConfig` from its widgets and the CLI from its flags; `run_sweep` holds
the devices it times through `core.platform.jobs.run_job`, reports each step as a `Progress`
whose item is a `SweepEvent`, can be stopped between sizes, and never lets one size sink the sweep: a size that does not fit in memory, runs out of memory, or
would blow the time budget is skipped with a message and the sweep goes on.

The series of one size are timed in alternation (core.matmul.paired), and each comparison gets a
verdict per size (core.matmul.verdict) and one crossover record with a call (core.matmul.crossover),
so a busy machine reads "cannot tell" rather than a crossover that the next run contradicts.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd
import torch

from core.matmul import verdict
from core.matmul.crossover import comparisons, sweep_crossovers, sweep_verdicts
from core.matmul.paired import time_interleaved
from core.matmul.round_memory import round_refusals
from core.platform.cache import check_cache
from core.platform.devices import device_key, resolve_device
from core.errors import DashboardError
from core.platform.hardware import inspect_machine
from core.platform.jobs import JobHooks, Progress, run_job
from core.platform.machine_load import default_threads, usable_cores
from core.results import table
from core.results.load import MachineLoad
from core.results.machine import Machine
from core.results.jsonio import dumps
from core.results.matmul import MatmulPoint, MatmulSweep, SkippedSize
from core.matmul.engine import (
    DTYPES, DoesNotFit, MatmulOptions, RanOutOfMemory, Series, check_dtype, check_memory,
    has_tf32, largest_fitting_size, memory_need, probe_seconds, supported_dtypes,
)

MIN_SIZE = 16  # smallest n the page offers; the CLI accepts any n >= 1
MAX_BUDGET_S = 600.0  # 10 minutes per size: beyond that a sweep is not interactive any more
CALIBRATION_N = 128  # the time guard probes sizes down to this one for a series with no history
GUARD_CALLS = 2  # a size costs at least its warm-up call and one timed call
RESULT_COLUMNS = [c.key for c in table.columns(MatmulPoint)]  # the results frame's columns: the point's, clock flattened
TF32_CHOICES: dict[str, tuple[bool, ...]] = {"off": (False,), "on": (True,), "both": (False, True)}  # page radio, CLI --tf32


def log_sizes(lo: int, hi: int, per_doubling: int = 1) -> tuple[int, ...]:
    """Sizes from lo to hi evenly spaced on a log scale, `per_doubling` of them per factor 2."""
    if lo < 1 or hi < lo:
        raise DashboardError(f"need 1 <= smallest size <= largest size, got {lo} and {hi}")
    if per_doubling < 1:
        raise DashboardError(f"points per doubling must be at least 1, got {per_doubling}")
    steps = round(per_doubling * math.log2(hi / lo))
    sizes = {round(lo * 2 ** (k / per_doubling)) for k in range(steps + 1)}
    return tuple(sorted(s for s in sizes | {lo} if s <= hi))


def size_options(max_n: int) -> list[int]:
    """Powers of two from MIN_SIZE up to max_n, for the page's size slider."""
    options, n = [], MIN_SIZE
    while n <= max_n:
        options.append(n)
        n *= 2
    return options


def tf32_settings(choice: str) -> tuple[bool, ...]:
    """The TF32 settings a page or CLI choice ("off", "on", "both") asks to compare."""
    try:
        return TF32_CHOICES[choice]
    except KeyError:
        raise DashboardError(f"TF32 must be one of {', '.join(TF32_CHOICES)}, not {choice!r}") from None


def tf32_unavailable(devices: Sequence[str]) -> str | None:
    """Why the TF32 choice would change nothing for these devices (the page disables it with this), else None."""
    gpus = [device_key(resolve_device(d)) for d in devices if d.startswith("cuda")]
    if not gpus:
        return "only CUDA float32 uses TF32, and no CUDA GPU is among the devices"
    if not any(has_tf32(torch.device(g)) for g in gpus):
        return (f"{', '.join(gpus)} {'has' if len(gpus) == 1 else 'have'} no TF32 tensor cores (compute capability "
                "8.0 and newer have them): float32 is timed with TF32 off")
    return None


def thread_choices() -> list[int]:
    """CPU thread counts a user may compare: 1 to the logical core count."""
    return list(range(1, (os.cpu_count() or 1) + 1))


def default_race_threads(gpu_here: bool) -> tuple[int | None, ...]:
    """The thread counts a race starts with: two series that always differ.

    Without a GPU, 1 thread against all cores (the marbles: does splitting the work pay?); "free
    cores" stays a choice, but as a default it could come to 1 thread on a busy machine and race a
    series against itself. With a GPU the race is CPU against GPU: one CPU series, the free cores.
    """
    cores = os.cpu_count() or 1
    if gpu_here or cores == 1:
        return (None,)
    return (1, cores)


def dtype_choices(devices: Sequence[str]) -> list[str]:
    """dtypes at least one of `devices` supports, in DTYPES order."""
    supported = {d for name in devices for d in supported_dtypes(resolve_device(name))}
    return [d for d in DTYPES if d in supported]


def size_choices(devices: Sequence[str], dtypes: Sequence[str], *, end_to_end: bool = False,
                 cache: str = "warm", ceiling: int = 1 << 17) -> list[int]:
    """Powers of two from MIN_SIZE up to the largest that fits now on every chosen device.

    At least [MIN_SIZE], so a slider always has something to show; beyond that, a size
    the memory guard would refuse is not offered (cold caches: with the flush buffer counted).
    """
    largest = ceiling
    for name in devices:
        device = resolve_device(name)
        for dtype in dtypes:
            if dtype in supported_dtypes(device):
                fits = largest_fitting_size(device, dtype, size_options(largest), end_to_end=end_to_end, cache=cache)
                largest = min(largest, fits or MIN_SIZE)
    return size_options(max(largest, MIN_SIZE))


@dataclass(frozen=True)
class SweepConfig:
    """What to time. Defaults finish in well under 20 s on a 2-core CPU (see README)."""

    sizes: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048)  # n of each n x n @ n x n product
    devices: tuple[str, ...] = ("cpu",)  # 'cpu', 'cuda', 'cuda:1', 'mps'; the page/CLI add the GPU when present
    dtypes: tuple[str, ...] = ("float32",)  # keys of core.matmul.engine.DTYPES
    threads: tuple[int | None, ...] = (None,)  # CPU thread counts to compare; None: the cores free when it starts
    tf32: tuple[bool, ...] = (False,)  # TF32 settings to compare for CUDA float32
    budget_s: float = 1.0  # seconds per size and series, warm-up included; also the time guard's limit
    unsynced: bool = True  # also show the "forgot to synchronize" figure on CUDA/MPS
    end_to_end: bool = False  # also time the copies to and from the GPU
    check_error: bool = True  # relative error against a float64 CPU reference on a few rows
    seed: int = 0  # same seed, same matrices
    cache: str = "warm"  # "cold": caches evicted before each timed call, outside the clock (core.platform.cache)

    def __post_init__(self) -> None:
        if not self.sizes:
            raise DashboardError("give at least one matrix size")
        for n in self.sizes:
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise DashboardError(f"matrix sizes must be whole numbers of at least 1, got {n!r}")
        object.__setattr__(self, "sizes", tuple(sorted(set(self.sizes))))  # the time guard needs ascending
        if not self.devices:
            raise DashboardError("choose at least one device")
        if not self.dtypes:
            raise DashboardError("choose at least one dtype")
        for dtype in self.dtypes:
            if dtype not in DTYPES:
                raise DashboardError(f"unknown dtype {dtype!r}; choose one of: {', '.join(DTYPES)}")
        if not self.threads and "cpu" in self.devices:
            raise DashboardError("choose at least one CPU thread count")
        if any(t is not None and t < 1 for t in self.threads):
            raise DashboardError(f"thread counts must be at least 1, got {list(self.threads)}")
        if not self.tf32:
            raise DashboardError("choose TF32 off, on, or both")
        if not (0 < self.budget_s <= MAX_BUDGET_S):
            raise DashboardError(f"the time budget per size must be between 0 and {MAX_BUDGET_S:.0f} s, got {self.budget_s}")
        check_cache(self.cache)

    @property
    def options(self) -> MatmulOptions:
        return MatmulOptions(budget_s=self.budget_s, unsynced=self.unsynced, end_to_end=self.end_to_end,
                             check_error=self.check_error, seed=self.seed, cache=self.cache)

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


@dataclass(frozen=True)
class Plan:
    """The series a config turns into on this machine, and what was left out and why."""

    series: tuple[Series, ...]
    notes: tuple[str, ...] = ()

    @property
    def devices(self) -> list[str]:
        return sorted({s.device for s in self.series})


def plan_series(config: SweepConfig, load: MachineLoad | None = None) -> Plan:
    """Resolve devices, dtypes, thread counts and TF32 settings into series, or say what is wrong.

    A dtype that one of several devices lacks (float64 on MPS) is left out there with a note;
    a dtype no chosen device supports, an absent device, or more threads than cores is an error.
    A thread count of None means the cores `load` found free (torch's current count without a
    probe), so a busy machine is not oversubscribed by default.
    """
    cores = os.cpu_count() or 1
    series: list[Series] = []
    notes: list[str] = []
    devices = list(dict.fromkeys(device_key(resolve_device(d)) for d in config.devices))
    for dtype in config.dtypes:
        if not any(dtype in supported_dtypes(torch.device(d)) for d in devices):
            check_dtype(torch.device(devices[0]), dtype)  # raises with the list of supported dtypes
    for name in devices:
        device = torch.device(name)
        for dtype in config.dtypes:
            if dtype not in supported_dtypes(device):
                notes.append(f"{dtype} is not supported on {name}; left out there")
                continue
            if device.type == "cpu":
                for threads in dict.fromkeys(config.threads):
                    count = default_threads(threads, load) or torch.get_num_threads()
                    if count > cores:
                        raise DashboardError(f"{count} threads asked for, but this machine has {cores} logical cores")
                    series.append(Series(name, dtype, threads=count))
            elif device.type == "cuda" and dtype == "float32":
                series += [Series(name, dtype, tf32=t) for t in dict.fromkeys(t and has_tf32(device) for t in config.tf32)]
                if True in config.tf32 and not has_tf32(device):
                    notes.append(f"TF32 on: {tf32_unavailable([name])}; no TF32-on series there")
            else:
                series.append(Series(name, dtype))
    if load is not None and None in config.threads and "cpu" in devices:
        used = f"{load.free_cores} thread{'s' if load.free_cores != 1 else ''}"
        notes.append(f"Free cores: other programs left {load.free_cores} of {load.cores} cores idle, so the CPU series "
                     f"with the thread count left to the dashboard used {used}.")
        if load.free_cores in config.threads:
            notes.append(f"Free cores came to {used}, the same as the {used} series, so that is one CPU line, not "
                         "a race against itself. Choose thread counts (1 and all cores) to race them.")
    unique = tuple(dict.fromkeys(series))
    if len(unique) == 1:
        notes.append(f"Only one series ({unique[0].label}): nothing to race. Choose a second thread count, "
                     "dtype or device to compare.")
    return Plan(unique, tuple(notes))


def check_sizes_fit(config: SweepConfig, plan: Plan) -> None:
    """Raise DoesNotFit for the first size that would not fit now (the CLI's up-front check)."""
    for s in plan.series:
        for n in config.sizes:
            check_memory(memory_need(torch.device(s.device), s.dtype, n, end_to_end=config.end_to_end,
                                     check_error=config.check_error, cache=config.cache))


# ---------------------------------------------------------------- progress and results


def skipped_size(series: Series, n: int, reason: str, message: str) -> SkippedSize:
    """A size of a series not timed: reason "memory" (refused before allocating), "out_of_memory"
    (failed anyway) or "time" (the guard)."""
    return SkippedSize(device=series.device, n=n, dtype=series.dtype, series=series.label, reason=reason,
                       message=message)


@dataclass(frozen=True)
class SweepEvent:
    """What a progress callback hears: about to time a step, a result, or a skip."""

    kind: str  # "timing", "result" or "skipped"
    done: int  # steps finished (timed or skipped)
    total: int
    series: Series
    n: int
    result: MatmulPoint | None = None
    skipped: SkippedSize | None = None

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0

    @property
    def message(self) -> str:
        where = f"n={self.n:,} on {self.series.label}"
        if self.kind == "timing":
            return f"timing {where} ({self.done} of {self.total} done)"
        if self.result is not None:
            return f"{where}: {(self.result.median_s or 0) * 1e3:.3g} ms, {self.result.gflops or 0:.3g} GFLOP/s"
        assert self.skipped is not None, "a skipped event carries its SkippedSize"
        return f"skipped {where}: {self.skipped.message}"

    def as_progress(self) -> Progress[SweepEvent]:
        return Progress(self.done, self.total, self.message, item=self)


def results_frame(results: Sequence[MatmulPoint]) -> pd.DataFrame:
    """One row per timed size of each series, columns RESULT_COLUMNS even when empty."""
    return pd.DataFrame([table.flat_row(r) for r in results], columns=RESULT_COLUMNS)


def throttle_notes(results: Sequence[MatmulPoint]) -> list[str]:
    """One note per series whose GPU was slowed while sizes were timed (core.platform.sensors), and one per
    series whose GPU ran at its power limit: a fact about the GPU (its speed under sustained work), not noise."""
    notes = []
    for label in dict.fromkeys(p.label for p in results if p.clock.power_limited):
        capped = ", ".join(f"{p.n:,}" for p in results if p.label == label and p.clock.power_limited)
        notes.append(f"{label}: the GPU was at its power limit while n = {capped} ran (sw_power_cap): the clock "
                     "it runs sustained work at, so those figures are its speed under load; their verdicts stand")
    for label in dict.fromkeys(p.label for p in results if p.clock.slowed):
        hot = [p for p in results if p.label == label and p.clock.slowed]
        reasons = ", ".join(dict.fromkeys(r for p in hot for r in (p.clock.throttle or "").split(", ") if r))
        sizes = ", ".join(f"{p.n:,}" for p in hot)
        notes.append(f"{label}: the GPU throttled ({reasons or 'reason not given'}) while n = {sizes} "
                     f"{'was' if len(hot) == 1 else 'were'} timed, so {'that size ran' if len(hot) == 1 else 'those sizes ran'} "
                     "below its full clock; marked in the table's 'throttled' column")
    return notes


def _span(values: Sequence[float | None], unit: str) -> str | None:
    known = [v for v in values if v is not None]
    if not known:
        return None
    lo, hi = min(known), max(known)
    return f"{lo:.0f} {unit}" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f} {unit}"


def clock_summary(results: Sequence[MatmulPoint]) -> str | None:
    """'Clock during the run: CPU 2595-2600 MHz; cuda:0 SM 1410-1980 MHz, 45-70 °C, 120-300 W', or None
    where nothing was read (older files, an OS that does not say)."""
    parts = []
    if cpu := _span([p.clock.cpu_mhz for p in results if not p.is_gpu], "MHz"):
        parts.append(f"CPU {cpu}")
    for device in dict.fromkeys(p.device for p in results if p.is_gpu):
        rows = [p for p in results if p.device == device]
        spans = [_span([p.clock.gpu_sm_mhz for p in rows], "MHz"), _span([p.clock.gpu_temperature_c for p in rows], "°C"),
                 _span([p.clock.gpu_power_w for p in rows], "W")]
        if any(spans):
            parts.append(f"{device} SM " + ", ".join(x for x in spans if x))
    return "Clock during the run: " + "; ".join(parts) if parts else None


def sweep_of(config: SweepConfig, series: Sequence[Series], results: Sequence[MatmulPoint],
             skipped: Sequence[SkippedSize] = (), *, notes: Sequence[str] = (), stopped: bool = False,
             wall_s: float | None = None, machine: Machine | None = None, finished_at: str | None = None,
             stop_reason: str = "", load: MachineLoad | None = None) -> MatmulSweep:
    """The sweep as saved, from what was measured: its verdicts and crossovers are found here, once
    (core.matmul.crossover, the rule an imported file is read by too)."""
    pairs = comparisons(series)
    verdicts = sweep_verdicts(pairs, results, cores=None if load is None else load.cores)
    crossovers = sweep_crossovers(pairs, results, end_to_end=config.end_to_end, verdicts=verdicts)
    return MatmulSweep(
        results=tuple(results), crossovers=tuple(crossovers), skipped=tuple(skipped),
        notes=(*notes, *throttle_notes(results)), settings={**config.to_dict(), "series": [s.label for s in series]},
        stopped=stopped,
        wall_s=wall_s, timed_s=sum(r.timed_s or 0.0 for r in results), finished_at=finished_at, machine=machine,
        stop_reason=stop_reason, load=load, verdicts=tuple(verdicts) if pairs else None, cache=config.cache)


def sweep_json_text(result: MatmulSweep) -> str:
    """The JSON download of a sweep: the same object as `python -m core matmul --json`, same writer."""
    return dumps(result, indent=2)


# ---------------------------------------------------------------- the time guard


def predict_seconds(history: Sequence[tuple[int, float]], n: int) -> tuple[float, int] | None:
    """(seconds per product at n, the size it was extrapolated from), or None without history.

    t grows as n^3, extrapolated from the largest measured size not above n (the nearest, since
    efficiency changes with size), or from the smallest above it if none is below.
    """
    if not history:
        return None
    below = [(m, t) for m, t in history if m <= n]
    m, t = max(below) if below else min(history)
    return t * (n / m) ** 3, m


@dataclass
class TimeGuard:
    """Per series: measured (n, seconds per product) so far, and the rule that skips a size."""

    budget_s: float
    probe: Callable[[Series, int], float]  # seconds per warm product of a size, for calibration
    history: dict[Series, list[tuple[int, float]]] = field(default_factory=dict)

    def record(self, series: Series, n: int, seconds: float) -> None:
        self.history.setdefault(series, []).append((n, seconds))

    def refuse(self, series: Series, n: int) -> str | None:
        """A message if size n would overrun the budget, else None (after probing if needed).

        With no measured size at or above n/2, smaller sizes n/2, n/4, ... (down to
        CALIBRATION_N) are probed first, smallest first, so no extrapolation spans more than
        a factor 8 in time. Each probe is itself guarded.
        """
        ladder = []
        m = n // 2
        while m >= CALIBRATION_N and not any(m <= k <= n for k, _ in self.history.get(series, [])):
            ladder.append(m)
            m //= 2
        for size in reversed(ladder):
            message = self._overrun(series, size, n)
            if message:
                return message
            self.record(series, size, self.probe(series, size))
        return self._overrun(series, n, n)

    def _overrun(self, series: Series, size: int, target: int) -> str | None:
        predicted = predict_seconds(self.history.get(series, []), size)
        if predicted is None or GUARD_CALLS * predicted[0] <= self.budget_s:
            return None
        target_s, source = predict_seconds(self.history[series], target) or predicted
        return (f"predicted {target_s:.3g} s per product (t ~ n^3 from n={source:,}), so warm-up plus one "
                f"timed product would exceed the {self.budget_s:g} s budget per size; raise the budget to time it")


# ---------------------------------------------------------------- the sweep


def _refusal(config: SweepConfig, guard: TimeGuard, s: Series, n: int) -> SkippedSize | None:
    """Why size n of series s is not timed (memory, time guard), or None: it joins the size's round."""
    try:
        check_memory(memory_need(torch.device(s.device), s.dtype, n, end_to_end=config.end_to_end,
                                 check_error=config.check_error, cache=config.cache))
        refusal = guard.refuse(s, n)
    except DoesNotFit as exc:
        return skipped_size(s, n, "memory", str(exc))
    except RanOutOfMemory as exc:  # a calibration probe
        return skipped_size(s, n, "out_of_memory", str(exc))
    return None if refusal is None else skipped_size(s, n, "time", refusal)


def run_sweep(config: SweepConfig, hooks: JobHooks | None = None) -> MatmulSweep:
    """Time every size of every series, smallest size first, the series of a size in alternation,
    holding the devices throughout.

    A bad choice is refused before waiting in line. `hooks.should_stop` (and the per-job cap)
    is checked before each size; a stopped sweep returns what it has, marked stopped. Every
    step also reaches `hooks.on_progress` (item: a SweepEvent) as it happens, so a caller that
    is interrupted mid-sweep (Streamlit's Stop) keeps the results too.
    """
    plan = plan_series(config)  # a bad choice is refused before waiting in line
    machine = inspect_machine().record()
    guard = TimeGuard(config.budget_s, lambda s, n: probe_seconds(s, n, seed=config.seed))
    results: list[MatmulPoint] = []
    skipped: list[SkippedSize] = []
    stop_reason = ""

    cores = usable_cores()
    needed = max(verdict.cores_needed(s.device != "cpu", s.threads, cores) for s in plan.series)
    with run_job(plan.devices, hooks, label="matmul sweep", measure_load=True, needed_cores=needed) as job:
        plan = plan_series(config, job.load)  # threads left to choose: the cores free now
        total = len(config.sizes) * len(plan.series)

        def emit(kind: str, s: Series, n: int, **kw: Any) -> None:
            job.report(SweepEvent(kind, len(results) + len(skipped), total, s, n, **kw).as_progress())

        start = time.perf_counter()
        for n in config.sizes:
            if job.stop_requested():  # the cap stops it like Stop does
                stop_reason = job.stop_reason()
                break
            ready: list[Series] = []
            for s in plan.series:
                emit("timing", s, n)
                skip = _refusal(config, guard, s, n)
                if skip is None:
                    ready.append(s)
                else:
                    skipped.append(skip)
                    emit("skipped", s, n, skipped=skip)
            for s, message in round_refusals(ready, n, config.options).items():  # held together in the round
                ready.remove(s)
                skipped.append(skipped_size(s, n, "memory", message))
                emit("skipped", s, n, skipped=skipped[-1])
            if not ready:
                continue
            try:
                points = time_interleaved(ready, n, config.options)
            except RanOutOfMemory as exc:
                for s in ready:
                    skipped.append(skipped_size(s, n, "out_of_memory", str(exc)))
                    emit("skipped", s, n, skipped=skipped[-1])
                continue
            for s, point in zip(ready, points):
                guard.record(s, n, point.median_s or 0.0)
                results.append(point)
                emit("result", s, n, result=point)
        wall = time.perf_counter() - start
    return sweep_of(config, plan.series, results, skipped, notes=plan.notes, stopped=bool(stop_reason), wall_s=wall,
                    machine=machine, finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    stop_reason=stop_reason, load=job.load)
