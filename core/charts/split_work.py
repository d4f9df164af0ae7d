"""One picture for work split among K workers: each bar is compute plus communication, under the ideal 1/K line.

The classifier's scaling (gradient all-reduce) and the marbles across processes (all_gather) both
draw it, so students read the same chart twice: what more workers divide (compute) and what they
do not (talking to each other, Amdahl's law).
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

COMPUTE_COLOR = "#1f77b4"
COMMUNICATION_COLOR = "#ff7f0e"
IDEAL_COLOR = "#7f7f7f"


def split_work_chart(workers: Sequence[int], compute: Sequence[float], communication: Sequence[float],
                     ideal: Sequence[float | None], *, communication_name: str, y_title: str,
                     x_title: str = "workers (processes)") -> go.Figure:
    """Stacked bars per worker count (compute, then communication labelled with its share), the ideal as a line."""
    labels = [str(k) for k in workers]
    shares = [talk / (work + talk) if work + talk > 0 else 0.0 for work, talk in zip(compute, communication)]
    fig = go.Figure()
    fig.add_bar(x=labels, y=list(compute), name="compute", marker_color=COMPUTE_COLOR)
    fig.add_bar(x=labels, y=list(communication), name=communication_name, marker_color=COMMUNICATION_COLOR,
                text=[f"{s:.0%}" for s in shares], textposition="inside")
    fig.add_scatter(x=labels, y=list(ideal), name="ideal (1 worker / K)", mode="lines+markers",
                    line=dict(color=IDEAL_COLOR, dash="dash"))
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=30, b=10), barmode="stack",
                      xaxis=dict(title=x_title, type="category"), yaxis_title=y_title,
                      legend=dict(orientation="h", y=1.12))
    return fig
