"""The one axis style every chart builder uses, so a class can read any chart from the back row.

Log axes carry decade ticks only, each labelled with its whole value (Plotly's own minor labels
"2 … 9" dropped the decade, so "3" read as 3 where it meant 0.3); a time axis has one unit, chosen
from the data, written in its title; legends sit in a band under the plot, below the x axis's title,
where Plotly reserves the room for them: a legend beside the plot took most of a chart's width in
the main column (a roofline squeezed to 170 of 820 pixels, its axis title cut), one under it takes
height only where it has entries; text is placed inside the plot area; error bars never reach below
a log axis's floor. Tick labels are 16 px: readable from a classroom's back row on a projector.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

import plotly.graph_objects as go

LOG_PAD = 0.12  # decades of room above and below the data on a log axis, so markers and text are not cut
LINEAR_HEADROOM = 0.15  # share of the span added above a linear axis's top, for text above bars
BAR_FLOOR_DECADES = 0.5  # a log bar chart's floor lies this far under its smallest bar
LOWER_ARM_FLOOR = 0.1  # an error bar's lower arm on a log axis stops at this share of its value
FONT_SIZE = 16  # tick labels and legend, in px: readable across a classroom on a 1280 × 720 projector
LABEL_BACKING = "rgba(255,255,255,0.85)"
LABEL_SHIFT_PX = 12  # text starts this far from its marker
MINOR_GRID = "#f2f2f2"  # faint unlabelled lines at 2 … 9 times a decade: the eye still sees the log scale
# at the bottom of the figure (container coordinates): Plotly reserves that band, so axis titles stay above it
LEGEND = dict(orientation="h", x=0.0, xanchor="left", yref="container", y=0.0, yanchor="bottom",
              font=dict(size=FONT_SIZE))


@dataclass(frozen=True)
class TimeUnit:
    """One unit for a whole time axis: its name and how many of it make a second."""

    name: str  # "s", "ms" or "µs"
    per_second: float

    def scale(self, seconds: Iterable[float | None]) -> list[float | None]:
        return [None if s is None or _missing(s) else s * self.per_second for s in seconds]

    def label(self, seconds: float) -> str:
        """A value in this unit, '23,000 ms', with the seconds beside it when the unit is smaller."""
        text = f"{tick_label(_round3(seconds * self.per_second))} {self.name}"
        return text if self.name == "s" else f"{text} ({seconds:g} s)"


SECONDS = TimeUnit("s", 1.0)
MILLISECONDS = TimeUnit("ms", 1e3)
MICROSECONDS = TimeUnit("µs", 1e6)


def _missing(value: float) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _positive(values: Iterable[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and not _missing(float(v)) and float(v) > 0]


def _round3(x: float) -> float:
    return float(f"{x:.3g}")


def time_unit(seconds: Iterable[float | None]) -> TimeUnit:
    """µs when every value is below a millisecond, s when none is below a second, else ms.

    A GPU's 20 µs calls then read as 20 µs rather than 0.02 ms, and a sweep from 10 µs to 80 ms
    in ms, its small end as 0.01: one unit on the axis, never a mix of "100µ" and "0.001".
    """
    values = _positive(seconds)
    if not values:
        return MILLISECONDS
    if max(values) < 1e-3:
        return MICROSECONDS
    return SECONDS if min(values) >= 1.0 else MILLISECONDS


def tick_label(value: float) -> str:
    """A tick's whole value: '1', '10', '1,000', '0.01', down to '0.001', then '1e-4'."""
    if value >= 1:
        return f"{value:,.0f}" if value == round(value) else f"{value:,.3g}"
    if value >= 1e-3:
        return f"{value:.3g}" if value >= 0.01 else f"{value:.3f}".rstrip("0")
    return f"{value:.0e}".replace("e-0", "e-")


def log_range(values: Iterable[float | None]) -> tuple[float, float]:
    """The log10 range covering the values with a little room; (0, 1) with no positive value."""
    positive = _positive(values)
    if not positive:
        return (0.0, 1.0)
    lo, hi = math.log10(min(positive)), math.log10(max(positive))
    return (lo - LOG_PAD, hi + LOG_PAD)


def log_ticks(lo: float, hi: float) -> list[float]:
    """Decades between 10**lo and 10**hi; where fewer than two fit, 1-2-5 steps, then 1 to 9 steps.

    Every tick is a whole value with its own label: never a bare "3" that means 0.3.
    """
    for mantissas in ((1,), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10.0**k for k in range(math.floor(lo), math.ceil(hi) + 1) for m in mantissas]
        ticks = [t for t in ticks if lo <= math.log10(t) <= hi]
        if len(ticks) >= 2:
            return ticks
    return ticks


def log_axis(values: Iterable[float | None], title: str, *, headroom: float = 0.0,
             below: float = 0.0) -> dict[str, Any]:
    """A log axis over the values: decade ticks with whole-value labels, unlabelled minor ticks.

    `headroom` adds that share of the span above the data, for text drawn above bars; `below`
    lowers the floor by that many decades, so a bar (drawn up from the floor) for the smallest
    value still has a visible height.
    """
    lo, hi = log_range(values)
    hi += headroom * (hi - lo)
    lo -= below
    ticks = log_ticks(lo, hi)
    return dict(type="log", range=[lo, hi], tickmode="array", tickvals=ticks, ticktext=[tick_label(t) for t in ticks],
                minor=dict(dtick="D1", showgrid=True, gridcolor=MINOR_GRID, ticks=""), title=dict(text=title),
                tickfont=dict(size=FONT_SIZE), automargin=True)


def linear_axis(values: Iterable[float | None], title: str, *, headroom: float = LINEAR_HEADROOM) -> dict[str, Any]:
    """A linear axis from zero to the largest value plus room for text above bars."""
    top = max(_positive(values), default=1.0)
    return dict(type="linear", range=[0.0, top * (1 + headroom)], title=dict(text=title),
                tickfont=dict(size=FONT_SIZE), automargin=True)


def bar_axis(values: Sequence[float | None], title: str, *, log: bool) -> dict[str, Any]:
    """A log or a linear axis for bars: room above for their text, and on a log axis a floor half a
    decade under the smallest bar."""
    if log:
        return log_axis(values, title, headroom=LINEAR_HEADROOM, below=BAR_FLOOR_DECADES)
    return linear_axis(values, title)


def clipped_lower_arms(values: Sequence[float | None], arms: Sequence[float | None]) -> list[float]:
    """Error bars' lower arms for a log axis: none reaches below LOWER_ARM_FLOOR of its value.

    A lower arm as long as the value itself would run to zero, which a log axis draws at its very
    bottom; the clipped arm still shows a wide spread as wide.
    """
    out = []
    for value, arm in zip(values, arms):
        if value is None or arm is None or _missing(value) or _missing(arm):
            out.append(0.0)
        else:
            out.append(max(0.0, min(float(arm), float(value) * (1 - LOWER_ARM_FLOOR))))
    return out


def axis_position(value: float, axis: dict[str, Any] | go.layout.XAxis | go.layout.YAxis) -> float:
    """Where a data value sits in an annotation's coordinates: Plotly wants log10 on a log axis."""
    return math.log10(value) if axis["type"] == "log" else value


def inside_anchor(position: float, axis_range: Sequence[float]) -> str:
    """'left' in the left half of a range, else 'right': text then grows toward the middle."""
    lo, hi = axis_range
    return "left" if position <= (lo + hi) / 2 else "right"


def label_points(fig: go.Figure, points: Sequence[tuple[float, float, str]]) -> None:
    """Text beside points, once the axes are set: on a white backing, so a line under it does not
    strike it through, and growing toward the middle of the plot, so the edge does not cut it."""
    xaxis, yaxis = fig.layout.xaxis, fig.layout.yaxis
    for x, y, text in points:
        px = axis_position(x, xaxis)
        anchor = inside_anchor(px, xaxis.range)
        fig.add_annotation(x=px, y=axis_position(y, yaxis), text=text, showarrow=False, xanchor=anchor,
                           xshift=LABEL_SHIFT_PX if anchor == "left" else -LABEL_SHIFT_PX, bgcolor=LABEL_BACKING)


LEGEND_ROW_PX = 26  # one row of the legend band at FONT_SIZE
LEGEND_WIDTH_PX = 760  # the band's width in the main column at 1280 × 720, less the margins
LEGEND_CHAR_PX = 8.5  # an average character of a FONT_SIZE legend entry
LEGEND_SYMBOL_PX = 50  # an entry's line or marker sample and the gap after it


def legend_band_px(fig: go.Figure) -> int:
    """About how tall the legend band under the plot is: entries laid in rows as wide as the longest one.
    Traces added after `style` are not counted (their band comes out of the plot's height)."""
    names = [str(t.name) for t in fig.data if t.name and t.showlegend is not False]
    if not names:
        return 0
    widest = max(len(n) for n in names) * LEGEND_CHAR_PX + LEGEND_SYMBOL_PX
    per_row = max(1, int(LEGEND_WIDTH_PX // widest))
    return math.ceil(len(names) / per_row) * LEGEND_ROW_PX


def style(fig: go.Figure, *, title: str | None, height: int, legend: bool = True) -> go.Figure:
    """The layout every chart shares: title, a legend under the plot, room for both. `height` is the chart's
    without its legend: the band the legend takes is added to it, so many series never squeeze the plot."""
    if title:
        fig.update_layout(title=dict(text=title, font=dict(size=FONT_SIZE + 2)))
    fig.update_layout(
        height=height + (legend_band_px(fig) if legend else 0),
        margin=dict(l=10, r=10, t=50 if title else 20, b=10),
        showlegend=legend,
        legend=LEGEND,
        hovermode="closest",
        font=dict(size=FONT_SIZE),  # every other text too: hover, annotations
    )
    # Streamlit's chart theme sets its own, smaller, tick and axis-title fonts on every axis that has none: name them
    fig.update_xaxes(tickfont_size=FONT_SIZE, title_font_size=FONT_SIZE)
    fig.update_yaxes(tickfont_size=FONT_SIZE, title_font_size=FONT_SIZE)
    return fig


def _numbers(points: Any) -> list[float | None]:
    """A trace's coordinates as floats (Plotly keeps numpy arrays); text and gaps become None."""
    if points is None:
        return []
    return [float(v) if isinstance(v, Real) and not isinstance(v, bool) else None for v in points]


def trace_values(fig: go.Figure, axis: str = "y") -> list[float | None]:
    """Every value the traces put on one axis, error-bar ends included, for the axis's range."""
    values: list[float | None] = []
    for trace in fig.data:
        points = _numbers(getattr(trace, axis, None))
        values += points
        error = getattr(trace, f"error_{axis}", None)
        if error is not None and error.array is not None:
            plus = _numbers(error.array)
            minus = _numbers(error.arrayminus) if error.arrayminus is not None else plus
            values += [v + p for v, p in zip(points, plus) if v is not None and p is not None]
            values += [v - m for v, m in zip(points, minus) if v is not None and m is not None]
    return values
