"""Race on your laptop: the Matmul race in the student's own browser, WebGPU against WebAssembly in Web
Workers. The browser measures (core/browser/race.js); the server checks, judges and saves (core.browser)."""

import streamlit as st

from core.browser.assets import COMPONENT, parts, race_data, sizes_between
from core.browser.judge import Inbox
from core.errors import DashboardError
from core.results.guess import parse_matmul_guess
from core.results.runs import BROWSER
from pages.shared import browser_views
from pages.shared.entry import through_app
from pages.shared.result_store import save_run

through_app()
state = st.session_state
state.setdefault("lap_inbox", Inbox())  # the run ids taken: the component hands its last run back on every rerun
state.setdefault("lap_run", None)


def save() -> None:
    """Save the judged run for Results and the Class board (a callback, so the page redraws knowing it)."""
    run = state.lap_run
    state.lap_saved = save_run(run, label=state.lap_label.strip(), source=BROWSER)


st.title("Race on your laptop")
st.caption("The same race, on the machine in front of you: your browser multiplies n × n matrices on your own GPU "
           "(WebGPU) and on your CPU (WebAssembly in Web Workers, 1 and k at once), timed honestly. The server "
           "judges the samples with the Matmul race's rules, and the Class board shows every laptop in the room.")
sizes, budget, workers, gpu = browser_views.settings()
st.caption("Press **Run in this browser**: the page stays responsive (the CPU works in Web Workers); "
           "**Stop** keeps the sizes measured so far.")
try:
    data = race_data(sizes_between(*sizes), budget_s=budget, workers=workers, gpu=gpu)
except DashboardError as exc:
    st.error(str(exc))
    st.stop()
component = st.components.v2.component(COMPONENT, html=parts().html, css=parts().css, js=parts().js)
value = component(key="lap_race", data=data).get("result")
if value is not None and state.lap_inbox.is_new(value):
    state.lap_saved, state.lap_refused = None, None
    try:
        settings = {"sizes": list(data["sizes"]), "budget_s": budget, "workers": workers, "gpu": gpu}
        state.lap_run = state.lap_inbox.take(value, guess=parse_matmul_guess(state.lap_guess), settings=settings)
        if state.lap_run is not None and not state.lap_run.stopped:
            save()  # a finished run goes to Results and the Class board; a stopped one on request
    except DashboardError as exc:  # a forged or implausible run (or a guess that is not a size): nothing saved
        state.lap_run, state.lap_refused = None, str(exc)
if state.get("lap_refused"):
    st.error(state.lap_refused)

if (run := state.lap_run) is not None:
    if state.get("lap_saved") is None:
        st.button("Save to Results", key="lap_save", icon=":material/save:", on_click=save)
    else:
        st.caption(f"Saved as run #{state.lap_saved}: it is on the Results page and the Class board.")
    browser_views.result(run)
st.page_link("pages/matmul_race.py", label="The Matmul race on this server", icon=":material/sprint:")
