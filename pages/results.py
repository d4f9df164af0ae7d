"""Results: every saved sweep and training run, from this machine and every machine sharing the store."""

import hashlib

import streamlit as st

from core.charts.results import MATMUL_METRICS, TRAIN_AXES, TRAIN_METRICS, matmul_overlay, train_overlay
from core.errors import DashboardError
from core.lecture import LECTURE_SENTENCE
from core.store import listing_frame, matmul_frame, open_store, pick_runs, train_frame
from pages.shared.result_store import store_url
from pages.shared.entry import through_app

through_app()

DEFAULT_COMPARE = 6  # newest runs drawn by default; more make an unreadable legend
st.session_state.setdefault("results_upload_round", 0)  # a new uploader after each import empties it


def _notice(kind: str, text: str) -> None:
    st.session_state["results_notice"] = (kind, text)


def _import() -> None:
    st.session_state["results_import_open"] = True  # keep the importer open for the next file
    key = f"results_upload_{st.session_state['results_upload_round']}"
    upload = st.session_state.get(key)
    if upload is None:
        _notice("warning", "Choose a JSON file first.")
        return
    try:
        label = st.session_state.get("results_label", "")
        result = open_store(store_url()).import_json(upload.getvalue(), label=label)
    except DashboardError as exc:
        _notice("error", f"{upload.name}: {exc}")
        return
    st.session_state["results_upload_round"] += 1
    skipped = f"; {result.skipped} were already saved" if result.skipped else ""
    _notice("success", f"{upload.name}: imported {len(result.run_ids)} run(s){skipped}.")


def _delete() -> None:
    run_id = st.session_state.get("results_delete_pick")
    try:
        open_store(store_url()).delete(run_id)
    except DashboardError as exc:
        _notice("error", str(exc))
        return
    _notice("success", f"Deleted run #{run_id}.")


st.title("Results")
st.caption("Every saved sweep and training run, side by side: a student's laptop next to the lab's GPU.")

try:
    store = open_store(store_url())
    runs = store.list_runs()
except DashboardError as exc:
    st.error(str(exc), icon=":material/error:")
    st.stop()

notice = st.session_state.pop("results_notice", None)
if notice:
    getattr(st, notice[0])(notice[1])

importer_open = not runs or st.session_state.get("results_import_open", False)
with st.expander("Import a result file", icon=":material/upload_file:", expanded=importer_open):
    st.file_uploader(
        "A file from `python -m core matmul --json`, `python -m core train --json`, or an export from this page",
        type=["json"], key=f"results_upload_{st.session_state['results_upload_round']}",
    )
    st.text_input("Label for the imported runs (optional)", key="results_label",
                  placeholder="e.g. Ana's laptop", max_chars=200)
    st.button("Import", key="results_import", on_click=_import, icon=":material/upload:")

st.caption(f"Stored in the {store.describe()}.")
if not runs:
    st.info(
        "**No saved runs yet.** Finished runs on the **Matmul race** and **Review classifier** pages are saved here; "
        "so are `python -m core matmul --json --save` and `python -m core train --json --save` on any machine "
        "that shares this store. A JSON file from another machine can be imported above.",
        icon=":material/inventory_2:",
    )
    st.stop()

machines = sorted({r.machine_label for r in runs})
devices = sorted({d for r in runs for d in r.devices})
c1, c2, c3 = st.columns(3)
pick_machines = c1.multiselect("Machine", machines, key="results_machines", placeholder="all machines")
pick_devices = c2.multiselect("Device", devices, key="results_devices", placeholder="all devices")
pick_kinds = c3.multiselect("Kind", ["matmul", "train"], key="results_kinds", placeholder="sweeps and training",
                            format_func={"matmul": "matmul sweep", "train": "training run"}.get)
shown = pick_runs(runs, machines=pick_machines, devices=pick_devices, kinds=pick_kinds)
if not shown:
    st.info("No saved run matches these filters.")
    st.stop()

st.dataframe(listing_frame(shown), hide_index=True, key="results_table")

ids = [r.run_id for r in shown]
by_id = {r.run_id: r for r in shown}
options_key = hashlib.sha1(",".join(map(str, ids)).encode()).hexdigest()[:10]  # new options: fresh default
chosen_ids = st.multiselect("Runs to compare", ids, default=ids[:DEFAULT_COMPARE], format_func=lambda i: by_id[i].title,
                            key=f"results_compare_{options_key}")
chosen = [by_id[i] for i in chosen_ids]

sweeps, trainings = matmul_frame(chosen), train_frame(chosen)
if not sweeps.empty:
    st.subheader("Matmul sweeps")
    a, b = st.columns([2, 1])
    metric = a.radio("Show", list(MATMUL_METRICS), format_func=MATMUL_METRICS.get, horizontal=True,
                     key="results_matmul_metric")
    reference = b.toggle("Lecture's reference points", value=True, key="results_reference")
    st.plotly_chart(matmul_overlay(sweeps, metric, reference=reference), key="results_matmul_chart")
    st.caption(f"Solid lines: GPUs; dashed: CPUs. Stars: {LECTURE_SENTENCE}.")
if not trainings.empty:
    st.subheader("Training runs")
    a, b = st.columns(2)
    metric = a.radio("Show", list(TRAIN_METRICS), format_func=TRAIN_METRICS.get, horizontal=True,
                     key="results_train_metric")
    x_axis = b.radio("Against", list(TRAIN_AXES), format_func=TRAIN_AXES.get, horizontal=True, key="results_train_x")
    st.plotly_chart(train_overlay(trainings, metric, x_axis), key="results_train_chart")
if chosen and sweeps.empty and trainings.empty:
    st.info("Choose runs above to draw them.")

st.subheader("Export and delete")
try:
    exported_json, exported_csv = store.export_json(ids), store.export_csv(ids)
except DashboardError as exc:
    st.error(str(exc), icon=":material/error:")
else:
    these = f"the {len(shown)} runs shown" if len(shown) > 1 else "the run shown"
    d1, d2 = st.columns(2)
    d1.download_button(f"Download {these} (JSON, re-importable)", exported_json,
                       file_name="gpu-vs-cpu-results.json", mime="application/json", key="results_export_json",
                       icon=":material/download:")
    d2.download_button(f"Download {these} (CSV, one row per point)", exported_csv,
                       file_name="gpu-vs-cpu-results.csv", mime="text/csv", key="results_export_csv",
                       icon=":material/download:")
with st.expander("Delete a run", icon=":material/delete:"):
    st.selectbox("Run", ids, format_func=lambda i: by_id[i].title, key="results_delete_pick")
    st.button("Delete this run", key="results_delete", on_click=_delete, type="primary", icon=":material/delete:",
              help="removes it from the store for everyone who shares it")
