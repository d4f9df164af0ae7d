"""The look every Why-parallel figure shares: colours, height, the bar series and the axis choice.

Each section draws its own figure beside its measurement (`marbles.marbles_figure`, ...), so the
section record names a builder in its own module and no chart module has to import the sections
back for their result types. Builders are pure functions of a result and never import streamlit.

`split_work_chart` is the one picture of work split among K workers: the marbles across processes
(all_gather) and the classifier's scaling (gradient all-reduce) both draw it, so students read the
same chart twice: what more workers divide (compute) and what they do not (talking to each other,
Amdahl's law). It lives here, not in core/charts, because a section may not import a page's chart
module (tests/test_layers.py); the classifier's chart module imports it from here.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from core.charts.axis_style import FONT_SIZE, TimeUnit, bar_axis, style, trace_values
from core.parallel.wording import format_duration

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")
WRONG_COLOR = "#d62728"
RIGHT_COLOR = "#2ca02c"
HEIGHT_PX = 380
LOG_SPAN = 30.0  # largest / smallest value above which the y axis turns logarithmic
COMPUTE_COLOR = "#1f77b4"
COMMUNICATION_COLOR = "#ff7f0e"
IDEAL_COLOR = "#7f7f7f"


def threads_label(n: int) -> str:
    return f"{n} thread" + ("s" if n > 1 else "")


def gpu_label(gpu: str) -> str:
    return f"GPU ({gpu})"


def wide_span(values: list[float | None]) -> bool:
    """True when the values span more than LOG_SPAN: only then is a log axis worth its cost.

    On a log axis a bar's length no longer shows its size (20.8 against 20.9 ms looked like 1 to
    10), so narrow spans keep a linear axis that starts at zero.
    """
    positive = [v for v in values if v is not None and v > 0]
    return bool(positive) and max(positive) / min(positive) > LOG_SPAN


def finish(fig: go.Figure, title: str, yaxis_title: str, *, log_y: bool) -> go.Figure:
    """Title, height and the y axis every section's bar or line figure shares."""
    style(fig, title=title, height=HEIGHT_PX)
    fig.update_layout(yaxis=bar_axis(trace_values(fig, "y"), yaxis_title, log=log_y))
    fig.update_xaxes(automargin=True)
    fig.update_traces(cliponaxis=False, selector=dict(type="bar"))  # text above the tallest bar stays whole
    return fig


def bar_seconds(fig: go.Figure, name: str, color: str, labels: list[str], seconds: list[float | None],
                unit: TimeUnit) -> None:
    """One series of bars in the chart's time unit, each labelled with its own reading."""
    fig.add_bar(x=labels, y=unit.scale(seconds), name=name, marker_color=color,
                text=[None if s is None else format_duration(s) for s in seconds], textposition="outside")


def split_work_chart(workers: Sequence[int], compute: Sequence[float], communication: Sequence[float],
                     ideal: Sequence[float | None], *, communication_name: str, y_title: str,
                     x_title: str = "workers (processes)", compute_name: str = "compute") -> go.Figure:
    """Stacked bars per worker count (compute, then communication labelled with its share), the ideal as a line."""
    labels = [str(k) for k in workers]
    shares = [talk / (work + talk) if work + talk > 0 else 0.0 for work, talk in zip(compute, communication)]
    fig = go.Figure()
    fig.add_bar(x=labels, y=list(compute), name=compute_name, marker_color=COMPUTE_COLOR)
    fig.add_bar(x=labels, y=list(communication), name=communication_name, marker_color=COMMUNICATION_COLOR,
                text=[f"{s:.0%}" for s in shares], textposition="inside")
    fig.add_scatter(x=labels, y=list(ideal), name="ideal (1 worker / K)", mode="lines+markers",
                    line=dict(color=IDEAL_COLOR, dash="dash"))
    fig.update_layout(barmode="stack", xaxis=dict(title=x_title, type="category", tickfont=dict(size=FONT_SIZE)),
                      yaxis=dict(title=y_title, tickfont=dict(size=FONT_SIZE), automargin=True))
    return style(fig, title=None, height=380)  # the shared legend band under the plot, 16 px ticks
