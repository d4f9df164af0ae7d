"""A roofline run: measure each series' roofs, time the sweep, fit the model, predict and measure the crossover.

`run_roofline(config, hooks)` holds its devices through `core.platform.jobs.run_job` like the
Matmul race, measures each constant REPEATS times with the series' probes taking turns
(core.roofline.spread makes them a constant with its spread and its noisy flag), times every size
with the race's own paired rounds (`core.matmul.paired.time_interleaved`),
finds the measured crossover by the race's own rule (`core.matmul.crossover.crossover_of` on its verdicts),
and returns the result record (`core.results.roofline.RooflineRun`) that the CLI prints, the page
draws and the store saves. With a GPU the comparison is the GPU against the CPU; without one it is
all CPU threads against one, so the prediction can be checked on any machine.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from core.errors import DashboardError
from core.matmul.crossover import comparisons, crossover_of, sweep_verdicts
from core.matmul.config import MatmulOptions, SweepConfig
from core.matmul.guards import rate_refusal
from core.matmul.out_of_memory import RanOutOfMemory
from core.matmul.paired import time_interleaved
from core.matmul.plan import plan_series
from core.matmul.series import DTYPES, Series
from core.platform import timing
from core.platform.hardware import inspect_machine
from core.results.machine import Machine, unknown_machine
from core.platform.jobs import JobHooks, Progress, RunningJob, run_job
from core.platform.machine_load import cpu_reading, others_between, usable_cores
from core.platform.units import number, quantity
from core.results.crossover import Crossover, Verdict
from core.results.matmul import MatmulPoint
from core.results.roofline import DeviceRoofs, RooflinePoint, RooflineRun, Spread
from core.roofline import probes, theory
from core.roofline.model import Bound, RooflineModel, intensity, model_of, predict_crossover
from core.roofline.spread import (COPIES, REPEATS, THEORY_BELOW, THEORY_MARGIN, constant, flags, others_over,
                                  spare_cores, spread_of)

DEFAULT_SIZES = (16, 32, 64, 128, 256, 512, 1024)
GPU_SIZES = (2048, 4096)  # added when a GPU is chosen: its crossover and its peak lie higher
MAX_BUDGET_S = 60.0


@dataclass(frozen=True)
class RooflineConfig:
    """What to measure. The default (0.2 s per measurement) answers in about 10 s on a 2-core CPU."""

    devices: tuple[str, ...] = ("cpu",)
    dtype: str = "float32"
    budget_s: float = 0.2  # seconds per measurement: each roof probe and each size of each series
    sizes: tuple[int, ...] = DEFAULT_SIZES

    def __post_init__(self) -> None:
        if not self.devices:
            raise DashboardError("choose at least one device")
        if self.dtype not in DTYPES:
            raise DashboardError(f"unknown dtype {self.dtype!r}; choose one of: {', '.join(DTYPES)}")
        if not (0 < self.budget_s <= MAX_BUDGET_S):
            raise DashboardError(f"the budget per measurement must be between 0 and {MAX_BUDGET_S:.0f} s, "
                                 f"got {self.budget_s}")
        if not self.sizes or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in self.sizes):
            raise DashboardError(f"matrix sizes must be whole numbers of at least 1, got {list(self.sizes)}")
        object.__setattr__(self, "sizes", tuple(sorted(set(self.sizes))))

    def to_dict(self) -> dict[str, Any]:
        return {"devices": list(self.devices), "dtype": self.dtype, "budget_s": self.budget_s,
                "sizes": list(self.sizes)}


def plan(config: RooflineConfig) -> tuple[list[Series], tuple[Series, Series] | None]:
    """The series to measure and the (challenger, baseline) pair whose crossover is predicted.

    The Matmul race's own planning: with a GPU, the GPU against the CPU with all its threads;
    CPU alone, all threads against one (no pair on a one-core machine).
    """
    cores = os.cpu_count() or 1
    gpu = any(not d.startswith("cpu") for d in config.devices)
    threads: tuple[int | None, ...] = (None,) if gpu else tuple(dict.fromkeys((1, cores)))
    series = list(plan_series(SweepConfig(sizes=config.sizes, devices=config.devices, dtypes=(config.dtype,),
                                          threads=threads)).series)
    pairs = comparisons(series)
    by_label = {s.label: s for s in series}
    return series, ((by_label[pairs[0][0]], by_label[pairs[0][1]]) if pairs else None)


Probe = Callable[[], float]  # one repeat's figure of one constant


def _probes(s: Series, budget_s: float) -> dict[str, Probe]:
    """The repeated probes of one series, each with its share of the per-measurement budget."""
    device, dtype = torch.device(s.device), DTYPES[s.dtype]
    share = budget_s / REPEATS
    out: dict[str, Probe] = {
        "bandwidth_gbs": functools.partial(probes.bandwidth_gbs, device, dtype, budget_s=share),
        "launch_s": functools.partial(probes.launch_s, device, dtype, budget_s=share),
    }
    if device.type == "cpu" and (s.threads or torch.get_num_threads()) > 1:
        out["wake_s"] = functools.partial(probes.wake_s, s.threads or torch.get_num_threads(), budget_s=share)
    if device.type == "cuda":  # copy rates: repeated in the rounds like the rest, buffers made once per series
        copies = probes.Copies(device)
        for pinned in (False, True):
            for direction in probes.DIRECTIONS:
                name = f"{direction}{'_pinned' if pinned else ''}_gbs"
                out[name] = functools.partial(copies.rate_gbs, direction, pinned=pinned, budget_s=share)
    return out


@dataclass
class _Repeats:
    """What the rounds gathered for one constant of one series: its figures, and the CPU others used meanwhile."""

    values: list[float] = field(default_factory=list)
    windows: list[tuple[float | None, float]] = field(default_factory=list)  # (others' cores, seconds) per repeat

    def spread(self, name: str) -> Spread:
        return spread_of(name, self.values, others_over(self.windows))


def _timed(probe: Probe) -> tuple[float, float | None, float]:
    """(the probe's figure, cores others used meanwhile, seconds it took)."""
    before = cpu_reading()
    value = probe()
    after = cpu_reading()
    seconds = after.at_s - before.at_s if before is not None and after is not None else 0.0
    return value, others_between(before, after), seconds


def probe_rounds(series: Sequence[Series], budget_s: float, job: RunningJob | None = None,
                 total: int = 0) -> tuple[dict[str, dict[str, _Repeats]], bool]:
    """Every series' probes, REPEATS rounds of them, the series taking turns (A, B, B, A, ...).

    Returns {series label: {constant: its repeats}} and whether a stop was asked (then with the
    rounds finished so far; at least one, so every series measured has figures).
    """
    plans = {s.label: _probes(s, budget_s) for s in series}
    found: dict[str, dict[str, _Repeats]] = {s.label: {name: _Repeats() for name in plans[s.label]} for s in series}
    order = list(series)
    for r in range(REPEATS):
        if job is not None:
            if r > 0 and job.stop_requested():
                return found, True
            job.report(Progress(r, total, f"measuring the roofs (round {r + 1} of {REPEATS})"))
        for s in order:
            with timing.torch_threads(s.threads if s.device == "cpu" else None):
                for name, probe in plans[s.label].items():
                    value, others, seconds = _timed(probe)
                    found[s.label][name].values.append(value)
                    found[s.label][name].windows.append((others, seconds))
        order.reverse()
    return found, False


def roofs_of(s: Series, repeats: dict[str, _Repeats]) -> DeviceRoofs:
    """One series' roofs from its repeats (a GPU's copy rates among them), and its theoretical peak."""
    device = torch.device(s.device)
    values = {name: constant(name, r.values) for name, r in repeats.items() if r.values}
    spreads = tuple(r.spread(name) for name, r in repeats.items() if r.values)
    threads = s.threads or torch.get_num_threads()  # what its probes ran with (timing.torch_threads)
    copies = {name: values.get(name) for name in COPIES} if device.type == "cuda" else {}
    if device.type == "cuda":
        peak = theory.cuda_peak(device.index or 0, s.dtype, tf32=bool(s.tf32))
    elif device.type == "cpu":
        peak = theory.cpu_peak(threads, s.dtype)
    else:
        peak = theory.TheoreticalPeak(None, f"unknown on {device.type}")
    noisy, notes = flags(spreads, spare_cores(usable_cores(), threads if device.type == "cpu" else None))
    return DeviceRoofs(device=s.device, dtype=s.dtype, series=s.label,
                       threads=threads if device.type == "cpu" else None,
                       peak_gflops=None, theoretical_gflops=peak.gflops, theoretical_note=peak.note,
                       bandwidth_gbs=values.get("bandwidth_gbs"), launch_s=values.get("launch_s"),
                       wake_s=values.get("wake_s"), spreads=spreads, noisy=noisy, notes=notes, **copies)


def measure_roofs(s: Series, budget_s: float) -> DeviceRoofs:
    """The roofs of one series alone (its probes repeated, no other series to alternate with)."""
    found, _ = probe_rounds([s], budget_s)
    return roofs_of(s, found[s.label])


def point_of(r: MatmulPoint, model: RooflineModel | None) -> RooflinePoint:
    return RooflinePoint(
        device=r.device, dtype=r.dtype, n=r.n, gflops=r.gflops, intensity=intensity(r.n, r.dtype),
        series=r.label, median_s=r.median_s, predicted_s=None if model is None else model.time_s(r.n),
        end_to_end_s=r.end_to_end_s if r.is_gpu else None,
        predicted_end_to_end_s=None if model is None or not r.is_gpu else model.end_to_end_s(r.n))


def _sweep(job: RunningJob, series: Sequence[Series], config: RooflineConfig, notes: list[str],
           done: int, total: int) -> tuple[list[MatmulPoint], bool]:
    """Every size, smallest first, its series timed in alternation (the Matmul race's paired rounds);
    a size that would overrun the budget or not fit is skipped for that series."""
    results: list[MatmulPoint] = []
    # the best rate so far: one stalled size (a descheduled thread) must not skip the rest
    best: dict[Series, float] = {}
    for n in config.sizes:
        if job.stop_requested():
            return results, True
        job.report(Progress(done, total, f"timing n={n:,} on {len(series)} series in alternation"))
        done += 1
        ready = []
        for s in series:
            refusal = rate_refusal(s, n, best.get(s), config.budget_s)
            if refusal is None:
                ready.append(s)
            else:
                notes.append(refusal)
        if not ready:
            continue
        options = MatmulOptions(budget_s=config.budget_s, unsynced=False, end_to_end=any(s.is_gpu for s in ready),
                                check_error=False)
        try:
            points = time_interleaved(ready, n, options)
        except RanOutOfMemory as exc:
            notes.append(f"n={n:,} skipped: {exc}")
            continue
        for s, point in zip(ready, points):
            best[s] = max(best.get(s, 0.0), (point.gflops or 0.0) * 1e9)  # FLOP/s
            results.append(point)
    return results, False


def run_roofline(config: RooflineConfig, hooks: JobHooks | None = None) -> RooflineRun:
    """Measure, sweep, fit, predict. A stopped run returns what it measured, marked stopped."""
    series, pair = plan(config)
    sizes = config.sizes + (GPU_SIZES if any(s.is_gpu for s in series) and config.sizes == DEFAULT_SIZES else ())
    config = replace(config, sizes=sizes)
    machine = inspect_machine().record()
    notes: list[str] = []
    total = REPEATS + len(config.sizes)
    roofs: list[DeviceRoofs] = []
    stopped, results = False, list[MatmulPoint]()
    with run_job(sorted({s.device for s in series}), hooks, label="roofline", measure_load=True) as job:
        start = time.perf_counter()
        stopped = job.stop_requested()
        if not stopped:
            found, stopped = probe_rounds(series, config.budget_s, job, total)
            roofs = [roofs_of(s, found[s.label]) for s in series]
        if not stopped:
            results, stopped = _sweep(job, series, config, notes, REPEATS, total)
        wall = time.perf_counter() - start
    run = assemble(config, series, pair, roofs, results, notes=notes, stopped=stopped, wall_s=wall, machine=machine)
    return replace(run, load=job.load)


def peak_of(s: Series, results: Sequence[MatmulPoint], roofs: DeviceRoofs) -> DeviceRoofs:
    """The series' roofs with its compute roof: the best product's median rate, its spread the rates at that
    product's quartiles (its samples are its repeats), flagged like the probed constants."""
    timed = [r for r in results if r.series == s.label and r.gflops is not None and r.median_s]
    if not timed:
        return replace(roofs, peak_gflops=None)
    top = max(timed, key=lambda r: r.gflops or 0.0)
    flops = 2 * top.n**3 / 1e9
    q1, q3 = top.q1_s or top.median_s or 0.0, top.q3_s or top.median_s or 0.0
    peak = Spread(name="peak_gflops", low=flops / q3 if q3 else None, high=flops / q1 if q1 else None,
                  repeats=top.samples, others_cores=top.others_cores)
    noisy, notes = flags([peak], spare_cores(usable_cores(), roofs.threads))
    extra = []
    if above_theory(peak, top.gflops, roofs.theoretical_gflops):
        extra.append(f"{THEORY_BELOW}: measured {quantity(top.gflops, 'GFLOP/s')} against "
                     f"{number(roofs.theoretical_gflops)} in theory; the theoretical peak uses the base clock, "
                     "or a guess of it")
    return replace(roofs, peak_gflops=top.gflops, spreads=(*(roofs.spreads or ()), peak),
                   noisy=(*(roofs.noisy or ()), *noisy), notes=(*(roofs.notes or ()), *notes, *extra))


def above_theory(peak: Spread, measured: float | None, theory: float | None) -> bool:
    """Is the measured peak above theory by more than noise: beyond THEORY_MARGIN, and even its slower quartile
    above theory? (83.31 against 83.08 GFLOP/s is 0.3 %: a timing's noise, not a boost clock.)"""
    if not theory or measured is None or measured <= theory * (1 + THEORY_MARGIN):
        return False
    return peak.low is None or peak.low > theory


def crossover_bounds(challenger: DeviceRoofs, baseline: DeviceRoofs) -> tuple[int | None, int | None, int | None]:
    """(predicted, lowest, highest) crossover: from the constants, then from the ends of their spreads
    that favour the challenger most and least. None: no crossover up to the model's search range."""
    def at(fast: Bound, slow: Bound) -> int | None:
        a, b = model_of(challenger, fast), model_of(baseline, slow)
        value = None if a is None or b is None else predict_crossover(a, b)
        return None if value is None else max(1, round(value))
    return at("value", "value"), at("fast", "slow"), at("slow", "fast")


def assemble(config: RooflineConfig, series: Sequence[Series], pair: tuple[Series, Series] | None,
             roofs: Sequence[DeviceRoofs], results: Sequence[MatmulPoint], *, notes: Sequence[str] = (),
             stopped: bool = False, wall_s: float | None = None, machine: Machine | None = None) -> RooflineRun:
    """The record from what was measured: each series' peak is its best product, then the model's predictions."""
    by_label = {r.series: r for r in roofs}
    fitted = {s.label: peak_of(s, results, by_label[s.label]) for s in series if s.label in by_label}
    models = {label: model_of(r) for label, r in fitted.items()}
    points = tuple(point_of(r, models.get(r.label)) for r in results)
    predicted = low = high = None
    verdicts, measured = None, None
    if pair is not None:
        challenger, baseline = (fitted.get(p.label) for p in pair)
        if challenger is not None and baseline is not None:
            predicted, low, high = crossover_bounds(challenger, baseline)
        verdicts, measured = measured_crossover(results, pair)
    return RooflineRun(
        devices_roofs=tuple(fitted.values()), points=points, predicted_crossover_n=predicted,
        verdicts=verdicts, measured_crossover=measured, challenger=pair[0].label if pair else None,
        baseline=pair[1].label if pair else None, notes=tuple(notes), stopped=stopped, wall_s=wall_s,
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), settings=config.to_dict(),
        machine=machine if machine is not None else unknown_machine(), predicted_crossover_low=low,
        predicted_crossover_high=None if low is None else high)


def measured_crossover(results: Sequence[MatmulPoint],
                       pair: tuple[Series, Series]) -> tuple[tuple[Verdict, ...], Crossover]:
    """The Matmul race's crossover rule on the sweep (core.matmul.crossover.crossover_of): a call per size
    from the samples, and the crossover record with its call and a size only where it is found."""
    labels = (pair[0].label, pair[1].label)
    verdicts = tuple(sweep_verdicts([labels], results))
    return verdicts, crossover_of(results, *labels, verdicts=verdicts)
