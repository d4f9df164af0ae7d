"""Figures for the review classifier: one run's loss curves, and several runs raced against each other."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import plotly.graph_objects as go

from core.classifier.preset_race import PresetRace
from core.classifier.training import EpochReport
from core.plain_text import for_plotly

TRAIN_COLOR = "#1f77b4"
TEST_COLOR = "#d62728"
BASELINE_COLOR = "#7f7f7f"
METRICS = {  # what an overlay can show: label, how to read it off a report
    "test_loss": "test loss",
    "train_loss": "train loss",
    "test_accuracy": "test accuracy",
}


def _metric(report: EpochReport, metric: str) -> float:
    if metric == "train_loss":
        return report.train_loss
    if metric == "test_loss":
        return report.test.loss
    if metric == "test_accuracy":
        return report.test.accuracy
    raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")


def loss_curves(reports: Sequence[EpochReport], *, baseline_loss: float | None = None,
                baseline_name: str = "LogisticRegression", epochs: int | None = None) -> go.Figure:
    """Train and test loss by epoch (fractional for mid-epoch reports), with the baseline's test loss.

    `epochs` fixes the x range to the whole run, so the axis does not jump while it trains.
    """
    x = [r.progress for r in reports]
    fig = go.Figure()
    fig.add_scatter(x=x, y=[r.train_loss for r in reports], name="train loss", mode="lines+markers",
                    line=dict(color=TRAIN_COLOR))
    fig.add_scatter(x=x, y=[r.test.loss for r in reports], name="test loss", mode="lines+markers",
                    line=dict(color=TEST_COLOR),
                    customdata=[[r.test.accuracy, r.seconds] for r in reports],
                    hovertemplate="epoch %{x:.2f}<br>test loss %{y:.4f}<br>test accuracy %{customdata[0]:.3f}"
                                  "<br>%{customdata[1]:.2f} s this epoch<extra></extra>")
    if baseline_loss is not None:
        fig.add_hline(y=baseline_loss, line=dict(color=BASELINE_COLOR, dash="dash"),
                      annotation_text=f"{baseline_name} test loss {baseline_loss:.3f}", annotation_position="top left")
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=30, b=10), xaxis_title="epoch",
                      yaxis_title="binary cross-entropy", legend=dict(orientation="h", y=1.12))
    if epochs:
        fig.update_xaxes(range=[0, epochs + 0.2])
    fig.update_yaxes(rangemode="tozero")
    return fig


def accuracy_curve(reports: Sequence[EpochReport], *, baseline_accuracy: float | None = None,
                   baseline_name: str = "LogisticRegression", best_epoch: int | None = None) -> go.Figure:
    """Test accuracy by epoch against the baseline's; the kept epoch is marked."""
    fig = go.Figure()
    fig.add_scatter(x=[r.progress for r in reports], y=[r.test.accuracy for r in reports], name="test accuracy",
                    mode="lines+markers", line=dict(color=TEST_COLOR))
    if baseline_accuracy is not None:
        fig.add_hline(y=baseline_accuracy, line=dict(color=BASELINE_COLOR, dash="dash"),
                      annotation_text=f"{baseline_name} {baseline_accuracy:.3f}", annotation_position="bottom right")
    if best_epoch is not None:
        fig.add_vline(x=best_epoch, line=dict(color="#2ca02c", dash="dot"), annotation_text="kept epoch")
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=30, b=10), xaxis_title="epoch",
                      yaxis_title="test accuracy", yaxis_tickformat=".0%", showlegend=False)
    return fig


class Run(Protocol):
    """What the overlay needs of a run (core.classifier.runs.RunRecord has it)."""

    @property
    def label(self) -> str: ...  # e.g. "run 2 · cuda:0"

    @property
    def reports(self) -> Sequence[EpochReport]: ...


def overlay(runs: Sequence[Run], *, by: str = "epoch", metric: str = "test_loss") -> go.Figure:
    """Several runs on one chart, by epoch (which learns more per pass) or by wall time (the race:
    which device gets to a given loss first)."""
    if by not in ("epoch", "seconds"):
        raise ValueError(f"by must be 'epoch' or 'seconds', not {by!r}")
    fig = go.Figure()
    for run in runs:
        xs = [r.progress if by == "epoch" else r.elapsed_s for r in run.reports]
        fig.add_scatter(x=xs, y=[_metric(r, metric) for r in run.reports], name=for_plotly(run.label), mode="lines+markers")
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=30, b=10),
                      xaxis_title="epoch" if by == "epoch" else "seconds since the start (device-synchronized)",
                      yaxis_title=METRICS[metric], legend=dict(orientation="h", y=1.12))
    if metric == "test_accuracy":
        fig.update_yaxes(tickformat=".0%")
    return fig


def preset_race_chart(race: PresetRace) -> go.Figure:
    """Seconds per step (a full-batch update, a mini-batch epoch) of each preset, one bar per device, log scale:
    the lecture's bars differ by the GPU's lead, the mini-batch bars barely."""
    fig = go.Figure()
    for device in dict.fromkeys(t.device for t in race.timings):
        shown = [t for t in race.timings if t.device == device]
        fig.add_bar(x=[f"{t.preset} (per {t.step_name})" for t in shown], y=[t.seconds_per_step for t in shown],
                    name=for_plotly(device), text=[None if t.seconds_per_step is None else f"{t.seconds_per_step:.3g} s"
                                                   for t in shown], textposition="outside")
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=30, b=10), barmode="group",
                      yaxis_title="seconds per step (median)", legend=dict(orientation="h", y=1.12))
    fig.update_yaxes(type="log")
    return fig
