"""Section 1, marbles: the same a @ a with 1, 2, 4, … CPU threads, then on the GPU, against the ideal k-times line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
import torch

from core.charts.axis_style import trace_values
from core.parallel.figures import PALETTE, finish, gpu_label, threads_label, wide_span
from core.parallel.machine import (
    CPU,
    LIVE_COPIES,
    check_threads,
    pick_gpu,
    require_memory,
    thread_ladder,
    usable_cores,
)
from core.parallel.section import (
    BUDGET,
    LARGE_N,
    SECTION_BUDGET_S,
    SMALL_N,
    Section,
    TensorMaker,
    Values,
    check_budget,
    check_sizes,
    random_tensor,
    section_job,
)
from core.parallel.wording import as_fast_as
from core.platform.jobs import JobHooks, Progress
from core.results.load import MachineLoad
from core.platform.timing import Measurement, measure, torch_threads

TITLE = "1. Marbles: one worker or many"


@dataclass(frozen=True)
class MarblesConfig:
    sizes: tuple[int, ...] = (int(SMALL_N.default), int(LARGE_N.default))  # threads gain nothing at the small n
    max_threads: int | None = None  # None: every core this process may use
    budget_s: float = SECTION_BUDGET_S  # the whole section, warm-up calls included

    def __post_init__(self) -> None:
        check_sizes(self.sizes, "matrix sizes")
        check_budget(self.budget_s)
        check_threads(self.max_threads)


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
    load: MachineLoad | None = None  # how busy the machine was when the section started (core.platform.machine_load)

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


def _step_label(size: int, device: str, threads: int | None) -> str:
    return f"n = {size}, " + (f"{threads} thread{'s' * (threads > 1)}" if threads else device)


def run_marbles(
    config: MarblesConfig = MarblesConfig(),
    hooks: JobHooks = JobHooks(),
    *,
    devices: Sequence[str] | None = None,
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
    with section_job(TITLE, [CPU] + ([gpu] if gpu else []), hooks, measure_load=True) as job:
        load = job.load
        for size, name, n_threads in plan:
            job.check()
            device = torch.device(name)
            require_memory(LIVE_COPIES * size * size, device, f"n = {size}")
            a = make((size, size), device)
            with torch_threads(n_threads):
                m = measure(lambda: a @ a, device, budget_s=per_point_s)  # noqa: F821 - runs before the `del` below
            del a
            points.append(MarblesPoint(size, name, n_threads, m))
            partial = MarblesResult(tuple(points), threads, gpu, load)
            job.report(Progress(len(points), len(plan), _step_label(size, name, n_threads), partial))
    return MarblesResult(tuple(points), threads, gpu, load)


def explain_marbles(gpu: str | None, config: MarblesConfig = MarblesConfig()) -> str:
    text = (
        "Counting a bag of marbles alone is one worker (one CPU thread computing `a @ a`); split the bag "
        "with a friend and add the two counts, and it takes about half as long (two threads). "
        "Here the same product runs with 1, 2, 4, … threads, and the dashed line is the ideal where k workers "
        "are k times faster. A small matrix gains little or nothing, because splitting the bag and adding the "
        "counts costs as much as the counting itself. "
    )
    if gpu:
        return text + (f"The GPU ({gpu}) splits the bag across thousands of small cores: its star shows how many "
                       "times faster it is than one CPU thread.")
    return text + ("A GPU would split the bag across thousands of small cores; there is no GPU here, so only the "
                   "CPU is measured.")


def summarize_marbles(result: MarblesResult) -> str:
    lines = []
    for size in result.sizes:
        parts = []
        for p in result.cpu_points(size):
            speedup = result.speedup(p)
            if p.threads and p.threads > 1 and speedup is not None:
                parts.append(f"{p.threads} threads ran {as_fast_as(speedup, '1')} (ideal {p.threads}×)")
        gpu = result.gpu_point(size)
        gpu_speedup = None if gpu is None else result.speedup(gpu)
        if gpu_speedup is not None:
            parts.append(f"the GPU ran {as_fast_as(gpu_speedup, '1 CPU thread')}")
        if parts:
            lines.append(f"n = {size}: " + "; ".join(parts) + ".")
    if result.load is not None and result.load.busy:
        lines.append(
            "Other programs were keeping this machine busy: an extra thread then waits for a free core at every "
            "step, which can make it slower than one thread. Run again when the machine is quiet to see the real gain."
        )
    return "\n\n".join(lines)


def _configure(v: Values) -> MarblesConfig:
    return MarblesConfig((int(v[SMALL_N.name]), int(v[LARGE_N.name])), budget_s=float(v[BUDGET.name]))


def marbles_figure(result: MarblesResult) -> go.Figure:
    """Speed-up over one CPU thread against workers, one line per size, the ideal k-times line dashed."""
    categories = [threads_label(t) for t in result.threads] + ([gpu_label(result.gpu)] if result.gpu else [])
    fig = go.Figure()
    fig.add_scatter(x=[threads_label(t) for t in result.threads], y=list(result.threads),
                    name="ideal: k workers, k× as fast", mode="lines", line=dict(dash="dash", color="grey"))
    for i, size in enumerate(result.sizes):
        color = PALETTE[i % len(PALETTE)]
        cpu = [p for p in result.cpu_points(size) if result.speedup(p) is not None]
        fig.add_scatter(
            x=[threads_label(p.threads or 1) for p in cpu], y=[result.speedup(p) for p in cpu],
            name=f"n = {size}", mode="lines+markers", line=dict(color=color), legendgroup=str(size),
            customdata=[p.measurement.median_s * 1e3 for p in cpu],
            hovertemplate="%{x}: %{y:.2f}× (median %{customdata:,.3~r} ms)<extra>n = " + str(size) + "</extra>",
        )
        gpu = result.gpu_point(size)
        if gpu is not None and result.speedup(gpu) is not None:
            fig.add_scatter(
                x=[gpu_label(gpu.device)], y=[result.speedup(gpu)], name=f"n = {size} on the GPU",
                mode="markers", marker=dict(color=color, size=14, symbol="star"), legendgroup=str(size),
                customdata=[gpu.measurement.median_s * 1e3],
                hovertemplate="%{x}: %{y:,.3~r}× (median %{customdata:,.3~r} ms)<extra>n = " + str(size) + "</extra>",
            )
    fig.update_xaxes(categoryorder="array", categoryarray=categories, title="workers")
    return finish(fig, "Speed-up over one worker (same a @ a)", "times as fast as 1 CPU thread",
                   log_y=wide_span(trace_values(fig)))


SECTION: Section[MarblesConfig, MarblesResult] = Section(
    key="marbles", title=TITLE, run=run_marbles, configure=_configure, knobs=(SMALL_N, LARGE_N, BUDGET),
    explain=explain_marbles, summarize=summarize_marbles, figure=marbles_figure,
)
