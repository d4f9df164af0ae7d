"""Figures of a roofline run: the log-log roofline with every product on it, and measured time against the model.

Both are built from the result record alone (`core.results.roofline.RooflineRun`), so a run saved
on another machine draws the same as a fresh one. Series names come from imports: escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from core.charts.axis_style import axis_position, inside_anchor, log_axis, style, time_unit, trace_values
from core.plain_text import for_plotly
from core.platform.units import number
from core.results.roofline import DeviceRoofs, RooflinePoint, RooflineRun
from core.roofline.model import RooflineModel, model_of
from core.roofline.spread import THEORY_BELOW, names_of
from core.store.records import StoredRun

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
HEIGHT = 480  # without the legend band under the plot, which axis_style.style adds


def _points(run: RooflineRun, series: str) -> list[RooflinePoint]:
    return sorted((p for p in run.points if (p.series or p.device) == series), key=lambda p: p.n)


def share_of_roof(point: RooflinePoint, roofs: DeviceRoofs) -> float | None:
    """The point's rate over the roof above it (min of peak and bandwidth x intensity)."""
    if point.gflops is None or point.intensity is None or not roofs.peak_gflops or not roofs.bandwidth_gbs:
        return None
    return point.gflops / min(roofs.peak_gflops, roofs.bandwidth_gbs * point.intensity)


def theory_below(roofs: DeviceRoofs) -> bool:
    """Did the series beat its theoretical peak (the theory's clock is the base clock, or a guess)?"""
    return any(note.startswith(THEORY_BELOW) for note in roofs.notes or ())


def roofline_figure(run: RooflineRun) -> go.Figure:
    """Operations per byte against GFLOP/s, log-log: per series its two roofs meeting at the ridge, and its products."""
    return _rooflines([("", run)])


def roofline_overlay(runs: Sequence[StoredRun]) -> go.Figure | None:
    """The Results page's chart: every chosen saved roofline on one set of axes (a lab GPU beside a laptop); None
    when no chosen run is a roofline."""
    named = [(f"#{r.run_id} {r.label or r.machine_label} · ", r.result) for r in runs
             if isinstance(r.result, RooflineRun)]
    if not named:
        return None
    return style(_rooflines(named), title="Rooflines", height=HEIGHT)


def _rooflines(runs: Sequence[tuple[str, RooflineRun]]) -> go.Figure:
    fig = go.Figure()
    xs = [x for _, run in runs
          for x in [p.intensity for p in run.points] + [d.ridge_intensity for d in run.devices_roofs] if x]
    lo, hi = (min(xs) / 2, max(xs) * 2) if xs else (0.1, 1000.0)
    series = [(prefix, run, roofs) for prefix, run in runs for roofs in run.devices_roofs]
    for color, (prefix, run, roofs) in zip(COLORS * (1 + len(series) // len(COLORS)), series):
        name = for_plotly(prefix + roofs.series)
        if roofs.peak_gflops and roofs.bandwidth_gbs and roofs.ridge_intensity:
            ridge = roofs.ridge_intensity
            # the legend says "noisy" (under the plot, a long entry costs the plot a row); the hover names which
            noisy = f"<br>noisy: {names_of(roofs.noisy)}" if roofs.noisy else ""
            fig.add_scatter(x=[lo, ridge, hi], y=[roofs.bandwidth_gbs * lo, roofs.peak_gflops, roofs.peak_gflops],
                            mode="lines", name=f"{name} roofs{' (noisy)' if noisy else ''}", line=dict(color=color),
                            legendgroup=name,
                            hovertemplate=(f"{name}<br>%{{x:,.3~r}} flop/B: roof %{{y:,.3~r}} GFLOP/s{noisy}"
                                           "<extra></extra>"))
            fig.add_scatter(x=[ridge], y=[roofs.peak_gflops], mode="markers", name=f"{name} ridge", legendgroup=name,
                            marker=dict(symbol="diamond", size=11, color=color), showlegend=False,
                            hovertemplate=(f"{name} ridge point<br>{number(ridge)} flop/B: below it memory limits, "
                                           f"above it arithmetic<br>{number(roofs.bandwidth_gbs)} GB/s, "
                                           f"{number(roofs.peak_gflops)} GFLOP/s<extra></extra>"))
        if roofs.theoretical_gflops:
            below = " (" + THEORY_BELOW + ")" if theory_below(roofs) else ""
            fig.add_scatter(x=[lo, hi], y=[roofs.theoretical_gflops] * 2, mode="lines", legendgroup=name,
                            name=f"{name} theoretical peak{below}", line=dict(color=color, dash="dot", width=1),
                            hovertemplate=f"{name} theoretical peak %{{y:,.3~r}} GFLOP/s<extra></extra>")
        pts = [p for p in _points(run, roofs.series) if p.gflops and p.intensity]
        shares = [share_of_roof(p, roofs) for p in pts]
        fig.add_scatter(x=[p.intensity for p in pts], y=[p.gflops for p in pts], mode="markers", legendgroup=name,
                        name=f"{name} products", marker=dict(color=color, size=9, line=dict(width=1, color="white")),
                        customdata=[[p.n, (p.median_s or math.nan) * 1e3, math.nan if s is None else s * 100]
                                    for p, s in zip(pts, shares)],
                        hovertemplate=(f"{name}<br>n = %{{customdata[0]:,}}<br>%{{customdata[1]:,.3~r}} ms, "
                                       "%{y:,.3~r} GFLOP/s<br>%{x:,.3~r} flop/B<br>%{customdata[2]:.0f} % of the roof"
                                       "<extra></extra>"))
    fig.update_layout(xaxis=log_axis(trace_values(fig, "x"), "arithmetic intensity (operations per byte)"),
                      yaxis=log_axis(trace_values(fig, "y"), "GFLOP/s"))
    return style(fig, title=None, height=HEIGHT)


def _grid(sizes: Sequence[int]) -> list[float]:
    lo, hi = (min(sizes), max(sizes)) if sizes else (16, 1024)
    steps = max(2, round(8 * math.log2(hi / lo)) if hi > lo else 2)
    return [lo * (hi / lo) ** (k / steps) for k in range(steps + 1)]


def model_figure(run: RooflineRun) -> go.Figure:
    """Measured time per product against n (markers) and t(n) = overhead + max(2n³/peak, bytes/bandwidth) (lines)."""
    fig = go.Figure()
    grid = _grid([p.n for p in run.points])
    unit = time_unit([p.median_s for p in run.points])
    for color, roofs in zip(COLORS * 4, run.devices_roofs):
        name, pts = for_plotly(roofs.series), _points(run, roofs.series)
        fig.add_scatter(x=[p.n for p in pts], y=unit.scale(p.median_s for p in pts), mode="markers",
                        name=f"{name} measured",
                        marker=dict(color=color, size=9), legendgroup=name,
                        hovertemplate=f"{name}<br>n = %{{x:,}}: %{{y:,.3~r}} {unit.name} measured<extra></extra>")
        model: RooflineModel | None = model_of(roofs)
        if model is None:
            continue
        fig.add_scatter(x=grid, y=unit.scale(model.time_s(n) for n in grid), mode="lines", name=f"{name} model",
                        line=dict(color=color), legendgroup=name,
                        hovertemplate=f"{name} model<br>n = %{{x:.0f}}: %{{y:,.3~r}} {unit.name}<extra></extra>")
        if roofs.h2d_gbs and roofs.d2h_gbs:
            fig.add_scatter(x=grid, y=unit.scale(model.end_to_end_s(n) for n in grid), mode="lines", legendgroup=name,
                            name=f"{name} model with copies", line=dict(color=color, dash="dash"))
            e2e = [p for p in pts if p.end_to_end_s]
            fig.add_scatter(x=[p.n for p in e2e], y=unit.scale(p.end_to_end_s for p in e2e), mode="markers",
                            legendgroup=name,
                            name=f"{name} measured with copies", marker=dict(color=color, size=9, symbol="circle-open"))
    fig.update_layout(xaxis=log_axis(trace_values(fig, "x"), "matrix size n (n × n)"),
                      yaxis=log_axis(trace_values(fig, "y"), f"time per product ({unit.name})"))
    _crossover_marks(fig, run)
    return style(fig, title=None, height=HEIGHT)


WARM_CACHE_NOTE = ("Small products are timed with warm caches (their matrices stay in cache from one repetition to "
                   "the next), so they look faster than the bandwidth roof, measured from RAM, predicts; the Matmul "
                   "race's cold-cache switch shows the difference.")
CROSSOVER_DASH = {"predicted": "dashdot", "measured": "dot"}  # the model's copies line is "dash": not these


def _in_view(n: float, axis_range: Sequence[float]) -> bool:
    return n > 0 and axis_range[0] <= math.log10(n) <= axis_range[1]


def crossovers_drawn(run: RooflineRun, axis_range: Sequence[float]) -> dict[str, int]:
    """The crossovers (predicted, measured) that fall inside the x axis' log10 range: the ones drawn as lines.
    A prediction the constants' noise allows to flip (a crossover or none) is no line: the band is all it is."""
    found = {"predicted": _prediction(run), "measured": run.measured_crossover_n}
    return {label: n for label, n in found.items() if n is not None and _in_view(n, axis_range)}


def _prediction(run: RooflineRun) -> int | None:
    return None if run.prediction_flips else run.predicted_crossover_n


def _crossover_marks(fig: go.Figure, run: RooflineRun) -> None:
    """The grey band of possible crossovers, clipped to the axis, and a labelled line per crossover inside it;
    a crossover outside the range drawn gets no line (model_caption says where it is)."""
    xaxis = fig.layout.xaxis
    lo, hi = xaxis.range
    low, high = run.predicted_crossover_low, run.predicted_crossover_high
    if low is not None and (high is None or high > low):
        x0, x1 = max(low, 10**lo), min(high or 10**hi, 10**hi)
        if x1 > x0:
            fig.add_vrect(x0=x0, x1=x1, fillcolor="gray", opacity=0.12, line_width=0)
    for row, (label, n) in enumerate(crossovers_drawn(run, (lo, hi)).items()):
        fig.add_vline(x=n, line=dict(color="black", dash=CROSSOVER_DASH[label], width=1))
        x = axis_position(n, xaxis)
        anchor = inside_anchor(x, (lo, hi))
        fig.add_annotation(x=x, xref="x", y=1 - 0.07 * row, yref="paper", yanchor="top", xanchor=anchor,
                           xshift=4 if anchor == "left" else -4, text=f"{label} n ≈ {n:,}", showarrow=False,
                           bgcolor="rgba(255,255,255,0.8)")


def model_caption(run: RooflineRun, fig: go.Figure) -> str:
    """What `model_figure` drew, in words: only the lines that are there, and where a crossover beyond the range is."""
    copies = any(roofs.h2d_gbs and roofs.d2h_gbs and model_of(roofs) for roofs in run.devices_roofs)
    parts = ["Markers: measured seconds per product. Lines: t(n) = overhead + max(2n³/peak, bytes/bandwidth), "
             "from the measured constants alone" + (" (dashed: plus the copies to and from the GPU; open markers: "
                                                    "measured with the copies)" if copies else "") + "."]
    drawn = crossovers_drawn(run, fig.layout.xaxis.range)
    words = {"predicted": "dash-dot", "measured": "dotted"}
    if drawn:
        parts.append("Vertical lines: the " + " and the ".join(f"{label} crossover ({words[label]})" for label in drawn)
                     + ".")
    for label, n in (("predicted", _prediction(run)), ("measured", run.measured_crossover_n)):
        if n is not None and label not in drawn:
            parts.append(f"The {label} crossover, n ≈ {n:,}, lies beyond the range drawn, so it has no line.")
    if any(s.type == "rect" for s in fig.layout.shapes):
        parts.append("Grey band: the crossover sizes the constants' spread over their repeats allows"
                     + (", up to none at all: the model cannot say where." if run.prediction_flips else "."))
    return " ".join(parts)


def _range(roofs: DeviceRoofs, name: str, scale: float = 1.0) -> str:
    """'1.2–1.9' over a constant's repeats, '' where it has none (an older file)."""
    limits = roofs.spread(name)
    return "" if limits is None else f"{number(limits[0] * scale)}–{number(limits[1] * scale)}"


def roofs_table(run: RooflineRun) -> pd.DataFrame:
    """One row per series: the constants the model uses with their ranges over repeats, which are noisy,
    and where the theoretical peak came from."""
    rows = [{"series": d.series, "peak GFLOP/s": d.peak_gflops, "peak range": _range(d, "peak_gflops"),
             "theoretical GFLOP/s": d.theoretical_gflops, "bandwidth GB/s": d.bandwidth_gbs,
             "bandwidth range": _range(d, "bandwidth_gbs"), "ridge (flop/B)": d.ridge_intensity,
             "launch µs": None if d.launch_s is None else d.launch_s * 1e6, "launch range": _range(d, "launch_s", 1e6),
             "wake µs": None if d.wake_s is None else d.wake_s * 1e6, "wake range": _range(d, "wake_s", 1e6),
             "noisy": names_of(d.noisy or ()), "H2D GB/s": d.h2d_gbs, "D2H GB/s": d.d2h_gbs,
             "H2D pinned GB/s": d.h2d_pinned_gbs, "D2H pinned GB/s": d.d2h_pinned_gbs,
             "theoretical peak from": d.theoretical_note} for d in run.devices_roofs]
    return pd.DataFrame(rows)
