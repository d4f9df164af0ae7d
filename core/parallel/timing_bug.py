"""Section 3, the timing bug: reading the clock right after a GPU call times the queueing, not the work."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
import torch

from core.charts.axis_style import time_unit, trace_values
from core.lecture import LECTURE_GPU_S
from core.parallel.figures import RIGHT_COLOR, WRONG_COLOR, bar_seconds, finish, gpu_label, wide_span
from core.parallel.machine import CPU, LIVE_COPIES, check_threads, pick_gpu, require_memory
from core.parallel.section import (
    BUDGET,
    MAX_CPU_N,
    MAX_GPU_N,
    SECTION_BUDGET_S,
    Knob,
    Section,
    Snippet,
    TensorMaker,
    Values,
    check_budget,
    check_sizes,
    random_tensor,
    section_job,
)
from core.parallel.wording import format_duration, gpu_name, sync_call, times
from core.platform import clock
from core.platform.jobs import JobHooks, Progress
from core.platform.timing import Measurement, time_block, torch_threads

TITLE = "4. The timing bug: reading the clock too early"


@dataclass(frozen=True)
class TimingBugConfig:
    cpu_size: int = 1024  # n for the CPU product: both clocks agree there
    gpu_size: int = 8192  # n for the GPU product: large, so the real work dwarfs the launch
    repeats: int = 5  # single calls per reading, as a student's cell would time it
    cpu_threads: int | None = 1  # steady on a busy machine; None: torch's default (all cores)
    budget_s: float = SECTION_BUDGET_S  # the whole section; repeats usually end it sooner

    def __post_init__(self) -> None:
        check_sizes((self.cpu_size, self.gpu_size, self.repeats), "sizes and repeats")
        check_threads(self.cpu_threads)
        check_budget(self.budget_s)


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
    hooks: JobHooks = JobHooks(),
    *,
    devices: Sequence[str] | None = None,
    make: TensorMaker = random_tensor,
) -> TimingBugResult:
    """Per device: one warm-up product, then single calls timed alternately without and with a synchronize."""
    gpu = pick_gpu(devices)
    plan = [(CPU, config.cpu_size)] + ([(gpu, config.gpu_size)] if gpu else [])
    per_device_s = config.budget_s / len(plan)
    points: list[SyncPoint] = []
    with section_job(TITLE, [name for name, _ in plan], hooks) as job:
        for name, size in plan:
            job.check()
            device = torch.device(name)
            require_memory(LIVE_COPIES * size * size, device, f"n = {size}")
            a = make((size, size), device)
            fn = lambda: a @ a  # noqa: E731, F821 - runs before the `del` below
            with torch_threads(config.cpu_threads if name == CPU else None):
                first = time_block(fn, 1, device)
                unsynced, synced = _paired_calls(fn, device, repeats=config.repeats, budget_s=per_device_s,
                                                 first_call_s=first)
            del a, fn
            points.append(SyncPoint(name, size, unsynced, synced))
            job.report(Progress(len(points), len(plan), f"n = {size} on {name}", TimingBugResult(tuple(points), gpu)))
    return TimingBugResult(tuple(points), gpu)


def explain_timing_bug(gpu: str | None, config: TimingBugConfig = TimingBugConfig()) -> str:
    if gpu:
        return (
            f"A GPU ({gpu}) works in the background: `c = a @ a` returns as soon as the work is queued, long "
            "before it is done. Read the clock then and you time the queueing, not the product, so the GPU looks "
            "almost free. "
            f"`{sync_call(gpu)}` waits until the GPU has finished, so call it before each clock reading; on the "
            "CPU both readings agree, because a CPU finishes the product before the line returns."
        )
    return (
        "On a GPU, `c = a @ a` returns as soon as the work is queued, long before it is done, so a clock read "
        f"right after it measures almost nothing: in the lecture a large product took about {LECTURE_GPU_S:.0f} s "
        "when timed with `torch.cuda.synchronize()`, and the clock showed nearly zero without it. "
        "On a CPU there is nothing asynchronous: the line returns only when the product is done, so both "
        "readings below agree. There is no GPU here to show the bug live."
    )


def timing_snippets(gpu: str | None) -> tuple[Snippet, Snippet]:
    """Wrong and right code for timing one product on the GPU."""
    name, sync = gpu_name(gpu), sync_call(gpu)
    wrong = (
        f'a_gpu = torch.randn(8192, 8192, device="{name}")\n'
        "start = time.perf_counter()\n"
        "c_gpu = a_gpu @ a_gpu  # only queued\n"
        "elapsed = time.perf_counter() - start\n"
        "# WRONG: the GPU is still working"
    )
    right = (
        f'a_gpu = torch.randn(8192, 8192, device="{name}")\n'
        f"{sync}  # nothing queued\n"
        "start = time.perf_counter()\n"
        "c_gpu = a_gpu @ a_gpu\n"
        f"{sync}  # wait for it\n"
        "elapsed = time.perf_counter() - start"
    )
    return Snippet(wrong, "Wrong", right=False), Snippet(right, "Right", right=True)


def summarize_timing_bug(result: TimingBugResult) -> str:
    lines = []
    for p in result.points:
        where = "CPU" if p.device == CPU else f"GPU ({p.device})"
        line = (f"{where}, n = {p.size}: without synchronize {format_duration(p.unsynced.median_s)}, "
                f"with synchronize {format_duration(p.synced.median_s)}")
        if p.device == CPU:
            line += f" (ratio {p.ratio:.2g}: a CPU has nothing to wait for, so any gap is noise)."
        else:
            line += f": the wrong reading is {times(p.ratio)} too small."
        lines.append(line)
    return "\n\n".join(lines)


CPU_N = Knob("bug_cpu_n", "Timing bug: CPU n", TimingBugConfig.cpu_size, 1, MAX_CPU_N)
GPU_N = Knob("bug_gpu_n", "Timing bug: GPU n", TimingBugConfig.gpu_size, 1, MAX_GPU_N)


def _configure(v: Values) -> TimingBugConfig:
    return TimingBugConfig(int(v[CPU_N.name]), int(v[GPU_N.name]), budget_s=float(v[BUDGET.name]))


def timing_bug_figure(result: TimingBugResult) -> go.Figure:
    """Per device: the clock read without waiting, beside the clock read after synchronizing."""
    labels = [("CPU" if p.device == CPU else gpu_label(p.device)) + f", n = {p.size}" for p in result.points]
    fig = go.Figure()
    unit = time_unit([m.median_s for p in result.points for m in (p.unsynced, p.synced)])
    for name, color, pick in (("without synchronize (wrong on a GPU)", WRONG_COLOR, lambda p: p.unsynced),
                              ("with synchronize (the real time)", RIGHT_COLOR, lambda p: p.synced)):
        bar_seconds(fig, name, color, labels, [pick(p).median_s for p in result.points], unit)
    fig.update_layout(barmode="group")
    return finish(fig, "What the clock says after c = a @ a", f"median time ({unit.name})",
                   log_y=wide_span(trace_values(fig)))


SECTION: Section[TimingBugConfig, TimingBugResult] = Section(
    key="timing_bug", title=TITLE, run=run_timing_bug, configure=_configure, knobs=(CPU_N, GPU_N, BUDGET),
    explain=explain_timing_bug, summarize=summarize_timing_bug, figure=timing_bug_figure, snippets=timing_snippets,
)
