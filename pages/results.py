"""Results: every saved sweep, training run and roofline, from this machine and every machine sharing the store."""

import streamlit as st

from core.errors import DashboardError
from core.platform.units import readable
from core.store import board
from core.store.frames import listing_frame
from core.store.records import RunFilter
from pages.shared import board_widgets as words
from pages.shared import result_store
from pages.shared import results_widgets as widgets
from pages.shared.entry import through_app

through_app()
state = st.session_state

st.title("Results")
st.caption("Every saved sweep, training run and roofline, side by side: a student's laptop next to the lab's GPU.")
state.setdefault("results_limit", board.PAGE_RUNS)
try:
    version = result_store.board_version()
    options, total = result_store.board_choices(version)
    runs = RunFilter.of(state.get("results_machines"), state.get("results_devices"), state.get("results_kinds"),
                        state.get("results_sources"))
    read = result_store.read_board(state.results_limit, runs, version)
    store, listing = read.store, read.listing
except DashboardError as exc:
    st.error(str(exc), icon=":material/error:")
    st.stop()
key, access = result_store.instructor_key(), result_store.access()
widgets.notices(key, access, store.describe())  # the store's place on the server: for the instructor only
widgets.importer(total)

if not total:
    st.info(words.EMPTY_TEXT, icon=":material/inventory_2:")
    st.stop()
widgets.filters(options)
if read.more:
    st.caption(words.more_text(len(listing.runs), read.total))
    st.button(words.MORE_LABEL, key="results_more", on_click=lambda: state.update(
        results_limit=state.results_limit + board.PAGE_RUNS))
for bad in listing.unreadable:
    widgets.unreadable(bad, access)
if not (shown := listing.runs):
    st.info("No saved run matches these filters." if runs != RunFilter() else words.EMPTY_TEXT)
    st.stop()
ids, by_id = [r.run_id for r in shown], {r.run_id: r for r in shown}
chosen_ids = st.multiselect("Runs to compare", ids, default=ids[:board.DEFAULT_COMPARE],
                            format_func=lambda i: by_id[i].title, key=words.compare_key(ids))
compared = result_store.compared(chosen_ids, version)
for bad in compared.unreadable:  # a row changed by hand since its summary was stored
    widgets.unreadable(bad, access)
widgets.figures(compared.runs, chosen_ids, version)  # each kind by its view (core.charts.results.VIEWS)
st.subheader("Every run shown")  # the long table after the charts, so the charts come into view first
st.dataframe(readable(listing_frame(shown)), hide_index=True, key="results_table")
widgets.export_and_delete(ids, shown, key, access)
