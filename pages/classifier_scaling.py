"""Data-parallel scaling: the Review classifier's mini-batch preset on 1 and 2 worker processes, compute against
the gradient all-reduce: the marbles across processes, with communication as the part that does not shrink."""

import streamlit as st

from core.charts.classifier import scaling_chart
from core.classifier.model import preset_config
from core.classifier.scaling import WORKER_COUNTS, measure_scaling, worker_data
from core.errors import DashboardError
from core.plain_text import message_markdown
from core.platform.devices import available_devices, has_gpu
from core.platform.units import percent, readable
from pages.shared.classifier_widgets import SCALING_TEXT, data_choice
from pages.shared.device_wait import page_job
from pages.shared.entry import through_app

through_app()
state = st.session_state

st.title("Data-parallel scaling")
st.caption(SCALING_TEXT)
with st.sidebar:  # the same reviews as the Review classifier's (the workers read them from disk themselves)
    choice = data_choice(offer_download=False)
c1, c2, c3 = st.columns([1, 1, 2], vertical_alignment="bottom")
device = c1.selectbox("Device", ["auto", *available_devices()] if has_gpu() else ["cpu"], key="cs_device")
epochs = int(c2.number_input("Epochs", 1, 500, preset_config("minibatch").epochs, key="cs_epochs"))
buttons = c3.container(horizontal=True)
measure = buttons.button(f"Measure {' and '.join(map(str, WORKER_COUNTS))} workers", key="cs_measure", type="primary",
                         icon=":material/play_arrow:", disabled=bool(choice.waiting_for))
buttons.button("Stop", key="cs_stop", icon=":material/stop:", help="stops within a few batches; workers done stay")
status = st.empty()

if measure:
    try:
        config = preset_config("minibatch", device=device, epochs=epochs)
        with page_job("cs", on_progress=lambda step: status.info(step.message)) as turn:
            state.cs_scaling = measure_scaling(worker_data(choice), config, hooks=turn.hooks)
        status.empty()
    except DashboardError as exc:
        status.error(message_markdown(exc))

if (scaling := state.get("cs_scaling")) is not None and scaling.points:
    st.plotly_chart(scaling_chart(scaling), key="cs_scaling_chart")
    st.dataframe(readable([{"workers": p.workers, "s / epoch": p.seconds_per_epoch,
                            "all-reduce share": percent(p.allreduce_share), "test accuracy": percent(p.test_accuracy)}
                           for p in scaling.points]), hide_index=True, key="cs_scaling_table")
