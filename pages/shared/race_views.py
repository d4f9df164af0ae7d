"""The Matmul race's result blocks: the crossovers under Run, the verdict per size, the synchronize notes and
the three charts. Not a page (app.py does not list it); each draws a finished or partial sweep as core gives it.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.charts.matmul import gflops_figure, speedup_figure, sync_bug_notes, time_figure, verdict_table
from core.errors import DashboardError
from core.lecture import LECTURE_SENTENCE
from core.matmul.cannot_tell import CLASS_OPTIONS_TITLE, EARLIER_TITLE, cannot_tell, class_options, earlier_clear
from core.platform.units import readable
from core.results.crossover import sentence
from core.results.matmul import MatmulSweep
from core.store.database import open_store
from pages.shared.result_store import store_url

VERDICT_CAPTION = ("ratio: the slower median over the faster (compared: the second over the first); the 95 % "
                   "interval is a bootstrap of the samples. *unclear* when the interval straddles 1 by more "
                   "than 5 %, with fewer than 3 samples, or when other programs took CPU during that size.")
CPU_ONLY_SYNC = ("No *forgot to synchronize* figure: the CPU runs each product to the end before returning, "
                 "so there is nothing asynchronous to forget. On a GPU the difference is dramatic.")

QUESTION_GPU = "From which size does the GPU win?"
QUESTION_CPU = "No GPU here: from which size do more CPU threads win?"
NO_GPU_CHANGES = ("this race is between CPU settings (thread counts, dtypes); a GPU adds its line, the crossover "
                  "size, the *forgot to synchronize* figure and the cost of copies")


def question(gpu_here: bool) -> str:
    """The question the page asks, matching the race it runs (issue 34: no GPU question on a GPU-less server)."""
    return QUESTION_GPU if gpu_here else QUESTION_CPU


def crossovers(shown: MatmulSweep, guessed: str | None = None, against_room: str | None = None) -> None:
    """The headline first (as Results and the Class board show it), the guess set against it in the same box
    (both, and the chart under them, in view at 1280 × 720 after Run: issue 34), and against the room's reference
    on the next line when one is pinned (pages.shared.room_guess), then the other comparisons."""
    guessed = "  \n".join(line for line in (guessed, against_room) if line) or None
    for i, c in enumerate(shown.shown_crossovers):
        box = {"found": st.success, "unclear": st.warning}.get(c.call, st.info)
        guess = f"  \n{guessed}" if guessed and i == 0 else ""  # a line of its own, in the headline's box
        box(f"**{c.title.capitalize()}:** {sentence(c, shown.verdicts)}{guess}")
    if guessed and not shown.shown_crossovers:
        st.info(guessed, icon=":material/psychology_alt:")
    if cannot_tell(shown):
        earlier(shown)


def earlier(shown: MatmulSweep) -> None:
    """Under a "cannot tell": the newest clear run of this machine and these settings, labelled as earlier."""
    try:
        found = earlier_clear(open_store(store_url()), shown)
    except DashboardError:  # no store to ask: the options below still say what to do
        return
    if found is not None:
        st.info(f"**{EARLIER_TITLE}:** {found.text}", icon=":material/history:")


def class_can_do(shown: MatmulSweep) -> None:
    """Under a "cannot tell": what the class can do instead of waiting for a quiet server."""
    if not cannot_tell(shown):
        return
    st.markdown(f"**{CLASS_OPTIONS_TITLE}**")
    for option in class_options():
        st.markdown(f"- {option.text}")
        if option.page is not None:
            st.page_link(option.page, label=option.link, icon=":material/arrow_forward:")


def verdicts(shown: MatmulSweep) -> None:
    """Faster, same or cannot tell, per size, in an expander."""
    if shown.verdicts:
        with st.expander("Verdict per size: faster, same, or cannot tell"):
            st.caption(VERDICT_CAPTION)
            st.dataframe(readable(verdict_table(shown.verdicts)), hide_index=True, key="mm_verdicts")


def _figures(frame: pd.DataFrame, shown: MatmulSweep) -> tuple[go.Figure, go.Figure, go.Figure]:
    return (time_figure(frame, cache=shown.cache), gflops_figure(frame, cache=shown.cache),
            speedup_figure(frame, shown.crossovers))


@st.cache_resource(max_entries=4, show_spinner=False)
def _shared_figures(race: str, points: int, _frame: pd.DataFrame,
                    _shown: MatmulSweep) -> tuple[go.Figure, go.Figure, go.Figure]:
    """The figures of a race many sessions got (core.platform.shared_jobs), built once for all of them: sixty
    students building the same three figures took about 40 % of the server's CPU after the race (issue 31,
    bench/classroom_server.py). Streamlit only reads a figure it draws (a copy of its dict), so sessions share it."""
    return _figures(_frame, _shown)


def charts(frame: pd.DataFrame, shown: MatmulSweep) -> None:
    """Time, GFLOP/s and speed-up in three tabs first (the chart in view after Run, issue 34), then what they
    mean: the markers, the synchronize notes and what the skipped sizes were."""
    t1, t2, t3 = st.tabs(["Time", "GFLOP/s", "Speed-up"])
    if shown.shared is not None and not shown.stopped:  # every copy of a finished shared race is the same
        figures = _shared_figures(shown.shared.race, len(shown.results), frame, shown)
    else:
        figures = _figures(frame, shown)
    t1.plotly_chart(figures[0], key="mm_time_chart")
    t2.plotly_chart(figures[1], key="mm_gflops_chart")
    t3.plotly_chart(figures[2], key="mm_speedup_chart")
    st.markdown(f"Black markers: {LECTURE_SENTENCE}. Bars: interquartile range of the samples.")
    for note in sync_bug_notes(frame):
        st.warning(note, icon=":material/timer_off:")
    if frame["unsynced_s"].isna().all():
        st.markdown(CPU_ONLY_SYNC)
    for skip in shown.skipped:
        st.warning(f"Skipped n = {skip.n:,} on {skip.series}: {skip.message}", icon=":material/skip_next:")
