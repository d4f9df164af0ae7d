"""Race on your laptop's settings row and its result blocks. Not a page (app.py does not list it).

The settings are `lap_*` widgets; the result blocks draw a judged `BrowserRun` as core gives it: why the
GPU half is missing, the crossovers, the guess, the "forgot to wait" figure, one dispatch against many, the
chart and the tables.
"""

from __future__ import annotations

import streamlit as st

from core.browser.assets import AUTO_WORKERS, BUDGETS_S, DEFAULT_SIZES, SIZES, WORKER_CHOICES
from core.browser.story import (crossover_lines, dispatch_line, forgot_to_wait, gpu_line, guess_line, point_rows,
                                verdict_rows)
from core.charts.browser import race_figure
from core.platform.units import readable
from core.results.browser import BrowserRun
from core.results.guess import MATMUL_EXAMPLE

BOXES = {"success": st.success, "info": st.info, "warning": st.warning}


def settings() -> tuple[tuple[int, int], float, int, bool]:
    """The name, the guess, and (in the sidebar) sizes, budget, k workers and whether to race the GPU."""
    with st.sidebar:
        st.subheader("Race settings")
        sizes = st.select_slider("Matrix sizes n", SIZES, value=DEFAULT_SIZES, key="lap_sizes",
                                 format_func="{:,}".format,
                                 help="the browser stops a series early once its next size would overrun the budget")
        budget = st.select_slider("Time budget per size (s)", BUDGETS_S, value=2.0, key="lap_budget",
                                  format_func="{:g}".format,
                                  help="each series stops once its next size would take longer than this; a "
                                       "software adapter (SwiftShader) needs 30-60 s to reach n = 512")
        workers = st.selectbox("k workers (the CPU's second series)", WORKER_CHOICES, key="lap_workers",
                               format_func=lambda k: "this laptop's cores" if k == AUTO_WORKERS else str(k),
                               help="Web Workers sharing the rows of C (the marbles); by default as many as the "
                                    "browser says this laptop has logical cores")
        gpu = st.checkbox("Race the GPU (WebGPU)", value=True, key="lap_gpu")
    c1, c2 = st.columns(2)
    c1.text_input("Your guess", key="lap_guess", max_chars=40, placeholder=MATMUL_EXAMPLE,
                  help="before you press Run: from which size n does WebGPU beat the CPU's k workers?")
    c2.text_input("Your name (for the Results page and the Class board)", key="lap_label", max_chars=200,
                  placeholder="e.g. Ana's laptop")
    return sizes, float(budget), int(workers), bool(gpu)


def result(run: BrowserRun) -> None:
    """Everything the server made of the browser's samples."""
    if line := gpu_line(run):
        BOXES[line.box](line.text, icon=":material/memory:")
    if run.stopped:
        st.warning("Stopped: the sizes measured before Stop are kept.", icon=":material/stop_circle:")
    for line in crossover_lines(run):
        BOXES[line.box](line.text)
    if guessed := guess_line(run):
        st.info(guessed, icon=":material/psychology_alt:")
    if note := forgot_to_wait(run):
        st.warning(note, icon=":material/timer_off:")
    if line := dispatch_line(run):
        BOXES[line.box](line.text, icon=":material/call_split:")
    t1, t2 = st.tabs(["Time", "GFLOP/s"])
    t1.plotly_chart(race_figure(run, "median_s"), key="lap_time_chart")
    t2.plotly_chart(race_figure(run, "gflops"), key="lap_gflops_chart")
    with st.expander("Verdict per size: faster, same, or cannot tell"):
        st.dataframe(readable(verdict_rows(run)), hide_index=True, key="lap_verdicts")
    st.dataframe(readable(point_rows(run)), hide_index=True, key="lap_points")
    st.caption(f"Measured by {run.measured_by}; statistics, verdicts and "
               "crossovers computed by the server from the raw samples (the Matmul race's rules).")
