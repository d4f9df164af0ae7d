"""Figures for the review classifier: one run's loss curves, and several runs raced against each other."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import plotly.graph_objects as go

from core.charts.axis_style import linear_axis, style, time_unit, trace_values
from core.classifier.runs import lowest_test_loss_epoch
from core.parallel.figures import split_work_chart
from core.classifier.preset_race import PresetRace
from core.classifier.scaling_result import Scaling
from core.results.train import TrainEpoch
from core.plain_text import for_plotly
from core.platform.units import number, percent

TRAIN_COLOR = "#1f77b4"
TEST_COLOR = "#d62728"
BASELINE_COLOR = "#7f7f7f"
KEPT_COLOR = "#2ca02c"
LOWEST_COLOR = "#ff7f0e"
ACCURACY_ROOM = 0.05  # above and below the accuracies drawn
METRICS = {  # what an overlay can show: label, how to read it off a report
    "test_loss": "test loss",
    "train_loss": "train loss",
    "test_accuracy": "test accuracy",
}


def _metric(report: TrainEpoch, metric: str) -> float | None:
    if metric == "train_loss":
        return report.train_loss
    if metric == "test_loss":
        return report.test_loss
    if metric == "test_accuracy":
        return report.test_accuracy
    raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")


def lowest_test_loss(reports: Sequence[TrainEpoch]) -> TrainEpoch | None:
    """The end-of-epoch report to mark as the lowest test loss (core.classifier.runs decides which)."""
    epoch = lowest_test_loss_epoch(reports)
    return next((r for r in reports if not r.partial and r.epoch == epoch), None)


def _epoch_line(fig: go.Figure, epoch: float, name: str, color: str, dash: str) -> None:
    """A vertical line at an epoch, named in the legend rather than by text in the plot.

    Text beside the line collided with the baseline's label; the legend never does.
    """
    fig.add_vline(x=epoch, line=dict(color=color, dash=dash, width=1.5))
    fig.add_scatter(x=[None], y=[None], mode="lines", name=name, line=dict(color=color, dash=dash, width=1.5))


def _baseline(fig: go.Figure, y: float, text: str) -> None:
    """The baseline's dashed line, its label just above it at the left edge of the plot."""
    fig.add_hline(y=y, line=dict(color=BASELINE_COLOR, dash="dash"))
    fig.add_annotation(x=0, xref="paper", xanchor="left", y=y, yref="y", yanchor="bottom", text=text,
                       showarrow=False, font=dict(color=BASELINE_COLOR))


def loss_curves(reports: Sequence[TrainEpoch], *, baseline_loss: float | None = None,
                baseline_name: str = "LogisticRegression", epochs: int | None = None,
                kept_epoch: int | None = None, run: str | None = None) -> go.Figure:
    """Train and test loss by epoch (fractional for mid-epoch reports), with the baseline's test loss.

    The epoch with the lowest test loss gets a star and a line: where test loss turns up while
    train loss keeps falling, the network has begun to learn the training reviews by heart
    (overfitting). `epochs` fixes the x range to the whole run, so the axis does not jump while it
    trains; `kept_epoch` (chosen on validation data) is drawn too when given. `run` names the run in the
    legend's lines ("run 2 · cuda:0 · lecture"), so a screenshot says which preset and device it shows.
    """
    prefix = f"{for_plotly(run)}: " if run else ""
    x = [r.progress for r in reports]
    fig = go.Figure()
    fig.add_scatter(x=x, y=[r.train_loss for r in reports], name=f"{prefix}train loss", mode="lines+markers",
                    line=dict(color=TRAIN_COLOR))
    fig.add_scatter(x=x, y=[r.test_loss for r in reports], name=f"{prefix}test loss", mode="lines+markers",
                    line=dict(color=TEST_COLOR),
                    customdata=[[r.test_accuracy, r.seconds] for r in reports],
                    hovertemplate="epoch %{x:.2f}<br>test loss %{y:,.3~r}<br>test accuracy %{customdata[0]:.1%}"
                                  "<br>%{customdata[1]:,.3~r} s this epoch<extra></extra>")
    lowest = lowest_test_loss(reports)
    if lowest is not None:
        fig.add_scatter(x=[lowest.progress], y=[lowest.test_loss], mode="markers",
                        name=f"lowest test loss: epoch {lowest.epoch}",
                        marker=dict(symbol="star", size=16, color=LOWEST_COLOR, line=dict(width=1, color="black")))
    if kept_epoch is not None:
        _epoch_line(fig, kept_epoch, f"kept epoch ({kept_epoch})", KEPT_COLOR, "dot")
    if baseline_loss is not None:
        _baseline(fig, baseline_loss, f"{baseline_name} test loss {number(baseline_loss)}")
    style(fig, title=None, height=380)
    y_top = max(trace_values(fig, "y") + ([baseline_loss] if baseline_loss is not None else []),
                key=lambda v: v or 0.0, default=None)
    fig.update_layout(xaxis=dict(title=dict(text="epoch"), automargin=True),
                      yaxis=linear_axis([y_top], "binary cross-entropy"))
    if epochs:
        fig.update_xaxes(range=[0, epochs + 0.2])
    return fig


def accuracy_curve(reports: Sequence[TrainEpoch], *, baseline_accuracy: float | None = None,
                   baseline_name: str = "LogisticRegression", best_epoch: int | None = None,
                   run: str | None = None) -> go.Figure:
    """Test accuracy by epoch against the baseline's; the kept epoch is a line named in the legend; `run` as in
    loss_curves."""
    fig = go.Figure()
    name = f"{for_plotly(run)}: test accuracy" if run else "test accuracy"
    fig.add_scatter(x=[r.progress for r in reports], y=[r.test_accuracy for r in reports], name=name,
                    mode="lines+markers", line=dict(color=TEST_COLOR))
    if best_epoch is not None:
        _epoch_line(fig, best_epoch, f"kept epoch ({best_epoch})", KEPT_COLOR, "dot")
    if baseline_accuracy is not None:
        _baseline(fig, baseline_accuracy, f"{baseline_name} {percent(baseline_accuracy)}")
    style(fig, title=None, height=300)
    shown = [v for v in trace_values(fig, "y") if v is not None] + ([baseline_accuracy] if baseline_accuracy else [])
    fig.update_layout(xaxis=dict(title=dict(text="epoch"), automargin=True),
                      yaxis=dict(title=dict(text="test accuracy"), tickformat=".0%", automargin=True,
                                 range=_accuracy_range(shown)))
    return fig


def _accuracy_range(values: Sequence[float]) -> list[float]:
    """The accuracies with 5 points of room each side, for the baseline's label even at 100%."""
    if not values:
        return [0.0, 1.0]
    return [max(0.0, min(values) - ACCURACY_ROOM), max(values) + ACCURACY_ROOM]


class Run(Protocol):
    """What the overlay needs of a run (core.classifier.runs.RunRecord has it)."""

    @property
    def label(self) -> str: ...  # e.g. "run 2 · cuda:0"

    @property
    def reports(self) -> Sequence[TrainEpoch]: ...


def overlay(runs: Sequence[Run], *, by: str = "epoch", metric: str = "test_loss") -> go.Figure:
    """Several runs on one chart, by epoch (which learns more per pass) or by wall time (the race:
    which device gets to a given loss first)."""
    if by not in ("epoch", "seconds"):
        raise ValueError(f"by must be 'epoch' or 'seconds', not {by!r}")
    fig = go.Figure()
    for run in runs:
        xs = [r.progress if by == "epoch" else r.elapsed_s for r in run.reports]
        fig.add_scatter(x=xs, y=[_metric(r, metric) for r in run.reports], name=for_plotly(run.label),
                        mode="lines+markers")
    style(fig, title=None, height=380)
    fig.update_layout(xaxis=dict(title=dict(text="epoch" if by == "epoch" else
                                            "seconds since the start (device-synchronized)"), automargin=True),
                      yaxis=dict(title=dict(text=METRICS[metric]), automargin=True))
    if metric == "test_accuracy":
        fig.update_yaxes(tickformat=".0%")
    return fig


PRESET_BARS = {"lecture": "lecture: 1 full-batch update per epoch",
               "minibatch": "mini-batch: many small updates per epoch"}


def preset_race_chart(race: PresetRace) -> go.Figure:
    """Seconds per epoch of each preset, one bar per device, on a linear axis from zero, so bars compare by their
    length (a log axis drew 0.11 s and 0.345 s as if 20x apart). One unit: the lecture's full-batch update is its
    whole epoch, so both presets are timed per pass over the training reviews."""
    fig = go.Figure()
    unit = time_unit(t.seconds_per_step for t in race.timings)  # the axis and the bars' labels in one unit
    for device in dict.fromkeys(t.device for t in race.timings):
        shown = [t for t in race.timings if t.device == device]
        heights = unit.scale(t.seconds_per_step for t in shown)
        fig.add_bar(x=[PRESET_BARS.get(t.preset, t.preset) for t in shown], y=heights, name=for_plotly(device),
                    text=[None if h is None else f"{number(h)} {unit.name}" for h in heights], textposition="outside")
    style(fig, title=None, height=340)
    fig.update_layout(barmode="group",
                      yaxis=linear_axis(trace_values(fig, "y"), f"time per epoch, median ({unit.name})"))
    return fig


def scaling_chart(scaling: Scaling) -> go.Figure:
    """Seconds per epoch against workers: the time a gradient all-reduce was in flight stacked on the rest of
    the epoch, the ideal 1/K as a line. DDP overlaps the all-reduce with backward (core.classifier.distributed
    times it so), so part of the orange was also backward time: the legend says so rather than "compute"."""
    points = scaling.points
    return split_work_chart([p.workers for p in points], [p.compute_per_epoch for p in points],
                            [p.allreduce_per_epoch for p in points], [scaling.ideal(p.workers) for p in points],
                            communication_name="gradient all-reduce in flight (backward runs beside it)",
                            compute_name="rest of the epoch", y_title="seconds per epoch (median)")
