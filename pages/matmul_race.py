"""Matmul race: time C = A @ B on the CPU and the GPU for growing sizes, correctly, and find the crossover."""

import streamlit as st

from core.charts.matmul import gflops_figure, results_table, speedup_figure, sync_bug_notes, time_figure
from core.platform.devices import GET_A_GPU, available_devices, has_gpu
from core.errors import DashboardError
from core.lecture import LECTURE_SENTENCE
from core.matmul.sweep import (
    SweepConfig, SweepEvent, SweepResult, dtype_choices, log_sizes, plan_series, run_sweep, size_choices,
    sweep_json_text, thread_choices,
)
from pages.shared.device_wait import device_turn
from pages.shared.entry import through_app
from pages.shared.result_store import save_run

through_app()

BUDGETS_S = [0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0]
DEFAULT_SIZES = (64, 2048)
state = st.session_state
for key, value in {"mm_results": [], "mm_skipped": [], "mm_final": None, "mm_config": None, "mm_series": (),
                   "mm_saved": None, "mm_stop_reason": None}.items():
    state.setdefault(key, value)


def save(result: SweepResult) -> None:
    """Save a sweep for the Results page (a callback, so the page redraws already knowing it is saved)."""
    state.mm_saved = save_run("matmul", result.to_json(), result.config.to_dict(), label=state.mm_label.strip())


st.title("Matmul race")
st.caption(
    "Time C = A @ B for n × n matrices of standard-normal numbers, the honest way: warm-up first, "
    "synchronize before every clock read, median of many runs. From which size does the GPU win?"
)

gpu_here = has_gpu()
if not gpu_here:
    st.info(
        "**No GPU here**, so this race is between CPU settings: thread counts and dtypes. With a GPU the "
        "page adds the GPU's line, its speed-up and the crossover size, the *forgot to synchronize* figure "
        f"beside the true one, and the cost of copying data to and from the GPU.\n\n{GET_A_GPU}",
        icon=":material/info:",
    )

with st.container(border=True):
    c1, c2, c3 = st.columns(3)
    devices = c1.multiselect("Devices", available_devices(), default=available_devices(), key="mm_devices")
    dtypes = c2.multiselect("dtypes", dtype_choices(devices or ["cpu"]), default=["float32"], key="mm_dtypes",
                            help="float16 on a CPU is very slow; the time guard skips sizes that would overrun the budget.")
    cores = thread_choices()
    threads = c3.multiselect("CPU threads (each is a series)", cores,
                             default=[cores[-1]] if gpu_here or len(cores) == 1 else [1, cores[-1]], key="mm_threads")
    c1, c2, c3 = st.columns([2, 1, 1])
    end_to_end = c3.checkbox("End to end: count the copies to and from the GPU", value=False, key="mm_end_to_end",
                             disabled=not gpu_here)
    options = size_choices(devices or ["cpu"], dtypes or ["float32"], end_to_end=end_to_end)
    low, high = c1.select_slider("Matrix sizes n (log scale; larger sizes offered while memory allows)", options,
                                 value=(min(DEFAULT_SIZES[0], options[-1]), min(DEFAULT_SIZES[1], options[-1])),
                                 key="mm_sizes")
    per_doubling = c2.selectbox("Sizes per doubling", [1, 2, 4], key="mm_per_doubling")
    budget = c3.select_slider("Time budget per size (s)", BUDGETS_S, value=1.0, key="mm_budget")
    c1, c2, c3 = st.columns(3)
    cuda_chosen = any(d.startswith("cuda") for d in devices)
    tf32 = c1.radio("TF32 for CUDA float32", ["off", "on", "both"], horizontal=True, key="mm_tf32",
                    disabled=not cuda_chosen, help="TF32 tensor cores: faster, less exact. Only CUDA float32 uses it.")
    unsynced = c2.checkbox("Also time without synchronizing (the classic bug)", value=True, key="mm_unsynced",
                           disabled=not gpu_here, help="On a CPU nothing is asynchronous, so there is nothing to show.")
    label = c3.text_input("Name for the Results page (optional)", key="mm_label", max_chars=200,
                          placeholder="e.g. Ana's laptop", help="finished sweeps are saved there, under this name")
    b1, b2 = c3.columns(2)
    run = b1.button("Run", type="primary", key="mm_run", icon=":material/play_arrow:")
    b2.button("Stop", key="mm_stop", icon=":material/stop:")

if run:
    try:
        config = SweepConfig(
            sizes=log_sizes(low, high, per_doubling), devices=tuple(devices), dtypes=tuple(dtypes),
            threads=tuple(threads), tf32={"off": (False,), "on": (True,), "both": (False, True)}[tf32],
            budget_s=float(budget), unsynced=unsynced, end_to_end=end_to_end,
        )
        plan = plan_series(config)  # a bad choice is refused here, before waiting in line
        with device_turn(plan.devices, key="mm", label="matmul sweep") as job:
            state.mm_results, state.mm_skipped, state.mm_final, state.mm_saved = [], [], None, None
            state.mm_config, state.mm_series, state.mm_stop_reason = config, plan.series, None
            progress = st.progress(0.0, text="starting")

            def on_progress(event: SweepEvent) -> None:
                if event.result is not None:
                    state.mm_results.append(event.result)  # kept even if Stop interrupts the run
                if event.skipped is not None:
                    state.mm_skipped.append(event.skipped)
                progress.progress(event.fraction, text=event.message)

            state.mm_final = run_sweep(config, on_progress=on_progress, should_stop=lambda: job.timed_out)
        waited = f", after waiting {job.waited_s:.0f} s for {', '.join(job.devices)}" if job.waited_s >= 0.5 else ""
        progress.progress(1.0, text=f"done in {state.mm_final.wall_s:.1f} s{waited}")
        if state.mm_final.stopped:
            state.mm_stop_reason = job.limit_message
        elif state.mm_final.results:  # a finished sweep goes to the Results page; a stopped one on request
            save(state.mm_final)
    except DashboardError as exc:
        st.error(str(exc))

if state.mm_results or state.mm_skipped:
    shown = state.mm_final or SweepResult(state.mm_config, state.mm_series, tuple(state.mm_results),
                                          tuple(state.mm_skipped), stopped=True)
    if shown.stopped:
        total = len(state.mm_config.sizes) * len(state.mm_series)
        why = f" ({state.mm_stop_reason})" if state.mm_stop_reason else ""
        st.warning(f"Stopped after {len(state.mm_results) + len(state.mm_skipped)} of {total} steps{why}; "
                   "what was measured is kept below.", icon=":material/stop_circle:")
    if state.mm_saved:
        st.caption(f"Saved as run #{state.mm_saved}: the **Results** page can overlay it with other machines' runs.")
    elif not shown.results:
        st.caption("Nothing was measured, so nothing was saved to the Results page.")
    else:
        st.caption("Not saved to the Results page: "
                   + ("an incomplete sweep is saved only on request." if shown.stopped else "the save did not go through."))
        st.button("Save the measured points to Results", key="mm_save", icon=":material/save:",
                  on_click=save, args=(shown,))
    frame = shown.frame()
    crossovers = shown.crossovers()
    headline = [c for c in crossovers if c.gpu_vs_cpu] or crossovers
    for c in headline:
        (st.success if c.n is not None else st.info)(
            f"**{'Crossover' if c.gpu_vs_cpu else 'Comparison'}{' with copies' if c.with_copies else ''}:** {c.text}")
    for note in sync_bug_notes(frame):
        st.warning(note, icon=":material/timer_off:")
    if frame["unsynced_s"].isna().all():
        st.caption("No *forgot to synchronize* figure: the CPU runs each product to the end before returning, "
                   "so there is nothing asynchronous to forget. On a GPU the difference is dramatic.")
    t1, t2, t3 = st.tabs(["Time", "GFLOP/s", "Speed-up"])
    t1.plotly_chart(time_figure(frame), key="mm_time_chart")
    t2.plotly_chart(gflops_figure(frame), key="mm_gflops_chart")
    t3.plotly_chart(speedup_figure(frame, crossovers), key="mm_speedup_chart")
    st.caption(f"Black markers: {LECTURE_SENTENCE}. Bars: interquartile range of the samples.")
    for skip in shown.skipped:
        st.warning(f"Skipped n = {skip.n:,} on {skip.series.label}: {skip.message}", icon=":material/skip_next:")
    for note in shown.notes:
        st.info(note)
    table = results_table(frame)
    st.dataframe(table, hide_index=True, key="mm_table")
    d1, d2 = st.columns(2)
    d1.download_button("Download CSV", table.to_csv(index=False), "matmul_race.csv", "text/csv", key="mm_csv")
    d2.download_button("Download JSON", sweep_json_text(shown), "matmul_race.json",
                       "application/json", key="mm_json")
