"""A roofline run: measure each series' roofs, time the sweep, fit the model, predict and measure the crossover.

`run_roofline(config, hooks)` holds its devices through `core.platform.jobs.run_job` like the
Matmul race, times every product with the race's own engine (`core.matmul.engine.time_matmul`),
and returns the result record (`core.results.roofline.RooflineRun`) that the CLI prints, the page
draws and the store saves. With a GPU the comparison is the GPU against the CPU; without one it is
all CPU threads against one, so the prediction can be checked on any machine.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from core.errors import DashboardError
from core.matmul.crossover import find_crossover
from core.matmul.engine import DTYPES, DoesNotFit, MatmulOptions, RanOutOfMemory, Series, time_matmul
from core.matmul.sweep import SweepConfig, comparisons, plan_series
from core.platform import timing
from core.platform.hardware import inspect_machine
from core.platform.jobs import JobHooks, Progress, RunningJob, run_job
from core.results.matmul import MatmulPoint
from core.results.roofline import DeviceRoofs, RooflinePoint, RooflineRun
from core.roofline import probes, theory
from core.roofline.model import RooflineModel, intensity, predict_crossover

DEFAULT_SIZES = (16, 32, 64, 128, 256, 512, 1024)
GPU_SIZES = (2048, 4096)  # added when a GPU is chosen: its crossover and its peak lie higher
MAX_BUDGET_S = 60.0
GUARD_CALLS = 2  # warm-up plus one timed call must fit in the budget


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
        return {"devices": list(self.devices), "dtype": self.dtype, "budget_s": self.budget_s, "sizes": list(self.sizes)}


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
    return series, (pairs[0] if pairs else None)


def measure_roofs(s: Series, budget_s: float) -> DeviceRoofs:
    """Bandwidth, launch cost, copy rates and the theoretical peak of one series (peak_gflops comes from the sweep)."""
    device, dtype = torch.device(s.device), DTYPES[s.dtype]
    with timing.torch_threads(s.threads if device.type == "cpu" else None) as threads:
        bandwidth = probes.bandwidth_gbs(device, dtype, budget_s=budget_s)
        launch = probes.launch_s(device, dtype, budget_s=budget_s)
        wake = probes.wake_s(threads, budget_s=budget_s) if device.type == "cpu" and threads > 1 else None
        copies: dict[str, float | None] = {}
        if device.type == "cuda":
            h2d, d2h = probes.copy_rates_gbs(device, pinned=False, budget_s=budget_s)
            ph2d, pd2h = probes.copy_rates_gbs(device, pinned=True, budget_s=budget_s)
            copies = {"h2d_gbs": h2d, "d2h_gbs": d2h, "h2d_pinned_gbs": ph2d, "d2h_pinned_gbs": pd2h}
    if device.type == "cuda":
        peak = theory.cuda_peak(device.index or 0, s.dtype, tf32=bool(s.tf32))
    elif device.type == "cpu":
        peak = theory.cpu_peak(threads, s.dtype)
    else:
        peak = theory.TheoreticalPeak(None, f"unknown on {device.type}")
    return DeviceRoofs(device=s.device, dtype=s.dtype, series=s.label, threads=threads if device.type == "cpu" else None,
                       peak_gflops=None, theoretical_gflops=peak.gflops, theoretical_note=peak.note,
                       bandwidth_gbs=bandwidth, launch_s=launch, wake_s=wake, **copies)


def model_of(roofs: DeviceRoofs) -> RooflineModel | None:
    """The model a series' roofs define; None while a roof is missing (nothing timed yet)."""
    if not roofs.peak_gflops or not roofs.bandwidth_gbs or roofs.overhead_s is None:
        return None
    return RooflineModel(roofs.overhead_s, roofs.peak_gflops, roofs.bandwidth_gbs, roofs.dtype, roofs.h2d_gbs,
                         roofs.d2h_gbs)


def point_of(r: MatmulPoint, model: RooflineModel | None) -> RooflinePoint:
    return RooflinePoint(
        device=r.device, dtype=r.dtype, n=r.n, gflops=r.gflops, intensity=intensity(r.n, r.dtype),
        series=r.label, median_s=r.median_s, predicted_s=None if model is None else model.time_s(r.n),
        end_to_end_s=r.end_to_end_s if r.is_gpu else None,
        predicted_end_to_end_s=None if model is None or not r.is_gpu else model.end_to_end_s(r.n))


def _sweep(job: RunningJob, series: Sequence[Series], config: RooflineConfig, notes: list[str],
           done: int, total: int) -> tuple[list[MatmulPoint], bool]:
    """Every size of every series, smallest first; a size that would overrun the budget is skipped."""
    results: list[MatmulPoint] = []
    best: dict[Series, float] = {}  # the best rate so far: one stalled size (a descheduled thread) must not skip the rest
    for n in config.sizes:
        for s in series:
            if job.stop_requested():
                return results, True
            job.report(Progress(done, total, f"timing n={n:,} on {s.label}"))
            done += 1
            guess = 2 * n**3 / best[s] if s in best else 0.0
            if GUARD_CALLS * guess > config.budget_s:
                notes.append(f"n={n:,} on {s.label} skipped: at least {guess:.3g} s per product (2n^3 at the best "
                             f"rate so far), so warm-up plus one timed product would overrun the {config.budget_s:g} s "
                             "budget; raise the budget to time it")
                continue
            options = MatmulOptions(budget_s=config.budget_s, unsynced=False, end_to_end=s.is_gpu, check_error=False)
            try:
                result = time_matmul(s, n, options)
            except (DoesNotFit, RanOutOfMemory) as exc:
                notes.append(f"n={n:,} on {s.label} skipped: {exc}")
                continue
            best[s] = max(best.get(s, 0.0), (result.gflops or 0.0) * 1e9)  # FLOP/s
            results.append(result)
    return results, False


def run_roofline(config: RooflineConfig, hooks: JobHooks | None = None) -> RooflineRun:
    """Measure, sweep, fit, predict. A stopped run returns what it measured, marked stopped."""
    series, pair = plan(config)
    sizes = config.sizes + (GPU_SIZES if any(s.is_gpu for s in series) and config.sizes == DEFAULT_SIZES else ())
    config = replace(config, sizes=sizes)
    machine = inspect_machine().to_dict()
    notes: list[str] = []
    total = len(series) * (1 + len(config.sizes))
    roofs: list[DeviceRoofs] = []
    stopped, results = False, list[MatmulPoint]()
    with run_job(sorted({s.device for s in series}), hooks, label="roofline", measure_load=True) as job:
        start = time.perf_counter()
        for i, s in enumerate(series):
            if job.stop_requested():
                stopped = True
                break
            job.report(Progress(i, total, f"measuring the roofs of {s.label}"))
            roofs.append(measure_roofs(s, config.budget_s))
        if not stopped:
            results, stopped = _sweep(job, series, config, notes, len(series), total)
        wall = time.perf_counter() - start
    run = assemble(config, series, pair, roofs, results, notes=notes, stopped=stopped, wall_s=wall, machine=machine)
    return replace(run, load=job.load)


def assemble(config: RooflineConfig, series: Sequence[Series], pair: tuple[Series, Series] | None,
             roofs: Sequence[DeviceRoofs], results: Sequence[MatmulPoint], *, notes: Sequence[str] = (),
             stopped: bool = False, wall_s: float | None = None, machine: dict[str, Any] | None = None) -> RooflineRun:
    """The record from what was measured: each series' peak is its best product, then the model's predictions."""
    by_label = {r.series: r for r in roofs}
    fitted: dict[str, DeviceRoofs] = {}
    for s in series:
        if s.label in by_label:
            rates = [r.gflops for r in results if r.series == s.label and r.gflops is not None]
            fitted[s.label] = replace(by_label[s.label], peak_gflops=max(rates) if rates else None)
    models = {label: model_of(r) for label, r in fitted.items()}
    points = tuple(point_of(r, models.get(r.label)) for r in results)
    predicted = measured = None
    if pair is not None:
        challenger, baseline = (models.get(p.label) for p in pair)
        if challenger is not None and baseline is not None:
            value = predict_crossover(challenger, baseline)
            predicted = None if value is None else max(1, round(value))
        measured = measured_crossover(results, pair)
    return RooflineRun(
        devices_roofs=tuple(fitted.values()), points=points, predicted_crossover_n=predicted,
        measured_crossover_n=measured, challenger=pair[0].label if pair else None,
        baseline=pair[1].label if pair else None, notes=tuple(notes), stopped=stopped, wall_s=wall_s,
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), settings=config.to_dict(),
        machine=machine if machine is not None else {})


def measured_crossover(results: Sequence[MatmulPoint], pair: tuple[Series, Series]) -> int | None:
    """The Matmul race's crossover rule on the sweep's medians: from which size the challenger wins for good."""
    times = {s: {r.n: r.median_s for r in results if r.series == s.label and r.median_s is not None} for s in pair}
    common = sorted(set(times[pair[0]]) & set(times[pair[1]]))
    c = find_crossover(common, [times[pair[0]][n] for n in common], [times[pair[1]][n] for n in common])
    return c.n_int
