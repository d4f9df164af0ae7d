"""The Class board's figures: the class's guesses against what it measured, and the hardware in the room."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from core.charts.axis_style import linear_axis, log_axis, style
from core.plain_text import for_plotly
from core.store.class_board import NO_GPU, Hardware, Spread

GUESSED, MEASURED = "guessed", "measured"
GUESS_COLOR, MEASURED_COLOR = "#7b3294", "#1a9641"
SYMBOLS = ("diamond", "square", "triangle-up")  # a measurement's marker, one per preset
JITTER = 0.12  # markers of one row spread this far up and down, so equal guesses do not hide each other
HEIGHT = 300
NAMED_GUESSES = 8  # up to this many guess dots carry their guesser's name on the chart; more, on hover only
NO_GPU_COLOR = "#bdbdbd"  # machines without a GPU: grey, not a GPU model's red


def _jitter(count: int) -> list[float]:
    """Deterministic offsets in [-JITTER, JITTER], the same picture on every refresh."""
    return [JITTER * (((i * 7) % 11) / 5 - 1) for i in range(count)]


def spread_figure(spread: Spread, *, title: str, x_title: str, none_word: str = "no crossover") -> go.Figure:
    """Two rows on a log axis: every guess, and every measurement (a crossover interval as a bar),
    with the measured median as a dashed line, so the class sees how its predictions fell."""
    fig = go.Figure()
    rows = {GUESSED: 1.0, MEASURED: 0.0}
    fig.add_trace(_guesses(spread, rows[GUESSED]))
    for i, (low, high) in enumerate(spread.intervals):
        fig.add_trace(go.Scatter(x=[low, high], y=[rows[MEASURED]] * 2, mode="lines", showlegend=i == 0,
                                 name="measured interval", line=dict(width=10, color=MEASURED_COLOR), opacity=0.25))
    heights = [rows[MEASURED] + j for j in _jitter(len(spread.measured))]
    labels = spread.measured_presets if len(spread.measured_presets) == len(spread.measured) else []
    groups = list(dict.fromkeys(labels)) or [""]
    imported = spread.measured_imported if len(spread.measured_imported) == len(spread.measured) else []
    for symbol, group in zip(SYMBOLS * len(groups), groups):  # training runs: one legend entry per preset
        at = [i for i in range(len(spread.measured)) if not labels or labels[i] == group]
        fig.add_trace(go.Scatter(x=[spread.measured[i] for i in at], y=[heights[i] for i in at], mode="markers",
                                 name=f"measured{', ' + group if group else ''} ({len(at)})",
                                 marker=dict(size=12, color=MEASURED_COLOR, line=dict(width=2, color=MEASURED_COLOR),
                                             symbol=[f"{symbol}-open" if imported and imported[i] else symbol
                                                     for i in at])))
    if count := sum(imported):  # an imported run's measurement is drawn open: the class did not measure it here
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{count} of them imported (open)",
                                 marker=dict(size=12, color=MEASURED_COLOR, symbol="circle-open")))
    values = [*spread.guessed, *spread.measured, *(x for pair in spread.intervals for x in pair)] or [1.0, 10.0]
    fig.update_layout(xaxis=log_axis(values, x_title, headroom=0.05, below=0.05),
                      yaxis=dict(tickvals=list(rows.values()), ticktext=list(rows), range=[-0.5, 1.5]))
    if len(groups) == 1 and (median := spread.measured_median) is not None:  # a median across presets means nothing
        fig.add_vline(x=median, line=dict(dash="dash", color=MEASURED_COLOR),
                      annotation_text=f"measured median {median:,.3g}", annotation_position="top")
    for count, who, color in ((spread.none_guessed, "guessed", GUESS_COLOR),
                              (spread.none_measured, "measured", MEASURED_COLOR)):
        if count:  # no point on a size axis: a legend line says how many
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"{count} {who} {none_word}",
                                     marker=dict(size=12, color=color, symbol="x")))
    _cannot_tell(fig, spread, rows[MEASURED])
    return style(fig, title=title, height=HEIGHT)


def _cannot_tell(fig: go.Figure, spread: Spread, row: float) -> None:
    """Runs that could not tell: a legend line each reason, and, where nothing was measured, the words on the
    measured row itself ('3 runs could not tell: machine busy'), never an empty row."""
    for line in spread.cannot_tell_lines:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=line,
                                 marker=dict(size=12, color=MEASURED_COLOR, symbol="hourglass")))
    if spread.cannot_tell_lines and not spread.measured:
        fig.add_annotation(x=0.5, xref="paper", y=row, yref="y", text="; ".join(spread.cannot_tell_lines),
                           showarrow=False, font=dict(color=MEASURED_COLOR))


def _guesses(spread: Spread, row: float) -> go.Scatter:
    """Every guess as a dot named by who guessed it (hover; a label too while there are few), not by its
    coordinates: the class looks for its own guess (issue 34)."""
    names = [for_plotly(n) for n in spread.guessed_by] if len(spread.guessed_by) == len(spread.guessed) else None
    labelled = names is not None and len(names) <= NAMED_GUESSES
    return go.Scatter(x=spread.guessed, y=[row + j for j in _jitter(len(spread.guessed))],
                      mode="markers+text" if labelled else "markers", name=f"guesses ({len(spread.guessed)})",
                      text=names, textposition="top center", textfont=dict(color=GUESS_COLOR),
                      hovertemplate="%{text}: %{x:,.3~r}<extra></extra>" if names else None,
                      marker=dict(size=12, color=GUESS_COLOR, opacity=0.7))


def hardware_figure(hardware: Sequence[Hardware]) -> go.Figure:
    """A bar per CPU and GPU model: how many machines on the board have it."""
    names = [for_plotly(h.name if h.name == NO_GPU else f"{h.kind}: {h.name}") for h in hardware]
    counts = [h.machines for h in hardware]
    colors = ["#2c7bb6" if h.kind == "CPU" else NO_GPU_COLOR if h.name == NO_GPU else "#d7191c" for h in hardware]
    fig = go.Figure(go.Bar(x=counts, y=names, orientation="h", marker_color=colors, text=counts,
                           textposition="outside"))
    fig.update_layout(xaxis=linear_axis(counts, "machines"), yaxis=dict(autorange="reversed", automargin=True))
    fig.update_xaxes(dtick=1)  # whole machines
    return style(fig, title="CPUs and GPUs in the room", height=max(200, 60 + 28 * len(hardware)), legend=False)
