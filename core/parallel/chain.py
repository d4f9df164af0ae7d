"""Section 2: one big operation against a chain of tiny dependent steps, the same arithmetic on CPU and GPU."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import plotly.graph_objects as go
import torch

from core.charts.axis_style import time_unit, trace_values
from core.parallel.figures import PALETTE, bar_seconds, finish, gpu_label, wide_span
from core.parallel.machine import CPU, LIVE_COPIES, check_threads, pick_gpu, require_memory
from core.parallel.section import (
    BUDGET,
    SECTION_BUDGET_S,
    Knob,
    Section,
    TensorMaker,
    Values,
    check_budget,
    check_sizes,
    random_tensor,
    section_job,
)
from core.parallel.wording import format_duration, times
from core.platform.jobs import JobHooks, Progress
from core.platform.timing import Measurement, measure, torch_threads

TITLE = "3. One big array or a chain of tiny steps"
Shape = Literal["one op", "chain"]


@dataclass(frozen=True)
class ChainConfig:
    steps: int = 1000  # tiny steps that must run one after another
    rows: int = 8  # rows of x in each step: x is (rows, width)
    width: int = 128  # W is (width, width)
    cpu_threads: int | None = 1  # steady on a busy machine; None: torch's default (all cores)
    budget_s: float = SECTION_BUDGET_S  # the whole section, warm-up calls included

    def __post_init__(self) -> None:
        check_sizes((self.steps, self.rows, self.width), "steps, rows and width")
        check_threads(self.cpu_threads)
        check_budget(self.budget_s)

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
    hooks: JobHooks = JobHooks(),
    *,
    devices: Sequence[str] | None = None,
    make: TensorMaker = random_tensor,
) -> ChainResult:
    """The same arithmetic twice per device: one (steps*rows, width) @ W, and `steps` dependent
    (rows, width) @ W products. Both apply tanh to the same number of values."""
    gpu = pick_gpu(devices)
    names = [CPU] + ([gpu] if gpu else [])
    total = 2 * len(names)
    per_point_s = config.budget_s / total
    points: list[ChainPoint] = []
    with section_job(TITLE, names, hooks) as job:
        for name in names:
            device = torch.device(name)
            require_memory(LIVE_COPIES * config.steps * config.rows * config.width, device,
                           f"{config.steps} steps of {config.rows} rows by {config.width}")
            w = make((config.width, config.width), device) / math.sqrt(config.width)  # keeps tanh out of saturation
            x = make((config.rows, config.width), device)
            wide = make((config.steps * config.rows, config.width), device)
            jobs: list[tuple[Shape, Callable[[], object]]] = [
                ("one op", lambda: torch.tanh(wide @ w)),  # noqa: F821 - runs before the `del` below
                ("chain", lambda: chain_of_steps(x, w, config.steps)),  # noqa: F821 - runs before the `del` below
            ]
            for shape, fn in jobs:
                job.check()
                with torch_threads(config.cpu_threads if name == CPU else None):
                    m = measure(fn, device, budget_s=per_point_s)
                points.append(ChainPoint(name, shape, m))
                job.report(Progress(len(points), total, f"{shape} on {name}", ChainResult(config, tuple(points), gpu)))
            del w, x, wide
    return ChainResult(config, tuple(points), gpu)


def explain_chain(gpu: str | None, config: ChainConfig = ChainConfig()) -> str:
    steps = config.steps
    text = (
        f"Some work cannot be split: in `x = torch.tanh(x @ W)` repeated {steps} times, every step needs the "
        "result of the step before, like a line of people passing one bucket along. Here the same arithmetic "
        f"runs twice: once as one large operation on all rows at once, and once as {steps} tiny steps in order. "
    )
    if gpu:
        return text + (
            f"The GPU ({gpu}) pays a fixed cost of a few microseconds to launch each step and wait for it, "
            "however small the step, so the one big operation flies but the chain gains nothing over the CPU, or loses."
        )
    return text + (
        "On a GPU each tiny step pays a fixed launch cost of a few microseconds, however small it is, so the chain "
        "gains nothing there even when one big operation is many times faster; there is no GPU here, so only "
        "the CPU is measured."
    )


def summarize_chain(result: ChainResult) -> str:
    lines = []
    for device in [CPU] + ([result.gpu] if result.gpu else []):
        one, chain, step = result.time_s(device, "one op"), result.time_s(device, "chain"), result.per_step_s(device)
        if one is not None and chain is not None and step is not None:
            lines.append(f"{device}: one operation {format_duration(one)}, the chain {format_duration(chain)} "
                         f"({format_duration(step)} per step).")
    big, small = result.gpu_speedup("one op"), result.gpu_speedup("chain")
    if big is not None and small is not None:
        verdict = f"{times(small)} as fast" if small >= 1 else f"{times(1 / small)} slower"
        lines.append(f"The GPU did the one operation {times(big)} as fast as the CPU, but the chain only {verdict}.")
    return "\n\n".join(lines)


STEPS = Knob("steps", "Chain: steps", ChainConfig.steps, 1, 100_000)
ROWS = Knob("rows", "Chain: rows of x", ChainConfig.rows, 1, 4096)
WIDTH = Knob("width", "Chain: width of W", ChainConfig.width, 1, 4096)


def _configure(v: Values) -> ChainConfig:
    return ChainConfig(int(v[STEPS.name]), int(v[ROWS.name]), int(v[WIDTH.name]), budget_s=float(v[BUDGET.name]))


def chain_figure(result: ChainResult) -> go.Figure:
    """Median time of the one big operation and of the chain, side by side per device."""
    devices = [CPU] + ([result.gpu] if result.gpu else [])
    labels = ["CPU" if d == CPU else gpu_label(d) for d in devices]
    fig = go.Figure()
    series: tuple[tuple[Shape, str, str], ...] = (("one op", PALETTE[0], "one big operation"),
                                                  ("chain", PALETTE[1], f"chain of {result.config.steps} tiny steps"))
    unit = time_unit([result.time_s(d, shape) for d in devices for shape, _, _ in series])
    for shape, color, name in series:
        bar_seconds(fig, name, color, labels, [result.time_s(d, shape) for d in devices], unit)
    fig.update_layout(barmode="group")
    return finish(fig, f"Same arithmetic ({result.config.flops / 1e6:.0f} MFLOP), two shapes",
                   f"median time ({unit.name})", log_y=wide_span(trace_values(fig)))


SECTION: Section[ChainConfig, ChainResult] = Section(
    key="chain", title=TITLE, run=run_chain, configure=_configure, knobs=(STEPS, ROWS, WIDTH, BUDGET),
    explain=explain_chain, summarize=summarize_chain, figure=chain_figure,
)
