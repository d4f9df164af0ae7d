"""The Results page's wording and widget settings (pages/shared/board_widgets.py), without a page."""

from __future__ import annotations

import json

from core.store.database import open_store
from core.store.board import Export, exports, run_title
from pages.shared import board_widgets as widgets
from tests.result_samples import LAPTOP, matmul_payload, save_payload


class _Upload:
    name = "runs.json"

    def getvalue(self) -> bytes:
        return b"{}"


def test_import_waits_for_the_upload_and_says_why():
    assert widgets.import_button(None) == {"disabled": True, "help": widgets.IMPORT_WAITS}
    assert widgets.import_button(_Upload()) == {"disabled": False, "help": None}


def test_the_delete_question_names_the_run_escaped():
    question = widgets.confirm_text("Ana's *laptop*")
    assert question.startswith("Delete run Ana's \\*laptop\\*?") and "everyone who shares this store" in question


def test_a_run_no_longer_stored_is_named_by_its_number(tmp_path):
    url = f"sqlite:///{tmp_path / 'board.sqlite3'}"
    run_id = save_payload(open_store(url), "matmul", matmul_payload(LAPTOP), {}, label="Ana")
    assert run_title(url, run_id).startswith(f"#{run_id} matmul · Ana · ")
    assert run_title(url, run_id + 1) == f"#{run_id + 1}"


def test_the_compare_key_changes_with_the_runs_offered():
    assert widgets.compare_key([3, 2, 1]) == widgets.compare_key([3, 2, 1])
    assert widgets.compare_key([3, 2, 1]) != widgets.compare_key([4, 3, 2, 1])
    assert widgets.compare_key([1]).startswith("results_compare_")


def test_download_labels_count_the_runs_and_keys_name_the_format():
    files = [Export("json", lambda: b"{}", "a.json", "application/json"),
             Export("csv", lambda: b"", "a.csv", "text/csv")]
    one, many = widgets.download_buttons(files, 1), widgets.download_buttons(files, 3)
    assert [b.label for b in one] == ["Download the run shown (JSON, re-importable)",
                                      "Download the run shown (CSV, one row per point)"]
    assert many[0].label == "Download the 3 runs shown (JSON, re-importable)"
    assert [b.key for b in many] == ["results_export_json", "results_export_csv"] and many[1].export is files[1]


def test_core_exports_are_data_only(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'board.sqlite3'}")
    run_id = save_payload(store, "matmul", matmul_payload(LAPTOP), {"sizes": "256"})
    files = exports(store_url := f"sqlite:///{tmp_path / 'board.sqlite3'}", [run_id])
    assert [(f.fmt, f.file_name, f.mime) for f in files] == [
        ("json", "gpu-vs-cpu-results.json", "application/json"), ("csv", "gpu-vs-cpu-results.csv", "text/csv")]
    assert json.loads(files[0].data())["runs"][0]["uid"] == store.get(run_id).uid
    assert files[1].data().decode() == store.export_csv([run_id]).decode()
    (tmp_path / "board.sqlite3").write_bytes(b"not a database")  # Download pressed after the board broke
    assert exports(store_url, [run_id])[0].data().startswith(b"The export failed: the result store")
