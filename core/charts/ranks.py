"""The figure of a run on every rank (kind "cluster"): GFLOP/s per rank at the largest size every rank
measured, together and alone side by side, the median line of the ranks together, the straggler marked.

A pure function of a ClusterRun (from this page or the store). Host names come from other machines:
escaped for Plotly.
"""

from __future__ import annotations

import plotly.graph_objects as go

from core.charts.axis_style import linear_axis, style
from core.platform.units import number
from core.plain_text import for_plotly
from core.results.cluster import NAMED, ClusterRun, RankRecord

TOGETHER, ALONE, STRAGGLER = "#1f77b4", "#aec7e8", "#d62728"


def _rate(record: RankRecord, n: int, together: bool) -> float | None:
    points = record.together if together else record.alone
    return next((p.gflops for p in points if p.n == n), None)


def rank_label(record: RankRecord, hosts: int) -> str:
    """'rank 1 · cpu' on one machine, 'rank 1 · node-b cuda:0' across several."""
    where = f"{record.hostname} {record.device}" if hosts > 1 else record.device
    return for_plotly(f"rank {record.rank} · {where}")


def ranks_figure(run: ClusterRun, who: str = "") -> go.Figure:
    """Bars per rank (together, alone), the median line, the straggler outlined in red and named; `who`
    (a stored run's title, on Results) leads the chart's title."""
    n = run.largest_common_n
    fig = go.Figure()
    if n is None:
        return style(fig, title="No size was measured on every rank", height=300)
    names = [rank_label(r, run.hosts) for r in run.ranks]
    slow = {s.rank for s in run.stragglers} if run.straggler_call == NAMED else set()
    together = [_rate(r, n, True) for r in run.ranks]
    alone = [_rate(r, n, False) for r in run.ranks]
    fig.add_bar(x=names, y=together, name="all at once", marker=dict(
        color=[STRAGGLER if r.rank in slow else TOGETHER for r in run.ranks],
        line=dict(color=[STRAGGLER if r.rank in slow else TOGETHER for r in run.ranks], width=2)))
    if any(a is not None for a in alone):
        fig.add_bar(x=names, y=alone, name="each alone", marker=dict(color=ALONE))
    median = next((s.median for s in run.spread if s.n == n), None)
    if median is not None:
        fig.add_hline(y=median, line=dict(color="black", dash="dash"), annotation_text=f"median {number(median)}",
                      annotation_position="top left")
    for s in run.stragglers if run.straggler_call == NAMED else ():
        fig.add_annotation(x=names[[r.rank for r in run.ranks].index(s.rank)], y=together[s.rank] or 0,
                           text=f"straggler: {s.below_median or 0:.0%} below", showarrow=True, arrowhead=2,
                           font=dict(color=STRAGGLER), yshift=6)
    fig.update_layout(barmode="group", xaxis=dict(title=dict(text="rank")),
                      yaxis=linear_axis([*together, *alone, median], "GFLOP/s"))
    lead = f"{for_plotly(who)}: " if who else ""
    return style(fig, title=f"{lead}GFLOP/s per rank at n = {n:,}", height=380)


def verdict_line(run: ClusterRun) -> str:
    """The straggler call in a sentence, quoting only what was measured."""
    if run.straggler_call == NAMED:
        return "; ".join(f"Straggler: rank {s.rank} on {s.hostname} ({s.device}) is {s.below_median or 0:.0%} below "
                         f"the median at n = {s.n:,} (its time {number(s.slowdown_low or 0)}-"
                         f"{number(s.slowdown_high or 0)}x "
                         "the median rank's, 95 % interval)" for s in run.stragglers)
    if run.straggler_call == "none":
        return f"No straggler: {run.straggler_note}."
    return f"Cannot tell whether a rank holds the others back: {run.straggler_note}."


def spread_table(run: ClusterRun) -> list[dict[str, float | int | None]]:
    """Per size: GFLOP/s across ranks all at once (min, median, max) and the ranks' alone / together ratio."""
    ratio = {c.n: c.ratio for c in run.contention}
    return [{"n": s.n, "min GFLOP/s": s.min, "median GFLOP/s": s.median, "max GFLOP/s": s.max,
             "alone / together": ratio.get(s.n)} for s in run.spread]
