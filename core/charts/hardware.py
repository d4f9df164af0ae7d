"""Figures for the hardware check."""

from __future__ import annotations

import plotly.graph_objects as go

from core.charts.axis_style import linear_axis, style
from core.platform.hardware import GpuInfo
from core.platform.units import GIB, byte_size


def gpu_memory_bar(gpu: GpuInfo) -> go.Figure:
    """One horizontal stacked bar: used and free GiB of one GPU (Colab's 'GPU RAM' line)."""
    used = (gpu.used_memory_bytes or 0) / GIB
    free = (gpu.free_memory_bytes or 0) / GIB
    fig = go.Figure()
    fig.add_bar(y=["GPU RAM"], x=[used], name=f"used {byte_size(gpu.used_memory_bytes or 0)}", orientation="h",
                marker_color="#d62728")
    fig.add_bar(y=["GPU RAM"], x=[free], name=f"free {byte_size(gpu.free_memory_bytes or 0)}", orientation="h",
                marker_color="#2ca02c")
    style(fig, title=None, height=160)
    fig.update_layout(barmode="stack", xaxis=linear_axis([used + free], "GiB", headroom=0.0))
    return fig
