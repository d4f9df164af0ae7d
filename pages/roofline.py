"""Roofline: why the crossover is where it is. Each device's roofs measured, every product placed on them."""

import streamlit as st

from core import glossary
from core.charts.roofline import WARM_CACHE_NOTE, model_caption, model_figure, roofline_figure, roofs_table
from core.errors import DashboardError
from core.matmul.choices import dtype_choices
from core.platform.devices import available_devices
from core.results.jsonio import dumps
from core.platform.units import readable, seconds
from core.roofline.explain import cannot_tell, crossover_sentence, model_error_text
from core.roofline.run import RooflineConfig, run_roofline
from pages.shared.device_wait import page_job
from pages.shared.entry import through_app
from pages.shared.notices import load_notice
from pages.shared.result_store import save_run

through_app()
state = st.session_state
state.setdefault("rl_result", None)

st.title("Roofline")
st.caption("Three measured constants per device explain the crossover: its peak arithmetic rate, its memory "
           "bandwidth, and the fixed cost of starting one operation. An n × n product does 2n³ operations on at "
           "least 3 matrices of n² numbers, so its operations per byte grow like n: small products sit under the "
           "bandwidth roof and the start-up cost, big ones reach the compute roof.")
with st.container(border=True):
    c1, c2, c3 = st.columns(3)
    devices = c1.multiselect("Devices", available_devices(), default=available_devices(), key="rl_devices",
                             help="the CPU alone compares all its threads against one")
    dtype = c2.selectbox("dtype", dtype_choices(devices or ["cpu"]), key="rl_dtype", help=glossary.DTYPE)
    budget = c3.select_slider("Seconds per measurement", [0.05, 0.1, 0.2, 0.5, 1.0, 2.0], value=0.2, key="rl_budget",
                              help="each roof and each size of each series; 0.2 s answers in about 10 s on 2 cores")
    c1, c2, c3 = st.columns([2, 1, 1])
    c1.text_input("Name for the Results page (optional)", key="rl_label", max_chars=200, placeholder="e.g. lab GPU")
    run = c2.button("Measure the roofs", type="primary", key="rl_run", icon=":material/play_arrow:")
    c3.button("Stop", key="rl_stop", icon=":material/stop:")

if run:
    try:
        config = RooflineConfig(devices=tuple(devices), dtype=dtype or "float32", budget_s=float(budget))
        bar = st.empty()
        with page_job("rl", on_progress=lambda p: bar.progress(p.fraction, text=p.message)) as turn:
            state.rl_result = run_roofline(config, turn.hooks)
        bar.caption(f"Measured in {seconds(state.rl_result.wall_s)}{turn.waited_note}.")  # one line: the chart in view
        if state.rl_result.points and not state.rl_result.stopped:
            save_run(state.rl_result, label=state.rl_label.strip())
    except DashboardError as exc:
        st.error(str(exc))

if (result := state.rl_result) is not None:  # the chart first, so a 720-pixel projector shows it after Run
    if result.stopped:
        st.warning("Stopped before the last step: what was measured is shown, and not saved.",
                   icon=":material/stop_circle:")
    t1, t2 = st.tabs(["Roofline", "Time against the model"])
    t1.plotly_chart(roofline_figure(result), key="rl_roofline_chart")
    t1.caption("Solid: each series' bandwidth roof rising to its compute roof, meeting at the ridge (diamond): "
               "left of the ridge memory limits the rate, right of it arithmetic. Dotted: the theoretical peak. "
               f"Markers: the sweep's products; hover for n, time and share of the roof. {glossary.GFLOPS}")
    t2.plotly_chart(model := model_figure(result), key="rl_model_chart")
    t2.caption(f"{model_caption(result, model)} {WARM_CACHE_NOTE}")
    load_notice(result.load)
    box = st.success if result.predicted_crossover_n and result.measured_crossover_n else st.info
    box = st.warning if cannot_tell(result) else box
    box(crossover_sentence(result), icon=":material/insights:")
    for roofs in result.devices_roofs:
        for note in roofs.notes or ():
            st.markdown(f"{roofs.series}: {note}")
    if accuracy := model_error_text(result):
        st.markdown(accuracy)
    st.dataframe(readable(roofs_table(result)), hide_index=True, key="rl_table")
    for note in result.notes:
        st.info(note)
    st.download_button("Download JSON", dumps(result.to_json(), indent=2), "roofline.json", "application/json",
                       key="rl_json")
