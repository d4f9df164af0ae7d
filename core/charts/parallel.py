"""Figures for the 'why parallel' page: one per section, each a pure function of its result."""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go

from core.charts.axis_style import TimeUnit, style, time_unit, trace_values, bar_axis
from core.charts.split_work import split_work_chart
from core.parallel.machine import CPU
from core.parallel.wording import format_duration

if TYPE_CHECKING:  # the section modules import these builders into their Section records
    from core.parallel.chain import ChainResult, Shape
    from core.parallel.first_call import FirstCallResult
    from core.parallel.location import LocationResult
    from core.parallel.marbles import MarblesResult
    from core.parallel.processes import ProcessesResult
    from core.parallel.timing_bug import TimingBugResult

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")
WRONG_COLOR = "#d62728"
RIGHT_COLOR = "#2ca02c"
HEIGHT_PX = 380
LOG_SPAN = 30.0  # largest / smallest value above which the y axis turns logarithmic


def _threads_label(n: int) -> str:
    return f"{n} thread" + ("s" if n > 1 else "")


def _gpu_label(gpu: str) -> str:
    return f"GPU ({gpu})"


def wide_span(values: list[float | None]) -> bool:
    """True when the values span more than LOG_SPAN: only then is a log axis worth its cost.

    On a log axis a bar's length no longer shows its size (20.8 against 20.9 ms looked like 1 to
    10), so narrow spans keep a linear axis that starts at zero.
    """
    positive = [v for v in values if v is not None and v > 0]
    return bool(positive) and max(positive) / min(positive) > LOG_SPAN


def _layout(fig: go.Figure, title: str, yaxis_title: str, *, log_y: bool) -> go.Figure:
    style(fig, title=title, height=HEIGHT_PX)
    fig.update_layout(yaxis=bar_axis(trace_values(fig, "y"), yaxis_title, log=log_y))
    fig.update_xaxes(automargin=True)
    fig.update_traces(cliponaxis=False, selector=dict(type="bar"))  # text above the tallest bar stays whole
    return fig


def _bar_seconds(fig: go.Figure, name: str, color: str, labels: list[str], seconds: list[float | None],
                 unit: TimeUnit) -> None:
    """One series of bars in the chart's time unit, each labelled with its own reading."""
    fig.add_bar(x=labels, y=unit.scale(seconds), name=name, marker_color=color,
                text=[None if s is None else format_duration(s) for s in seconds], textposition="outside")


def marbles_figure(result: MarblesResult) -> go.Figure:
    """Speed-up over one CPU thread against workers, one line per size, the ideal k-times line dashed."""
    categories = [_threads_label(t) for t in result.threads] + ([_gpu_label(result.gpu)] if result.gpu else [])
    fig = go.Figure()
    fig.add_scatter(x=[_threads_label(t) for t in result.threads], y=list(result.threads),
                    name="ideal: k workers, k× as fast", mode="lines", line=dict(dash="dash", color="grey"))
    for i, size in enumerate(result.sizes):
        color = PALETTE[i % len(PALETTE)]
        cpu = [p for p in result.cpu_points(size) if result.speedup(p) is not None]
        fig.add_scatter(
            x=[_threads_label(p.threads or 1) for p in cpu], y=[result.speedup(p) for p in cpu],
            name=f"n = {size}", mode="lines+markers", line=dict(color=color), legendgroup=str(size),
            customdata=[p.measurement.median_s * 1e3 for p in cpu],
            hovertemplate="%{x}: %{y:.2f}× (median %{customdata:.3g} ms)<extra>n = " + str(size) + "</extra>",
        )
        gpu = result.gpu_point(size)
        if gpu is not None and result.speedup(gpu) is not None:
            fig.add_scatter(
                x=[_gpu_label(gpu.device)], y=[result.speedup(gpu)], name=f"n = {size} on the GPU",
                mode="markers", marker=dict(color=color, size=14, symbol="star"), legendgroup=str(size),
                customdata=[gpu.measurement.median_s * 1e3],
                hovertemplate="%{x}: %{y:.3g}× (median %{customdata:.3g} ms)<extra>n = " + str(size) + "</extra>",
            )
    fig.update_xaxes(categoryorder="array", categoryarray=categories, title="workers")
    return _layout(fig, "Speed-up over one worker (same a @ a)", "times as fast as 1 CPU thread",
                   log_y=wide_span(trace_values(fig)))


def processes_figure(result: ProcessesResult) -> go.Figure:
    """Milliseconds per product against worker processes: the slowest product and the gather stacked, the ideal dashed."""
    steps = result.steps
    ideal = [result.ideal(s.workers) for s in steps]
    return split_work_chart([s.workers for s in steps], [s.compute.median_s * 1e3 for s in steps],
                            [s.gather_s * 1e3 for s in steps], [None if i is None else i * 1e3 for i in ideal],
                            communication_name="all_gather (and waiting)", y_title="ms per product (median round)")


def chain_figure(result: ChainResult) -> go.Figure:
    """Median time of the one big operation and of the chain, side by side per device."""
    devices = [CPU] + ([result.gpu] if result.gpu else [])
    labels = ["CPU" if d == CPU else _gpu_label(d) for d in devices]
    fig = go.Figure()
    series: tuple[tuple[Shape, str, str], ...] = (("one op", PALETTE[0], "one big operation"),
                                                  ("chain", PALETTE[1], f"chain of {result.config.steps} tiny steps"))
    unit = time_unit([result.time_s(d, shape) for d in devices for shape, _, _ in series])
    for shape, color, name in series:
        _bar_seconds(fig, name, color, labels, [result.time_s(d, shape) for d in devices], unit)
    fig.update_layout(barmode="group")
    return _layout(fig, f"Same arithmetic ({result.config.flops / 1e6:.0f} MFLOP), two shapes",
                   f"median time ({unit.name})", log_y=wide_span(trace_values(fig)))


def timing_bug_figure(result: TimingBugResult) -> go.Figure:
    """Per device: the clock read without waiting, beside the clock read after synchronizing."""
    labels = [("CPU" if p.device == CPU else _gpu_label(p.device)) + f", n = {p.size}" for p in result.points]
    fig = go.Figure()
    unit = time_unit([m.median_s for p in result.points for m in (p.unsynced, p.synced)])
    for name, color, pick in (("without synchronize (wrong on a GPU)", WRONG_COLOR, lambda p: p.unsynced),
                              ("with synchronize (the real time)", RIGHT_COLOR, lambda p: p.synced)):
        _bar_seconds(fig, name, color, labels, [pick(p).median_s for p in result.points], unit)
    fig.update_layout(barmode="group")
    return _layout(fig, "What the clock says after c = a @ a", f"median time ({unit.name})",
                   log_y=wide_span(trace_values(fig)))


def first_call_figure(result: FirstCallResult) -> go.Figure:
    """Per size: the cold first call, the first call in this server, and the warmed median."""
    labels = [f"n = {p.size}" + ("" if p.device == CPU else f", {_gpu_label(p.device)}") for p in result.points]
    series = (
        ("first call, fresh Python process", WRONG_COLOR, lambda p: p.fresh.first_call_s),
        ("first call in this running server", PALETTE[1], lambda p: p.here.first_call_s),
        ("median after warm-up", RIGHT_COLOR, lambda p: p.fresh.median_s),
    )
    fig = go.Figure()
    unit = time_unit([pick(p) for _, _, pick in series for p in result.points])
    for name, color, pick in series:
        _bar_seconds(fig, name, color, labels, [pick(p) for p in result.points], unit)
    fig.update_layout(barmode="group")
    return _layout(fig, "The first a @ a against the warmed-up ones", f"time of one call ({unit.name})",
                   log_y=wide_span(trace_values(fig)))


def location_figure(result: LocationResult) -> go.Figure:
    """Where a_cpu and a_gpu live, the copy that joins them, and the product that is refused."""
    fig = go.Figure()
    has_gpu = result.gpu is not None
    boxes = (
        (0.02, 0.42, "CPU memory (RAM)", "a_cpu", "#dbe9f6"),
        (0.58, 0.98, f"GPU memory ({result.gpu})" if has_gpu else "GPU memory (no GPU here)",
         "a_gpu" if has_gpu else "", "#e3f3df" if has_gpu else "#eeeeee"),
    )
    for x0, x1, title, tensor, fill in boxes:
        fig.add_shape(type="rect", x0=x0, x1=x1, y0=0.1, y1=0.9, fillcolor=fill, line=dict(color="#555"),
                      layer="below")
        fig.add_annotation(x=(x0 + x1) / 2, y=0.82, text=f"<b>{title}</b>", showarrow=False)
        if tensor:
            fig.add_annotation(x=(x0 + x1) / 2, y=0.5, text=f"<b>{tensor}</b>", showarrow=False,
                               font=dict(size=20, family="monospace"))
    if has_gpu:
        fig.add_annotation(x=0.66, y=0.35, ax=0.34, ay=0.35, xref="x", yref="y", axref="x", ayref="y",
                           text="", showarrow=True, arrowhead=3, arrowwidth=2, arrowcolor=RIGHT_COLOR)
        copy = '<span style="font-family:monospace">a_cpu.to(a_gpu.device)</span>: copy, then multiply'
        fig.add_annotation(x=0.5, y=0.28, showarrow=False, font=dict(color=RIGHT_COLOR), text=copy)
    verdict = (f"a_cpu @ a_gpu → {result.error_type}" if result.refused
               else "a_cpu @ a_gpu → no error here" if has_gpu
               else "a_cpu @ a_gpu would raise an error on a machine with a GPU")
    fig.add_annotation(x=0.5, y=0.97, text=verdict, showarrow=False,
                       font=dict(color=WRONG_COLOR if result.refused or not has_gpu else "#333", family="monospace"))
    fig.update_xaxes(visible=False, range=[0, 1])
    fig.update_yaxes(visible=False, range=[0, 1])
    style(fig, title=None, height=260, legend=False)
    fig.update_layout(margin=dict(l=10, r=10, t=10, b=10), plot_bgcolor="white")
    return fig
