"""Figures for the Matmul race: time, GFLOP/s and speed-up against matrix size.

Pure functions of the sweep's results table (core.matmul.sweep.RESULT_COLUMNS) and its crossovers;
every axis over sizes is logarithmic, since sizes double and times grow as n^3.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from core.charts.axis_style import (axis_position, clipped_lower_arms, inside_anchor, label_points, log_axis, style,
                                    time_unit, trace_values)
from core.platform.units import number, times
from core.lecture import LECTURE_CPU_S, LECTURE_GPU_S, LECTURE_N
from core.results.crossover import Crossover, Verdict

PALETTE = qualitative.Plotly
HEIGHT_PX = 430


def _colors(frame: pd.DataFrame) -> dict[str, str]:
    """One colour per series, in the order the series first appear, the same on every chart."""
    return {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(dict.fromkeys(frame["series"]))}


def _by_series(frame: pd.DataFrame, colors: dict[str, str]) -> Iterator[tuple[str, pd.DataFrame]]:
    """(series, its rows by ascending n), in the order of the colour map."""
    for series in colors:
        yield series, frame[frame["series"] == series].sort_values("n")


SIZE_TITLE = "matrix size n (n × n)"


def _layout(fig: go.Figure, title: str, y_title: str) -> go.Figure:
    """Log-log axes over everything drawn, decade ticks, the legend right of the plot."""
    style(fig, title=title, height=HEIGHT_PX)
    fig.update_layout(xaxis=log_axis(trace_values(fig, "x"), SIZE_TITLE),
                      yaxis=log_axis(trace_values(fig, "y"), y_title))
    return fig


def _empty(title: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text="no results yet", showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    return _layout(fig, title, "")


def _lecture_point(fig: go.Figure, y: float, label: str, symbol: str) -> tuple[float, float, str]:
    """A lecture figure at n = 10,000; returns its label for label_points once the axes are set."""
    fig.add_scatter(
        x=[LECTURE_N], y=[y], mode="markers", name=label,
        marker=dict(symbol=symbol, size=13, color="black", line=dict(width=1, color="white")),
        hovertemplate=f"{label}<extra></extra>",
    )
    return (LECTURE_N, y, label)


CACHE_TITLES = {"warm": "warm cache", "cold": "cold cache: evicted before each call"}


def cache_title(title: str, cache: str | None) -> str:
    """The chart's title with the cache it was timed with (None: an older run, which was warm, says nothing)."""
    return title if cache is None else f"{title} · {CACHE_TITLES.get(cache, cache)}"


def time_figure(frame: pd.DataFrame, *, lecture: bool = True, cache: str | None = None) -> go.Figure:
    """Median time per product, with the interquartile range as error bars; log-log.

    Where measured, GPU series also get a dashed line for the unsynchronized (wrong) figure and a
    dotted one for end to end (copies included), so the bug and the copy cost sit beside the truth.
    One unit (ms or µs) for the whole axis, chosen from the data and the lecture's points. The
    title names the cache (`cache`, the sweep's "warm" or "cold").
    """
    title = cache_title("Time per product (median; bars: interquartile range)", cache)
    if frame.empty:
        return _empty(title)
    seconds = [*frame["median_s"], *frame["unsynced_s"], *frame["end_to_end_s"]]
    unit = time_unit(seconds + ([LECTURE_CPU_S, LECTURE_GPU_S] if lecture else []))
    colors = _colors(frame)
    fig = go.Figure()
    for series, rows in _by_series(frame, colors):
        color = colors[series]
        median = unit.scale(rows["median_s"])
        fig.add_scatter(
            x=rows["n"], y=median, mode="lines+markers", name=series, line=dict(color=color),
            error_y=dict(type="data", symmetric=False, array=unit.scale(rows["q3_s"] - rows["median_s"]),
                         arrayminus=clipped_lower_arms(median, unit.scale(rows["median_s"] - rows["q1_s"])),
                         thickness=1.2),
            customdata=rows[["min_s", "max_s", "samples", "calls_per_block"]].to_numpy()
            * [unit.per_second, unit.per_second, 1, 1],
            hovertemplate=(f"{series}<br>n=%{{x}}<br>median %{{y:,.3~r}} {unit.name}<br>min %{{customdata[0]:,.3~r}} "
                           f"{unit.name}, max %{{customdata[1]:,.3~r}} {unit.name}<br>%{{customdata[2]}} samples of "
                           "%{customdata[3]} calls<extra></extra>"),
        )
        unsynced = rows.dropna(subset=["unsynced_s"])
        if not unsynced.empty:
            fig.add_scatter(x=unsynced["n"], y=unit.scale(unsynced["unsynced_s"]), mode="lines+markers",
                            name=f"{series}, not synchronized (wrong)", line=dict(color=color, dash="dash"),
                            marker=dict(symbol="x"))
        if rows["device"].iloc[0] != "cpu":
            e2e = rows.dropna(subset=["end_to_end_s"])
            if not e2e.empty:
                fig.add_scatter(x=e2e["n"], y=unit.scale(e2e["end_to_end_s"]), mode="lines+markers",
                                name=f"{series}, with copies", line=dict(color=color, dash="dot"),
                                marker=dict(symbol="diamond"))
    labels = [_lecture_point(fig, LECTURE_CPU_S * unit.per_second, f"lecture CPU ≈ {unit.label(LECTURE_CPU_S)}",
                             "square"),
              _lecture_point(fig, LECTURE_GPU_S * unit.per_second, f"lecture Colab GPU ≈ {unit.label(LECTURE_GPU_S)}",
                             "star")] if lecture else []
    _layout(fig, title, f"time per product ({unit.name})")
    label_points(fig, labels)
    return fig


def gflops_figure(frame: pd.DataFrame, *, lecture: bool = True, cache: str | None = None) -> go.Figure:
    """Throughput 2n³/t against size: where each device reaches its speed (title: the cache it was timed with)."""
    title = cache_title("Throughput (2n³ / median time)", cache)
    if frame.empty:
        return _empty(title)
    colors = _colors(frame)
    fig = go.Figure()
    for series, rows in _by_series(frame, colors):
        fig.add_scatter(x=rows["n"], y=rows["gflops"], mode="lines+markers", name=series,
                        line=dict(color=colors[series]),
                        hovertemplate=f"{series}<br>n=%{{x}}<br>%{{y:,.3~r}} GFLOP/s<extra></extra>")
    flop = 2 * LECTURE_N**3 / 1e9
    cpu, gpu = flop / LECTURE_CPU_S, flop / LECTURE_GPU_S
    labels = [_lecture_point(fig, cpu, f"lecture CPU ≈ {number(cpu)} GFLOP/s", "square"),
              _lecture_point(fig, gpu, f"lecture Colab GPU ≈ {number(gpu)} GFLOP/s", "star")] if lecture else []
    _layout(fig, title, "GFLOP/s")
    label_points(fig, labels)
    return fig


def speedup_table(frame: pd.DataFrame, challenger: str, baseline: str, column: str = "median_s") -> pd.DataFrame:
    """Columns n and speedup (baseline time / challenger time) at the sizes both measured."""
    wide = frame.pivot_table(index="n", columns="series", values=column, aggfunc="median")
    if challenger not in wide or baseline not in wide:
        return pd.DataFrame({"n": [], "speedup": []})
    both = wide[[challenger, baseline]].dropna()
    return pd.DataFrame({"n": both.index, "speedup": (both[baseline] / both[challenger]).to_numpy()})


def speedup_figure(frame: pd.DataFrame, crossovers: Sequence[Crossover], *, lecture: bool = True) -> go.Figure:
    """Speed-up of each challenger over its baseline, break-even at 1, each crossover marked.

    `crossovers` is MatmulSweep.crossovers: one per (challenger, baseline, time column). The
    labels are annotations placed once the axes are known: "break-even" on its line at the right
    edge, each crossover's text growing toward the middle of the plot, so neither is cut off.
    """
    title = "Speed-up over the baseline (above 1: the challenger is faster)"
    if frame.empty or not crossovers:
        return _empty(title)
    colors = _colors(frame)
    fig = go.Figure()
    fig.add_hline(y=1.0, line=dict(color="grey", dash="dash"))
    marks: list[tuple[int, str]] = []
    gpu_vs_cpu = False
    for c in crossovers:
        table = speedup_table(frame, c.challenger, c.baseline, c.time)
        if table.empty:
            continue
        copies = c.with_copies
        name = f"{c.challenger} vs {c.baseline}" + (" (with copies)" if copies else "")
        color = colors.get(c.challenger, "black")
        fig.add_scatter(x=table["n"], y=table["speedup"], mode="lines+markers", name=name,
                        line=dict(color=color, dash="dot" if copies else "solid"),
                        hovertemplate=f"{name}<br>n=%{{x}}<br>%{{y:,.3~r}}×<extra></extra>")
        if c.n is not None:
            fig.add_vline(x=c.n, line=dict(color=color, dash="dot" if copies else "dash", width=1))
            fig.add_scatter(x=[c.n], y=[1.0], mode="markers", name=f"crossover n ≈ {c.n:,}",
                            marker=dict(color=color, size=12, symbol="circle-open", line=dict(width=2)))
            marks.append((c.n, color))
        gpu_vs_cpu = gpu_vs_cpu or c.gpu_vs_cpu
    labels = []
    if lecture and gpu_vs_cpu:
        ratio = LECTURE_CPU_S / LECTURE_GPU_S
        labels.append(_lecture_point(fig, ratio, f"lecture ≈ {ratio:.1f}× ({LECTURE_CPU_S:g} s vs {LECTURE_GPU_S:g} s)",
                                     "star"))
    fig.add_scatter(x=[None], y=[None], mode="lines", name="break-even (1×)", line=dict(color="grey", dash="dash"))
    _layout(fig, title, "speed-up (×)")
    fig.update_yaxes(range=_with_one(fig.layout.yaxis.range))
    _speedup_labels(fig, marks)
    label_points(fig, labels)
    return fig


def _with_one(log_range: tuple[float, float]) -> list[float]:
    """The y range stretched to show 1× (break-even) with room for its label."""
    lo, hi = log_range
    return [min(lo, -0.3), max(hi, 0.3)]


def _speedup_labels(fig: go.Figure, marks: Sequence[tuple[int, str]]) -> None:
    """'break-even' just above its line at the right edge; each crossover just below the line, inside."""
    xaxis, yaxis = fig.layout.xaxis, fig.layout.yaxis
    one = axis_position(1.0, yaxis)
    fig.add_annotation(x=1, xref="paper", xanchor="right", y=one, yref="y", yanchor="bottom", text="break-even",
                       showarrow=False, font=dict(color="grey"))
    for n, color in marks:
        x = axis_position(n, xaxis)
        anchor = inside_anchor(x, xaxis.range)
        fig.add_annotation(x=x, y=one, yanchor="top", xanchor=anchor, xshift=8 if anchor == "left" else -8,
                           text=f"crossover ≈ {n:,}", showarrow=False, font=dict(color=color))


def sync_bug_notes(frame: pd.DataFrame) -> list[str]:
    """One sentence per GPU series: the true time at its largest size beside the unsynced one."""
    notes = []
    for series, rows in frame.dropna(subset=["unsynced_s"]).groupby("series", sort=False):
        top = rows.sort_values("n").iloc[-1]
        factor = top["median_s"] / top["unsynced_s"] if top["unsynced_s"] > 0 else float("inf")
        notes.append(f"{series}, n = {int(top['n']):,}: {top['median_s'] * 1e3:.3g} ms with synchronize, "
                     f"{top['unsynced_s'] * 1e3:.3g} ms without: forgetting it makes the GPU look "
                     f"{times(factor)} faster")
    return notes


def verdict_table(verdicts: Sequence[Verdict]) -> pd.DataFrame:
    """The verdicts as the page shows them: per size, who is faster and by how much, or why it cannot tell."""
    return pd.DataFrame({
        "n": [v.n for v in verdicts],
        "call": [v.call for v in verdicts],
        "faster / compared": [v.a if v.call == "faster" else f"{v.a} vs {v.b}" for v in verdicts],
        "ratio": [v.ratio for v in verdicts],
        "95% low": [v.low for v in verdicts],
        "95% high": [v.high for v in verdicts],
        "why unclear": ["machine busy" if v.busy else v.why for v in verdicts],
    })
