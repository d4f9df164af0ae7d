"""Matmul race: time C = A @ B on the CPU and the GPU for growing sizes, correctly, and find the crossover."""

import streamlit as st

from core.errors import DashboardError
from core.matmul.collector import SweepCollector
from core.matmul.guess import compare_guess
from core.matmul.report import clock_summary, results_frame
from core.matmul.shared_race import join_race
from core.platform.devices import has_gpu
from core.platform.units import readable, seconds
from core.results.jsonio import dumps
from core.results.table import human_table
from core.store.board import sweep_csv
from pages.shared import class_measure, race_views, room_guess
from pages.shared.device_wait import page_job
from pages.shared.entry import through_app
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


gpu_here = has_gpu()
st.title("Matmul race")
st.caption("Time C = A @ B for n × n matrices of standard-normal numbers, the honest way: warm-up first, "
           f"synchronize before every clock read, median of many runs. {race_views.question(gpu_here)}")
if not gpu_here:  # in the sidebar, above the settings it explains: the main column keeps room for the chart
    with st.sidebar:
        gpu_badge(race_views.NO_GPU_CHANGES)
run, own, config = sweep_form(gpu_here)
for_class = class_measure.button()  # the instructor's "Measure for the class" (sidebar); never a student's
if run or own or for_class:
    try:
        sweep = class_measure.start(config(), state.mm_guess, for_class)  # refused here, before waiting
        progress = st.empty()

        def on_progress(step) -> None:
            state.mm_sweep = sweep  # the previous sweep stays on screen until this one has a step
            sweep.add(step)
            progress.progress(step.fraction, text=step.message)

        with page_job("mm", on_progress=on_progress) as turn:
            final = sweep.finish(join_race(sweep.plan, turn.hooks, own=own, for_class=config() if for_class else None))
        state.mm_sweep = sweep
        shared = final.shared.note if final.shared else ""
        progress.progress(1.0, text=f"done in {seconds(final.wall_s)}{turn.waited_note}{shared}")
        if final.results and not final.stopped:  # a finished sweep goes to the Results page; a stopped one on request
            save(sweep)
            class_measure.pin(sweep, for_class)
    except DashboardError as exc:
        st.error(str(exc))

sweep = state.mm_sweep
if sweep is not None and sweep.has_steps:
    shown = sweep.result()
    if stopped := sweep.stop_summary():
        st.warning(stopped, icon=":material/stop_circle:")
    frame = results_frame(shown.results)
    race_views.crossovers(shown, compare_guess(shown), room_guess.after_run(shown))  # in view at 1280 × 720
    race_views.charts(frame, shown)
    load_notice(shown.load)
    race_views.class_can_do(shown)
    st.caption(sweep.save_note())
    if sweep.can_save:
        st.button("Save the measured points to Results", key="mm_save", icon=":material/save:", on_click=save,
                  args=(sweep,))
    for note in shown.notes:
        st.info(note)
    race_views.verdicts(shown)
    st.dataframe(readable(human_table(shown.results)), hide_index=True, key="mm_table")
    if clocks := clock_summary(shown.results):
        st.caption(clocks)
    d1, d2 = st.columns(2)
    d1.download_button("Download CSV", sweep_csv(store_url(), shown, sweep.saved_run, state.mm_label.strip()),
                       "matmul_race.csv", "text/csv", key="mm_csv")
    d2.download_button("Download JSON", dumps(shown, indent=2), "matmul_race.json",
                       "application/json", key="mm_json")
else:  # no race shown yet: the guess typed so far against the room's reference, if one is pinned
    room_guess.before_run(state.mm_guess, config)
st.page_link("pages/every_device.py", label="Every device at once: the same sweep on K ranks", icon=":material/lan:")
