"""Figures for the Results page: saved runs from any machine overlaid on one chart, and how each kind is drawn.

`VIEWS` is the Results page's half of a kind's record (the rest is its `ResultKind`, core/results/result_kind.py,
which the bottom layer declares and which may not import a chart): per kind, a heading, the choices above its
figures, the figures of the chosen runs and a caption. The page walks this list; a kind without a view is
listed, filtered and exported, but not drawn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go

from core.charts.axis_style import (TimeUnit, clipped_lower_arms, label_points, linear_axis, log_axis, style,
                                    time_unit, trace_values)
from core import glossary
from core.lecture import LECTURE_CPU_S, LECTURE_GPU_S, LECTURE_N, LECTURE_SENTENCE
from core.plain_text import plotly_safe_frame
from core.results.cluster import ClusterRun
from core.platform.units import number
from core.store.frames import kind_frame
from core.store.records import StoredRun


@dataclass(frozen=True)
class ReferencePoint:
    n: int
    seconds: float
    label: str

    @property
    def gflops(self) -> float:
        return 2 * self.n**3 / self.seconds / 1e9

    def labelled(self, metric: str, unit: TimeUnit) -> tuple[float, str]:
        """Where the point sits on a chart of `metric`, and its label in that chart's unit."""
        if metric == "gflops":
            return self.gflops, f"{self.label} ≈ {number(self.gflops)} GFLOP/s"
        return self.seconds * unit.per_second, f"{self.label} ≈ {unit.label(self.seconds)}"


# The lecture's figures for A @ A at n = 10,000 in float32, shown beside the class's own runs.
LECTURE_POINTS = (
    ReferencePoint(LECTURE_N, LECTURE_CPU_S, "lecture: CPU"),
    ReferencePoint(LECTURE_N, LECTURE_GPU_S, "lecture: Colab GPU"),
)

MATMUL_METRICS = {"median_s": "time per product", "gflops": "GFLOP/s"}
TRAIN_METRICS = {"test_accuracy": "test accuracy", "train_loss": "train loss", "test_loss": "test loss"}
TRAIN_AXES = {"epoch": "epoch", "elapsed_s": "seconds of training"}


def _is_gpu(device: str) -> bool:
    return device.startswith(("cuda", "mps", "webgpu"))


def matmul_overlay(frame: pd.DataFrame, metric: str = "median_s", *, reference: bool = True) -> go.Figure:
    """Time (or GFLOP/s) against n on log-log axes, one line per (run, device, dtype).

    GPUs are drawn solid and CPUs dashed, so a laptop's CPU and a lab's GPU read apart at a glance;
    the spread (IQR) is an error bar on each time. Times share one unit (ms or µs) chosen from the
    runs, and the lecture's stars are labelled in the chart's own unit.
    """
    fig = go.Figure()
    frame = plotly_safe_frame(frame)  # labels, machines and devices come from other people's imports
    seconds = [*frame["median_s"]] if metric == "median_s" else []
    unit = time_unit(seconds + ([p.seconds for p in LECTURE_POINTS] if reference else []))
    scale = unit.per_second if metric == "median_s" else 1.0
    for series, rows in frame.groupby("series", sort=False):
        rows = rows.sort_values("n")
        device = str(rows["device"].iloc[0])
        y = (rows[metric] * scale).tolist()
        error = None
        if metric == "median_s" and rows["iqr_s"].notna().any():
            arm = (rows["iqr_s"].fillna(0) / 2 * scale).tolist()
            error = dict(type="data", symmetric=False, array=arm, arrayminus=clipped_lower_arms(y, arm),
                         visible=True, thickness=1)
        fig.add_scatter(
            x=rows["n"], y=y, name=str(series), mode="lines+markers", error_y=error,
            line=dict(dash="solid" if _is_gpu(device) else "dash"),
            customdata=rows[["machine", "samples"]].to_numpy(),
            hovertemplate="%{fullData.name}<br>n = %{x}<br>%{y:,.3~r}" + (f" {unit.name}" if scale != 1.0 else "")
                          + "<br>%{customdata[0]}, %{customdata[1]} samples<extra></extra>",
        )
    marks = [p.labelled(metric, unit) for p in LECTURE_POINTS] if reference else []
    if marks:
        fig.add_scatter(
            x=[p.n for p in LECTURE_POINTS], y=[y for y, _ in marks], text=[label for _, label in marks],
            mode="markers", name="lecture (n = 10,000)",
            marker=dict(symbol="star", size=14, color="black"), hovertemplate="%{text}<extra></extra>",
        )
    y_title = f"{MATMUL_METRICS[metric]} ({unit.name})" if metric == "median_s" else MATMUL_METRICS[metric]
    style(fig, title=None, height=520)
    fig.update_layout(xaxis=log_axis(trace_values(fig, "x"), "matrix size n (n × n)"),
                      yaxis=log_axis(trace_values(fig, "y"), y_title))
    label_points(fig, [(p.n, y, label) for p, (y, label) in zip(LECTURE_POINTS, marks)])
    return fig


def train_overlay(frame: pd.DataFrame, metric: str = "test_accuracy", x: str = "epoch") -> go.Figure:
    """A training metric by epoch or by seconds of training, one line per run: the CPU-vs-GPU race."""
    fig = go.Figure()
    frame = plotly_safe_frame(frame)
    for series, rows in frame.groupby("series", sort=False):
        device = str(rows["device"].iloc[0])
        fig.add_scatter(x=rows[x], y=rows[metric], name=str(series), mode="lines+markers",
                        line=dict(dash="solid" if _is_gpu(device) else "dash"),
                        hovertemplate="%{fullData.name}<br>%{x:,.3~r}: %{y:,.3~r}<extra></extra>")
    style(fig, title=None, height=440)
    fig.update_layout(xaxis=linear_axis(trace_values(fig, "x"), TRAIN_AXES[x], headroom=0.05),
                      yaxis=dict(title=dict(text=TRAIN_METRICS[metric]), automargin=True))
    if metric == "test_accuracy":
        fig.update_yaxes(tickformat=".0%")
    return fig


# ---- each kind's view on the Results page

Choice = str | bool  # what a control gives: a radio's value, a toggle's state
Figures = Callable[[Sequence[StoredRun], tuple[Choice, ...]], list[tuple[str, go.Figure]]]


@dataclass(frozen=True)
class Control:
    """One choice above a kind's figures: a radio of `options` (value: words), or an on/off toggle without."""

    key: str  # the page's widget key
    label: str
    options: Mapping[str, str] | None = None
    default: bool = True  # a toggle's first state
    width: int = 1  # its share of the row


@dataclass(frozen=True)
class ResultsView:
    """How the Results page draws one kind: `figures(runs, choices)` gives (key suffix, figure) pairs of the
    chosen runs of that kind, in the order of `controls`' values; none when no run can be drawn."""

    kind: str
    figures: Figures
    heading: str = ""  # a subheader over its controls and figures; "" when the figure titles itself
    controls: tuple[Control, ...] = ()
    caption: str = ""


def _matmul(runs: Sequence[StoredRun], choices: tuple[Choice, ...]) -> list[tuple[str, go.Figure]]:
    sweeps = kind_frame("matmul", runs)
    return [] if sweeps.empty else [("chart", matmul_overlay(sweeps, str(choices[0]), reference=bool(choices[1])))]


def _train(runs: Sequence[StoredRun], choices: tuple[Choice, ...]) -> list[tuple[str, go.Figure]]:
    trainings = kind_frame("train", runs)
    return [] if trainings.empty else [("chart", train_overlay(trainings, str(choices[0]), str(choices[1])))]


def _roofline(runs: Sequence[StoredRun], choices: tuple[Choice, ...]) -> list[tuple[str, go.Figure]]:
    from core.charts.roofline import roofline_overlay  # the roofline's model: only when a roofline is drawn

    figure = roofline_overlay(runs)
    return [] if figure is None else [("chart", figure)]


def _cluster(runs: Sequence[StoredRun], choices: tuple[Choice, ...]) -> list[tuple[str, go.Figure]]:
    from core.charts.ranks import ranks_figure

    return [(str(r.run_id), ranks_figure(r.result, r.title)) for r in runs if isinstance(r.result, ClusterRun)]


def _browser(runs: Sequence[StoredRun], choices: tuple[Choice, ...]) -> list[tuple[str, go.Figure]]:
    races = kind_frame("browser", runs)
    return [] if races.empty else [("chart", matmul_overlay(races, str(choices[0]), reference=False))]


VIEWS: tuple[ResultsView, ...] = (
    ResultsView("matmul", _matmul, heading="Matmul sweeps",
                controls=(Control("results_matmul_metric", "Show", MATMUL_METRICS, width=2),
                          Control("results_reference", "Lecture's reference points")),
                caption=f"Solid lines: GPUs; dashed: CPUs. Error bars span the {glossary.IQR} "
                        f"Stars: {LECTURE_SENTENCE}."),
    ResultsView("train", _train, heading="Training runs",
                controls=(Control("results_train_metric", "Show", TRAIN_METRICS),
                          Control("results_train_x", "Against", TRAIN_AXES))),
    ResultsView("roofline", _roofline),  # titled "Rooflines" itself
    ResultsView("cluster", _cluster),  # every device at once: one chart per run
    ResultsView("browser", _browser, heading="Races in the browser",
                controls=(Control("results_browser_metric", "Show", MATMUL_METRICS),),
                caption="Measured by students' browsers: solid lines WebGPU, dashed WebAssembly on the CPU. "
                        "A software adapter (SwiftShader) is marked: it is the CPU drawing, not a GPU."),
)


def view_of(kind: str) -> ResultsView:
    """The view of `kind` (read from VIEWS when asked, so the list stays the one source)."""
    return next(view for view in VIEWS if view.kind == kind)
