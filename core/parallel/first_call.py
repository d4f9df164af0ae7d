"""Section 4, the first call: a cold first product (timed in a fresh Python process) against the warmed ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
import torch

from core.charts.axis_style import time_unit, trace_values
from core.errors import DashboardError
from core.parallel.cold_start import FreshRunner, run_in_fresh_process
from core.parallel.figures import PALETTE, RIGHT_COLOR, WRONG_COLOR, bar_seconds, finish, gpu_label, wide_span
from core.parallel.machine import CPU, LIVE_COPIES, check_threads, pick_gpu, require_memory
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
from core.parallel.wording import RUNNING_PROCESS, format_duration, times
from core.platform.jobs import JobHooks, Progress
from core.platform.timing import Measurement, measure, torch_threads

TITLE = "5. The first call is slow"


@dataclass(frozen=True)
class FirstCallConfig:
    sizes: tuple[int, ...] = (int(SMALL_N.default), int(LARGE_N.default))  # small first: it pays the one-time set-up
    cpu_threads: int | None = 1  # steady on a busy machine; None: torch's default (all cores)
    budget_s: float = SECTION_BUDGET_S  # timed products in both processes, not the fresh one's start-up

    def __post_init__(self) -> None:
        check_sizes(self.sizes, "matrix sizes")
        check_threads(self.cpu_threads)
        check_budget(self.budget_s)


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
    hooks: JobHooks = JobHooks(),
    *,
    devices: Sequence[str] | None = None,
    make: TensorMaker = random_tensor,
    fresh: FreshRunner = run_in_fresh_process,
) -> FirstCallResult:
    """First a new Python process times each size (so the first call is really cold), then this
    process times the same sizes (whose first call is cold only if nothing ran here before).

    The fresh process runs while this one holds the devices, and must not take them itself.
    """
    gpu = pick_gpu(devices)
    names = [CPU] + ([gpu] if gpu else [])
    plan = [(name, size) for name in names for size in config.sizes]
    per_point_s = config.budget_s / (2 * len(plan))
    total = 1 + len(plan)
    points: list[FirstCallPoint] = []
    for name in names:
        require_memory(LIVE_COPIES * max(config.sizes) ** 2, torch.device(name), f"n = {max(config.sizes)}")
    with section_job(TITLE, names, hooks) as job:
        job.check()
        job.report(Progress(0, total, "starting a fresh Python process", FirstCallResult((), gpu)))
        cold = fresh(config.sizes, names, per_point_s, config.cpu_threads)
        job.report(Progress(1, total, "timed in a fresh Python process", FirstCallResult((), gpu)))
        for name, size in plan:
            job.check()
            if (name, size) not in cold:
                raise DashboardError(f"the fresh process returned no timing for n = {size} on {name}")
            device = torch.device(name)
            a = make((size, size), device)
            with torch_threads(config.cpu_threads if name == CPU else None):
                here = measure(lambda: a @ a, device, budget_s=per_point_s)  # noqa: F821 - runs before the `del` below
            del a
            points.append(FirstCallPoint(name, size, cold[(name, size)], here))
            job.report(Progress(1 + len(points), total, f"n = {size} on {name}", FirstCallResult(tuple(points), gpu)))
    return FirstCallResult(tuple(points), gpu)


def explain_first_call(gpu: str | None, config: FirstCallConfig = FirstCallConfig()) -> str:
    text = (
        "The first product a program computes is slow: PyTorch sets up its math library, starts its threads "
        "and picks a method for that size, which later calls skip, so a fair benchmark runs the operation "
        "once before timing (a warm-up) and never counts it. We time the first call in a brand-new Python "
        "process, because a program that has already multiplied matrices (this dashboard, or a command that ran "
        "other sections first) often finds its own first call (the middle bar) no slower than the rest. "
        "For a large matrix the set-up is lost in the work. "
    )
    if gpu:
        return text + (f"On the GPU ({gpu}) the first product also loads the GPU's matrix library, which can take "
                       "far longer than the product itself.")
    return text + ("On a GPU the first product also loads the GPU's matrix library, often a large fraction of a "
                   "second; there is no GPU here.")


def summarize_first_call(result: FirstCallResult) -> str:
    lines = []
    for p in result.points:
        lines.append(
            f"n = {p.size} on {p.device}: the first call in a fresh process took "
            f"{format_duration(p.fresh.first_call_s)}, "
            f"{times(p.cold_ratio)} the warmed median of {format_duration(p.fresh.median_s)}; in {RUNNING_PROCESS}, "
            f"which had run other work first, the first call took {times(p.here_ratio)} its median."
        )
    return "\n\n".join(lines)


def _configure(v: Values) -> FirstCallConfig:
    return FirstCallConfig((int(v[SMALL_N.name]), int(v[LARGE_N.name])), budget_s=float(v[BUDGET.name]))


def first_call_figure(result: FirstCallResult) -> go.Figure:
    """Per size: the cold first call, the first call in this running process, and the warmed median."""
    labels = [f"n = {p.size}" + ("" if p.device == CPU else f", {gpu_label(p.device)}") for p in result.points]
    series = (
        ("first call, fresh Python process", WRONG_COLOR, lambda p: p.fresh.first_call_s),
        ("first call in this running process", PALETTE[1], lambda p: p.here.first_call_s),
        ("median after warm-up", RIGHT_COLOR, lambda p: p.fresh.median_s),
    )
    fig = go.Figure()
    unit = time_unit([pick(p) for _, _, pick in series for p in result.points])
    for name, color, pick in series:
        bar_seconds(fig, name, color, labels, [pick(p) for p in result.points], unit)
    fig.update_layout(barmode="group")
    return finish(fig, "The first a @ a against the warmed-up ones", f"time of one call ({unit.name})",
                   log_y=wide_span(trace_values(fig)))


SECTION: Section[FirstCallConfig, FirstCallResult] = Section(
    key="first_call", title=TITLE, run=run_first_call, configure=_configure, knobs=(SMALL_N, LARGE_N, BUDGET),
    explain=explain_first_call, summarize=summarize_first_call, figure=first_call_figure,
)
