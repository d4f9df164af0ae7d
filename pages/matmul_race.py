"""Matmul race: time C = A @ B on the CPU and the GPU for growing sizes, correctly, and find the crossover."""

import streamlit as st

from core.charts.matmul import gflops_figure, speedup_figure, sync_bug_notes, time_figure, verdict_table
from core.errors import DashboardError
from core.lecture import LECTURE_SENTENCE
from core.matmul.collector import SweepCollector
from core.matmul.guess import compare_guess
from core.matmul.sweep import clock_summary, results_frame, run_sweep, sweep_json_text
from core.platform.devices import has_gpu
from core.platform.units import readable
from core.results.crossover import sentence
from core.results.guess import parse_matmul_guess
from core.results.table import human_table
from core.store.board import sweep_csv
from pages.shared.device_wait import page_job
from pages.shared.entry import through_app
from pages.shared.every_device import every_device_section
from pages.shared.matmul_form import sweep_form
from pages.shared.notices import gpu_badge, load_notice
from pages.shared.result_store import save_run, store_url

through_app()
state = st.session_state
state.setdefault("mm_sweep", None)  # a SweepCollector: every step so far, so Stop (a rerun) loses nothing


def save(sweep: SweepCollector) -> None:
    """Save a sweep for the Results page (a callback, so the page redraws already knowing it is saved)."""
    result = sweep.result()
    sweep.saved_run = save_run(result, label=state.mm_label.strip())


st.title("Matmul race")
st.caption("Time C = A @ B for n × n matrices of standard-normal numbers, the honest way: warm-up first, "
           "synchronize before every clock read, median of many runs. From which size does the GPU win?")
if not (gpu_here := has_gpu()):
    gpu_badge("this race is between CPU settings (thread counts, dtypes); a GPU adds its line, the crossover "
              "size, the *forgot to synchronize* figure and the cost of copies")

form = sweep_form(gpu_here)
if form.run:
    try:
        sweep = SweepCollector.start(form.config(), parse_matmul_guess(state.mm_guess))  # refused here, before waiting
        progress = st.empty()

        def on_progress(step) -> None:
            state.mm_sweep = sweep  # the previous sweep stays on screen until this one has a step
            sweep.add(step)
            progress.progress(step.fraction, text=step.message)

        with page_job("mm", on_progress=on_progress) as turn:
            final = sweep.finish(run_sweep(sweep.config, turn.hooks))
        state.mm_sweep = sweep
        progress.progress(1.0, text=f"done in {final.wall_s:.1f} s{turn.waited_note}")
        if final.results and not final.stopped:  # a finished sweep goes to the Results page; a stopped one on request
            save(sweep)
    except DashboardError as exc:
        st.error(str(exc))

sweep = state.mm_sweep
if sweep is not None and sweep.has_steps:
    shown = sweep.result()
    if stopped := sweep.stop_summary():
        st.warning(stopped, icon=":material/stop_circle:")
    frame, crossovers = results_frame(shown.results), shown.crossovers
    for c in shown.shown_crossovers:  # the headline first (as Results and the Class board show it), right under Run
        box = {"found": st.success, "unclear": st.warning}.get(c.call, st.info)
        box(f"**{c.title.capitalize()}:** {sentence(c, shown.verdicts)}")
    if guessed := compare_guess(shown):
        st.info(guessed, icon=":material/psychology_alt:")
    load_notice(shown.load)
    st.caption(sweep.save_note())
    if sweep.can_save:
        st.button("Save the measured points to Results", key="mm_save", icon=":material/save:", on_click=save, args=(sweep,))
    for note in shown.notes:
        st.info(note)
    if shown.verdicts:
        with st.expander("Verdict per size: faster, same, or cannot tell"):
            st.caption("ratio: the slower median over the faster (compared: the second over the first); the 95 % "
                       "interval is a bootstrap of the samples. *unclear* when the interval straddles 1 by more "
                       "than 5 %, with fewer than 3 samples, or when other programs took CPU during that size.")
            st.dataframe(readable(verdict_table(shown.verdicts)), hide_index=True, key="mm_verdicts")
    for note in sync_bug_notes(frame):
        st.warning(note, icon=":material/timer_off:")
    if frame["unsynced_s"].isna().all():
        st.caption("No *forgot to synchronize* figure: the CPU runs each product to the end before returning, "
                   "so there is nothing asynchronous to forget. On a GPU the difference is dramatic.")
    t1, t2, t3 = st.tabs(["Time", "GFLOP/s", "Speed-up"])
    t1.plotly_chart(time_figure(frame, cache=shown.cache), key="mm_time_chart")
    t2.plotly_chart(gflops_figure(frame, cache=shown.cache), key="mm_gflops_chart")
    t3.plotly_chart(speedup_figure(frame, crossovers), key="mm_speedup_chart")
    st.caption(f"Black markers: {LECTURE_SENTENCE}. Bars: interquartile range of the samples.")
    for skip in shown.skipped:
        st.warning(f"Skipped n = {skip.n:,} on {skip.series}: {skip.message}", icon=":material/skip_next:")
    st.dataframe(readable(human_table(shown.results)), hide_index=True, key="mm_table")
    if clocks := clock_summary(shown.results):
        st.caption(clocks)
    d1, d2 = st.columns(2)
    d1.download_button("Download CSV", sweep_csv(store_url(), shown, sweep.saved_run, state.mm_label.strip()),
                       "matmul_race.csv", "text/csv", key="mm_csv")
    d2.download_button("Download JSON", sweep_json_text(shown), "matmul_race.json",
                       "application/json", key="mm_json")

every_device_section()  # K torchrun ranks, the same sweep on each: the straggler, if any
