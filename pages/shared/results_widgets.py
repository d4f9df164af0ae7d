"""The Results page's widget groups: the notices over the board, the importer, the filters, each kind's
figures, the exports and the delete box. Not a page (app.py does not list it).

The wording they show is pages/shared/board_widgets.py's (pure functions, tested without a page); what
the board holds and does is core.store.board's. Each kind is drawn by its view in core.charts.results.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from core.charts import results as views
from core.charts.results import Choice, Control
from core.results import kinds
from core.store import board
from core.store.access import Access, key_too_short
from core.store.board import Choices, Notice
from core.store.records import RunSummary, StoredRun, UnreadableRun
from pages.shared import board_widgets as words
from pages.shared import result_store
from pages.shared.result_store import store_url

state = st.session_state


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
    state.results_notice = Notice(*words.key_notice(outcome))


def notices(key: str | None, access: Access, store: str) -> None:
    """The last action's outcome, the notes about the key and the store, and the question before a delete.

    Administrative notes (where the store lives on the server, a key too short) are for the instructor only:
    a key configured and entered in this session. With no key configured, one neutral line and no server path:
    every student and the projector see it."""
    if notice := state.pop("results_notice", None):
        getattr(st, notice.level)(notice.text)
    if key is None:
        st.caption(words.OPEN_BOARD_NOTE)
    elif access.instructor:  # a key is set, and this session entered it
        if key_too_short(key):
            st.warning(words.SHORT_KEY_WARNING, icon=":material/key:")
        st.caption(f"Stored in the {store}.")
    if state.get("results_confirm") is not None:  # the board is shared: ask before deleting for everyone
        st.warning(words.confirm_text(board.run_title(store_url(), state.results_confirm)), icon=":material/delete:")
        st.button("Yes, delete it", key="results_delete_yes", type="primary", on_click=lambda: state.update(
            results_notice=board.delete_run(store_url(), state.pop("results_confirm", None), result_store.access())))
        st.button("Cancel", key="results_delete_no", on_click=state.pop, args=("results_confirm", None))


def importer(total: int) -> None:
    """A file, a label and Import; open while the board is empty or right after an import."""
    state.setdefault("results_upload_round", 0)  # a new uploader after each import empties it
    with st.expander("Import a result file", icon=":material/upload_file:",
                     expanded=not total or state.get("results_import_open", False)):
        chosen = st.file_uploader(words.UPLOAD_LABEL, type=["json"], key=f"results_upload_{state.results_upload_round}")
        st.text_input("Label for the imported runs (optional)", key="results_label", placeholder="e.g. Ana's laptop",
                      max_chars=200)
        st.button("Import", key="results_import", on_click=_import, icon=":material/upload:",
                  **words.import_button(chosen))


def filters(options: Choices) -> None:
    """Machine, device, kind and source; the page reads them back from session state."""
    c1, c2, c3, c4 = st.columns(4)
    c1.multiselect("Machine", options.machines, key="results_machines", placeholder="all machines")
    c2.multiselect("Device", options.devices, key="results_devices", placeholder="all devices")
    c3.multiselect("Kind", kinds.KINDS, key="results_kinds", format_func=kinds.KIND_TITLES.get, placeholder="all kinds")
    c4.multiselect("Source", options.sources, key="results_sources", format_func=words.SOURCE_TITLES.get,
                   placeholder="all sources")


def unreadable(bad: UnreadableRun, access: Access) -> None:
    st.warning(words.unreadable_text(bad), icon=":material/broken_image:")
    if access.may_delete(bad.owner):
        st.button(f"Delete run #{bad.run_id}", key=f"results_delete_bad_{bad.run_id}", on_click=state.update,
                  args=({"results_confirm": bad.run_id},))


def _control(column: st.delta_generator.DeltaGenerator, control: Control) -> Choice:
    if control.options is None:
        return bool(column.toggle(control.label, value=control.default, key=control.key))
    options = control.options
    return str(column.radio(control.label, list(options), format_func=options.get, horizontal=True, key=control.key))


def figures(runs: Sequence[StoredRun], run_ids: list[int], version: tuple[str, int, int]) -> None:
    """Every kind among `runs` drawn by its view: its heading, its choices, its figures, its caption."""
    drawn = {r.kind for r in runs}
    for view in (v for v in views.VIEWS if v.kind in drawn):
        if view.heading:
            st.subheader(view.heading)
        columns = st.columns([c.width for c in view.controls]) if view.controls else []
        choices = tuple(_control(column, c) for column, c in zip(columns, view.controls))
        for suffix, figure in result_store.figures(view.kind, run_ids, version, choices):
            st.plotly_chart(figure, key=f"results_{view.kind}_{suffix}")
        if view.caption:
            st.caption(view.caption)


def export_and_delete(ids: list[int], shown: Sequence[RunSummary], key: str | None, access: Access) -> None:
    """The two export files of the runs shown, and the box to delete one this session may delete."""
    st.subheader("Export and delete")
    for column, b in zip(st.columns(2), words.download_buttons(board.exports(store_url(), ids), len(ids))):
        column.download_button(b.label, b.export.data, file_name=b.export.file_name, mime=b.export.mime, key=b.key,
                               icon=":material/download:", help=b.help)
    titles = {r.run_id: r.title for r in shown}
    with st.expander("Delete a run", icon=":material/delete:"):
        if key is not None and not access.instructor:
            st.caption(words.OWN_RUNS_ONLY)
            st.text_input(words.KEY_LABEL, type="password", key="results_key", on_change=_enter_key,
                          help=words.KEY_HELP)
        if mine := board.deletable(shown, access):
            pick = st.selectbox("Run", mine, format_func=titles.get, key="results_delete_pick")
            st.button("Delete this run…", key="results_delete", on_click=state.update,
                      args=({"results_confirm": pick},),
                      icon=":material/delete:", help="asks first: it removes the run for everyone who shares the store")
        else:
            st.info(words.NOTHING_TO_DELETE)
