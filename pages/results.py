"""Results: every saved sweep, training run and roofline, from this machine and every machine sharing the store."""

import streamlit as st

from core.charts.results import MATMUL_METRICS, TRAIN_AXES, TRAIN_METRICS
from core.errors import DashboardError
from core.lecture import LECTURE_SENTENCE
from core.results import KIND_TITLES, KINDS
from core.platform.units import readable
from core.store import board, listing_frame
from core.store.access import key_too_short
from core.store.board import Notice
from core.store.records import RunFilter, UnreadableRun
from core.charts.ranks import ranks_figure
from core.results.cluster import ClusterRun
from pages.shared import board_widgets as widgets
from pages.shared import result_store
from pages.shared.entry import through_app
from pages.shared.result_store import store_url

through_app()
state = st.session_state
state.setdefault("results_upload_round", 0)  # a new uploader after each import empties it


def _import() -> None:
    state.results_import_open = True  # keep the importer open for the next file
    state.results_notice = board.import_upload(store_url(), state.get(f"results_upload_{state.results_upload_round}"),
                                               state.get("results_label", ""), access=result_store.access(),
                                               session=result_store.session_tag())
    state.results_upload_round += 1 if state.results_notice.level == "success" else 0


def _enter_key() -> None:
    """Check the typed key, then empty the field: the key stays in no widget and no message."""
    outcome = result_store.enter_key(state.get("results_key", ""))
    state.results_key = ""
    state.results_notice = Notice(*widgets.key_notice(outcome))


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
if notice := state.pop("results_notice", None):
    getattr(st, notice.level)(notice.text)
key, access = result_store.instructor_key(), result_store.access()
if key is None:
    st.warning(widgets.OPEN_BOARD_WARNING, icon=":material/lock_open:")
elif key_too_short(key) and access.instructor:
    st.warning(widgets.SHORT_KEY_WARNING, icon=":material/key:")
if state.get("results_confirm") is not None:  # the board is shared: ask before deleting for everyone
    st.warning(widgets.confirm_text(board.run_title(store_url(), state.results_confirm)), icon=":material/delete:")
    st.button("Yes, delete it", key="results_delete_yes", type="primary", on_click=lambda: state.update(
        results_notice=board.delete_run(store_url(), state.pop("results_confirm", None), result_store.access())))
    st.button("Cancel", key="results_delete_no", on_click=state.pop, args=("results_confirm", None))
with st.expander("Import a result file", icon=":material/upload_file:",
                 expanded=not total or state.get("results_import_open", False)):
    chosen_file = st.file_uploader(widgets.UPLOAD_LABEL, type=["json"],
                                   key=f"results_upload_{state.results_upload_round}")
    st.text_input("Label for the imported runs (optional)", key="results_label", placeholder="e.g. Ana's laptop", max_chars=200)
    st.button("Import", key="results_import", on_click=_import, icon=":material/upload:",
              **widgets.import_button(chosen_file))
st.caption(f"Stored in the {store.describe()}.")


def _unreadable(bad: UnreadableRun) -> None:
    st.warning(widgets.unreadable_text(bad), icon=":material/broken_image:")
    if access.may_delete(bad.owner):
        st.button(f"Delete run #{bad.run_id}", key=f"results_delete_bad_{bad.run_id}", on_click=state.update,
                  args=({"results_confirm": bad.run_id},))


if not total:
    st.info(widgets.EMPTY_TEXT, icon=":material/inventory_2:")
    st.stop()
c1, c2, c3, c4 = st.columns(4)
c1.multiselect("Machine", options.machines, key="results_machines", placeholder="all machines")
c2.multiselect("Device", options.devices, key="results_devices", placeholder="all devices")
c3.multiselect("Kind", KINDS, key="results_kinds", format_func=KIND_TITLES.get, placeholder="all kinds")
c4.multiselect("Source", options.sources, key="results_sources", format_func=widgets.SOURCE_TITLES.get,
               placeholder="all sources")
if read.more:
    st.caption(widgets.more_text(len(listing.runs), read.total))
    st.button(widgets.MORE_LABEL, key="results_more", on_click=lambda: state.update(
        results_limit=state.results_limit + board.PAGE_RUNS))
for bad in listing.unreadable:
    _unreadable(bad)
if not (shown := listing.runs):
    st.info("No saved run matches these filters." if runs != RunFilter() else widgets.EMPTY_TEXT)
    st.stop()
st.dataframe(readable(listing_frame(shown)), hide_index=True, key="results_table")
ids, by_id = [r.run_id for r in shown], {r.run_id: r for r in shown}
chosen_ids = st.multiselect("Runs to compare", ids, default=ids[:board.DEFAULT_COMPARE],
                            format_func=lambda i: by_id[i].title, key=widgets.compare_key(ids))
compared = result_store.compared(chosen_ids, version)
for bad in compared.unreadable:  # a row changed by hand since its summary was stored
    _unreadable(bad)
drawn = {r.kind for r in compared.runs}
if "matmul" in drawn:
    st.subheader("Matmul sweeps")
    a, b = st.columns([2, 1])
    metric = a.radio("Show", MATMUL_METRICS, format_func=MATMUL_METRICS.get, horizontal=True,
                     key="results_matmul_metric")
    reference = b.toggle("Lecture's reference points", value=True, key="results_reference")
    if (sweeps := result_store.figure("matmul", chosen_ids, version, metric, "reference" if reference else "")) is not None:
        st.plotly_chart(sweeps, key="results_matmul_chart")
    st.caption(f"Solid lines: GPUs; dashed: CPUs. Stars: {LECTURE_SENTENCE}.")
if "train" in drawn:
    st.subheader("Training runs")
    a, b = st.columns(2)
    metric = a.radio("Show", TRAIN_METRICS, format_func=TRAIN_METRICS.get, horizontal=True, key="results_train_metric")
    x_axis = b.radio("Against", TRAIN_AXES, format_func=TRAIN_AXES.get, horizontal=True, key="results_train_x")
    if (trainings := result_store.figure("train", chosen_ids, version, metric, x_axis)) is not None:
        st.plotly_chart(trainings, key="results_train_chart")
if (rooflines := result_store.figure("roofline", chosen_ids, version)) is not None:  # titled "Rooflines" itself
    st.plotly_chart(rooflines, key="results_roofline_chart")
for every in (r for r in compared.runs if isinstance(r.result, ClusterRun)):  # every device at once: one chart per run
    st.plotly_chart(ranks_figure(every.result, every.title), key=f"results_cluster_{every.run_id}")
st.subheader("Export and delete")
for column, b in zip(st.columns(2), widgets.download_buttons(board.exports(store_url(), ids), len(ids))):
    column.download_button(b.label, b.export.data, file_name=b.export.file_name, mime=b.export.mime, key=b.key,
                           icon=":material/download:")
with st.expander("Delete a run", icon=":material/delete:"):
    if key is not None and not access.instructor:
        st.caption(widgets.OWN_RUNS_ONLY)
        st.text_input(widgets.KEY_LABEL, type="password", key="results_key", on_change=_enter_key, help=widgets.KEY_HELP)
    if mine := board.deletable(shown, access):
        pick = st.selectbox("Run", mine, format_func=lambda i: by_id[i].title, key="results_delete_pick")
        st.button("Delete this run…", key="results_delete", on_click=state.update, args=({"results_confirm": pick},),
                  icon=":material/delete:", help="asks first: it removes the run for everyone who shares the store")
    else:
        st.info(widgets.NOTHING_TO_DELETE)
