"""Checks every chart builder's tests share: the axis style of core/charts/axis_style.py, asserted on a figure."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from core.charts.axis_style import tick_label


def _whole(value: float) -> bool:
    """A whole digit times a power of ten (1, 20, 0.5): the only ticks a log axis may carry."""
    mantissa = value / 10 ** math.floor(math.log10(value) + 1e-9)
    return any(math.isclose(mantissa, m, rel_tol=1e-6) for m in range(1, 10))


def assert_log_axis(axis, unit: str | None = None) -> None:
    """Log type, ticks only at whole values each labelled with that value, inside the range; the unit in the title."""
    assert axis.type == "log" and axis.tickmode == "array", (axis.type, axis.tickmode)
    ticks = list(axis.tickvals)
    assert ticks and all(_whole(t) for t in ticks), ticks
    assert list(axis.ticktext) == [tick_label(t) for t in ticks]
    lo, hi = axis.range
    assert all(lo <= math.log10(t) <= hi for t in ticks)
    if unit is not None:
        assert axis.title.text.endswith(f"({unit})"), axis.title.text


def assert_legend_below(fig: go.Figure) -> None:
    """The legend is shown, horizontal, in the band Plotly reserves at the figure's bottom: never over an axis
    title, and never taking the plot's width."""
    legend = fig.layout.legend
    assert fig.layout.showlegend is True
    assert legend.orientation == "h" and legend.yref == "container" and legend.y == 0, legend
    assert legend.yanchor == "bottom" and legend.xanchor == "left", legend


def _inside(value: float, axis, ref: str) -> bool:
    if ref == "paper":
        return 0 <= value <= 1
    lo, hi = axis.range
    return lo <= value <= hi


def assert_annotations_inside(fig: go.Figure) -> None:
    """Every annotation inside the plot: paper coordinates in [0, 1], data coordinates in the axis range."""
    for note in fig.layout.annotations:
        xref, yref = note.xref or "x", note.yref or "y"
        if xref != "paper" or fig.layout.xaxis.range is not None:
            assert _inside(note.x, fig.layout.xaxis, "paper" if xref == "paper" else "x"), (note.text, note.x)
        if yref != "paper" or fig.layout.yaxis.range is not None:
            assert _inside(note.y, fig.layout.yaxis, "paper" if yref == "paper" else "y"), (note.text, note.y)


def assert_points_inside(fig: go.Figure) -> None:
    """Every numeric point (error bars' ends included) inside a log axis's range."""
    for name in ("x", "y"):
        axis = fig.layout[f"{name}axis"]
        if axis.type != "log":
            continue
        lo, hi = axis.range
        for trace in fig.data:
            points = [v for v in (trace[name] if trace[name] is not None else []) if isinstance(v, (int, float))]
            assert all(lo <= math.log10(v) <= hi for v in points if v and v > 0), (trace.name, name, points)
            error = trace[f"error_{name}"]
            if error is not None and error.array is not None:
                minus = error.arrayminus if error.arrayminus is not None else error.array
                assert all(v - m > 0 and math.log10(v - m) >= lo for v, m in zip(points, minus)), trace.name
