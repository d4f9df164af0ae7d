"""The room's reference on the Class board's crossover chart: its interval as a band between the guesses and the
class's measurements, or a legend line saying it cannot tell. Added to the figure core.charts.class_board draws."""

from __future__ import annotations

import plotly.graph_objects as go

from core.charts.axis_style import log_axis
from core.results.crossover import FOUND
from core.results.matmul import MatmulSweep

REFERENCE_COLOR = "#e66101"
REFERENCE_ROW = 0.5  # between the guesses (1) and the class's measurements (0)
REFERENCE_NAME = "room's reference"


def with_reference(fig: go.Figure, sweep: MatmulSweep | None) -> go.Figure:
    """`fig` (the crossover spread) with the reference's headline crossover: the interval (n_low, n_high] it lies
    in as a band, or, when the reference could not call it, a legend entry saying 'cannot tell'. The axis is
    widened to hold the band."""
    if sweep is None:
        return fig
    c = sweep.headline_crossover
    high = c.n_high if c is not None and c.n_high is not None else (c.n if c is not None else None)
    if c is None or c.call != FOUND or high is None:
        word = "no crossover" if c is None or c.call == "none" else "cannot tell"
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{REFERENCE_NAME}: {word}",
                                 marker=dict(size=12, color=REFERENCE_COLOR, symbol="x")))
        return fig
    low = float(c.n_low or high / 2)
    fig.add_trace(go.Scatter(x=[low, float(high)], y=[REFERENCE_ROW] * 2, mode="lines+markers", name=REFERENCE_NAME,
                             line=dict(width=8, color=REFERENCE_COLOR), marker=dict(size=10, symbol="line-ns-open"),
                             hovertemplate=f"{REFERENCE_NAME}: n between {low:,.0f} and {high:,.0f}<extra></extra>"))
    values = [x for trace in fig.data for x in (getattr(trace, "x", None) or ()) if isinstance(x, (int, float))]
    title = fig.layout.xaxis.title.text or ""
    fig.update_layout(xaxis=log_axis([*values, low, float(high)], title, headroom=0.05, below=0.05))
    return fig
