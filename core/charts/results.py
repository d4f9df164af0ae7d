"""Figures for the Results page: saved runs from any machine overlaid on one chart."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from core.lecture import LECTURE_CPU_S, LECTURE_GPU_S, LECTURE_N
from core.plain_text import plotly_safe_frame


@dataclass(frozen=True)
class ReferencePoint:
    n: int
    seconds: float
    label: str

    @property
    def gflops(self) -> float:
        return 2 * self.n**3 / self.seconds / 1e9


# The lecture's figures for A @ A at n = 10,000 in float32, shown beside the class's own runs.
LECTURE_POINTS = (
    ReferencePoint(LECTURE_N, LECTURE_CPU_S, f"lecture: CPU ≈ {LECTURE_CPU_S:g} s"),
    ReferencePoint(LECTURE_N, LECTURE_GPU_S, f"lecture: Colab GPU ≈ {LECTURE_GPU_S:g} s"),
)

MATMUL_METRICS = {"median_s": "time per product (s)", "gflops": "GFLOP/s"}
TRAIN_METRICS = {"test_accuracy": "test accuracy", "train_loss": "train loss", "test_loss": "test loss"}
TRAIN_AXES = {"epoch": "epoch", "elapsed_s": "seconds of training"}


def _is_gpu(device: str) -> bool:
    return device.startswith(("cuda", "mps"))


def matmul_overlay(frame: pd.DataFrame, metric: str = "median_s", *, reference: bool = True) -> go.Figure:
    """Time (or GFLOP/s) against n on log-log axes, one line per (run, device, dtype).

    GPUs are drawn solid and CPUs dashed, so a laptop's CPU and a lab's GPU read apart at a glance;
    the spread (IQR) is an error bar on each time.
    """
    fig = go.Figure()
    frame = plotly_safe_frame(frame)  # labels, machines and devices come from other people's imports
    for series, rows in frame.groupby("series", sort=False):
        rows = rows.sort_values("n")
        device = str(rows["device"].iloc[0])
        error = None
        if metric == "median_s" and rows["iqr_s"].notna().any():
            error = dict(type="data", array=(rows["iqr_s"].fillna(0) / 2).tolist(), visible=True, thickness=1)
        fig.add_scatter(
            x=rows["n"], y=rows[metric], name=str(series), mode="lines+markers", error_y=error,
            line=dict(dash="solid" if _is_gpu(device) else "dash"),
            customdata=rows[["machine", "samples"]].to_numpy(),
            hovertemplate="%{fullData.name}<br>n = %{x}<br>%{y:.4g}<br>%{customdata[0]}, %{customdata[1]} samples"
                          "<extra></extra>",
        )
    if reference:
        points = LECTURE_POINTS
        fig.add_scatter(
            x=[p.n for p in points], y=[p.seconds if metric == "median_s" else p.gflops for p in points],
            text=[p.label for p in points], mode="markers+text", textposition="middle left", name="lecture (n = 10,000)",
            marker=dict(symbol="star", size=14, color="black"), hovertemplate="%{text}<extra></extra>",
        )
    fig.update_layout(
        xaxis=dict(type="log", title="matrix size n (n × n)"),
        yaxis=dict(type="log", title=MATMUL_METRICS[metric]),
        legend=dict(orientation="h", y=-0.2), margin=dict(l=10, r=10, t=30, b=10), height=520,
    )
    return fig


def train_overlay(frame: pd.DataFrame, metric: str = "test_accuracy", x: str = "epoch") -> go.Figure:
    """A training metric by epoch or by seconds of training, one line per run: the CPU-vs-GPU race."""
    fig = go.Figure()
    frame = plotly_safe_frame(frame)
    for series, rows in frame.groupby("series", sort=False):
        device = str(rows["device"].iloc[0])
        fig.add_scatter(x=rows[x], y=rows[metric], name=str(series), mode="lines+markers",
                        line=dict(dash="solid" if _is_gpu(device) else "dash"),
                        hovertemplate="%{fullData.name}<br>%{x:.4g}: %{y:.4g}<extra></extra>")
    fig.update_layout(
        xaxis=dict(title=TRAIN_AXES[x]), yaxis=dict(title=TRAIN_METRICS[metric]),
        legend=dict(orientation="h", y=-0.2), margin=dict(l=10, r=10, t=30, b=10), height=440,
    )
    return fig
