"""AppTests of the Results page: empty, with saved runs, filters, import of good and bad files, delete."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from core.store.access import new_owner_token
from core.store.database import open_store
from tests.result_samples import LAB, LAPTOP, matmul_payload, train_payload, save_payload


def _shown(markdown: object) -> str:
    """What a reader sees of a Markdown source: user-written text arrives backslash-escaped."""
    return re.sub(r"\\(.)", r"\1", str(markdown))


def _text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [i.value for i in at.info] + [e.value for e in at.error]
    parts += [s.value for s in at.success] + [w.value for w in at.warning] + [c.value for c in at.caption]
    return "\n".join(_shown(p) for p in parts)


def _open(app: AppTest) -> AppTest:
    app.switch_page("pages/results.py").run()
    assert not app.exception, app.exception
    return app


def _charts(at: AppTest) -> list:
    return list(at.get("plotly_chart"))


@pytest.fixture
def saved():
    store = open_store()
    return {
        "laptop": save_payload(store, "matmul", matmul_payload(LAPTOP), {"sizes": "256,1024,4096"}, label="Ana"),
        "lab": save_payload(store, "matmul", matmul_payload(LAB), {"sizes": "256,1024,4096"}),
        "train": save_payload(store, "train", train_payload("cuda:0"), {"epochs": 3}, machine=LAB),
    }


def test_empty_state(app):
    at = _open(app)
    text = _text(at)
    assert "No saved runs yet" in text and "--save" in text
    assert len(at.get("file_uploader")) == 1, "importing is possible even with nothing saved"
    assert not _charts(at)


def test_saved_runs_are_listed_and_drawn(app, saved):
    at = _open(app)
    table = at.dataframe[0].value
    assert sorted(table["run"]) == sorted(saved.values())
    assert at.multiselect(key=next(k for k in _keys(at) if k.startswith("results_compare_"))).value == [3, 2, 1]
    charts = _charts(at)
    assert len(charts) == 2, "a sweep overlay and a training overlay"
    sweep = json.loads(charts[0].proto.spec)
    names = [trace.get("name") for trace in sweep["data"]]
    assert "#1 cpu (Student Laptop CPU i5) float32 · Ana" in names
    assert "#2 cuda:0 (NVIDIA H200) float32" in names
    lecture = next(t for t in sweep["data"] if t.get("name") == "lecture (n = 10,000)")
    assert lecture["y"] == [23_000.0, 3_000.0] and lecture["x"] == [10_000, 10_000]  # in the axis's ms
    assert sweep["layout"]["yaxis"]["title"]["text"] == "time per product (ms)"
    assert "Stored in the" not in _text(at), "no key set: no server path for the class to read (issue 34)"


def _keys(at: AppTest) -> list[str]:
    return [w.key for w in at.multiselect if w.key]


def test_filters(app, saved):
    at = _open(app)
    at.multiselect(key="results_machines").set_value(["Student Laptop CPU i5"]).run()
    assert list(at.dataframe[0].value["run"]) == [saved["laptop"]]
    assert len(_charts(at)) == 1
    at.multiselect(key="results_machines").set_value([]).run()
    at.multiselect(key="results_devices").set_value(["cuda:0"]).run()
    assert sorted(at.dataframe[0].value["run"]) == [saved["lab"], saved["train"]]
    at.multiselect(key="results_kinds").set_value(["train"]).run()
    assert list(at.dataframe[0].value["run"]) == [saved["train"]]
    at.multiselect(key="results_devices").set_value(["cpu"]).run()
    assert not at.exception
    assert "No saved run matches these filters" in _text(at), "the training run used cuda:0 only"


def test_chart_options(app, saved):
    at = _open(app)
    at.radio(key="results_matmul_metric").set_value("gflops").run()
    at.toggle(key="results_reference").set_value(False).run()
    at.radio(key="results_train_x").set_value("elapsed_s").run()
    assert not at.exception
    sweep = json.loads(_charts(at)[0].proto.spec)
    assert sweep["layout"]["yaxis"]["title"]["text"] == "GFLOP/s"
    assert all(t.get("name") != "lecture (n = 10,000)" for t in sweep["data"])


def _upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.get("file_uploader")[0].set_value((name, data, "application/json"))
    at.run()
    at.text_input(key="results_label").set_value("Ben's laptop")
    at.button(key="results_import").click().run()
    assert not at.exception, at.exception
    return at


def test_import_a_good_file(app):
    at = _open(app)
    at = _upload(at, "laptop.json", json.dumps(matmul_payload(LAPTOP)).encode())
    assert "laptop.json: imported 1 run(s)." in _text(at)
    runs = open_store().list_runs()
    assert len(runs) == 1 and runs[0].label == "Ben's laptop"
    assert list(at.dataframe[0].value["run"]) == [runs[0].run_id]
    assert len(_charts(at)) == 1


@pytest.mark.parametrize("data, message", [
    (b"", "the file is empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "not text"),
    (b'{"results": [{"device": "cpu", "n": -1}]}', "matmul.results[0]: missing"),
    (b"{definitely not json", "not valid JSON"),
])
def test_import_a_bad_file(app, data, message):
    at = _open(app)
    at = _upload(at, "bad.json", data)
    assert [e.value for e in at.error] and message in _shown(at.error[0].value)
    assert _shown(at.error[0].value).startswith("bad.json: ")
    assert open_store().list_runs() == []
    assert "No saved runs yet" in _text(at), "the page still works"


def test_a_session_past_its_runs_per_hour_is_told_how_to_raise_it(app, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_MAX_SESSION_RUNS_PER_HOUR", "1")
    at = _upload(_open(app), "laptop.json", json.dumps(matmul_payload(LAPTOP)).encode())
    assert "imported 1 run(s)" in _text(at)
    at = _upload(at, "lab.json", json.dumps(matmul_payload(LAB)).encode())
    error = _shown(at.error[0].value)
    assert error.startswith("lab.json: this browser session has saved or imported 1 runs in the last hour")
    assert "GPU_VS_CPU_MAX_SESSION_RUNS_PER_HOUR" in error and len(open_store().list_runs()) == 1


def test_import_waits_for_a_file(app):
    """A click before the upload has reached the server would import nothing: the button waits."""
    at = _open(app)
    assert at.button(key="results_import").disabled and "waits until it has finished uploading" in at.button(
        key="results_import").help
    upload = ("laptop.json", json.dumps(matmul_payload(LAPTOP)).encode(), "application/json")
    at.get("file_uploader")[0].set_value(upload)
    at.run()
    assert not at.button(key="results_import").disabled and not at.button(key="results_import").help


def test_delete(app, saved):
    at = _open(app)
    at.selectbox(key="results_delete_pick").set_value(saved["lab"]).run()
    at.button(key="results_delete").click().run()
    assert not at.exception
    assert f"Delete run #{saved['lab']} matmul" in _text(at) and "for everyone who shares this store" in _text(at)
    assert len(open_store().list_runs()) == 3, "nothing is deleted before the confirmation"
    at.button(key="results_delete_yes").click().run()
    assert not at.exception
    assert f"Deleted run #{saved['lab']}." in _text(at)
    assert sorted(at.dataframe[0].value["run"]) == [saved["laptop"], saved["train"]]
    assert [r.run_id for r in open_store().list_runs()] == [saved["train"], saved["laptop"]]


def test_delete_of_a_run_someone_else_deleted(app, saved):
    at = _open(app)
    at.selectbox(key="results_delete_pick").set_value(saved["lab"]).run()
    at.button(key="results_delete").click().run()
    open_store().delete(saved["lab"])  # another session got there first
    at.button(key="results_delete_yes").click().run()
    assert not at.exception
    assert f"no saved run #{saved['lab']}" in at.error[0].value


def test_unusable_store_is_a_message_not_a_traceback(app, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "mysql://teacher:secret@db/class")
    at = _open(app)
    assert at.error and "use postgresql://" in at.error[0].value and "secret" not in at.error[0].value


def test_downloads_hold_the_runs_shown(app, saved):
    at = _open(app)
    at.multiselect(key="results_kinds").set_value(["train"]).run()
    buttons = at.get("download_button")
    assert [b.proto.label for b in buttons] == ["Download the run shown (JSON, re-importable)",
                                                "Download the run shown (CSV, one row per point)"]
    at.multiselect(key="results_kinds").set_value([]).run()
    assert at.get("download_button")[0].proto.label == "Download the 3 runs shown (JSON, re-importable)"


def test_runs_with_unmeasured_values_still_render(app):
    sweep = matmul_payload(LAPTOP)
    sweep["results"][0].update(median_s=None, iqr_s=None, gflops=None)
    sweep["results"][1].update(iqr_s=None)
    sweep.pop("crossover_n")
    trained = train_payload()
    trained["epochs"][0].update(test_loss=None, test_accuracy=None)
    trained.update(test_accuracy=None, train_seconds=None, baseline_accuracy=None)
    store = open_store()
    save_payload(store, "matmul", sweep)
    save_payload(store, "train", trained, machine={})
    at = _open(app)
    assert len(_charts(at)) == 2
    assert "no accuracy" in " ".join(at.dataframe[0].value["result"])
    assert "unknown machine" in list(at.dataframe[0].value["machine"])


def test_an_unreadable_row_is_listed_with_a_delete_button(app, saved):
    store = open_store()
    with store._transaction() as tx:  # as an older, laxer version wrote it: no summary, so it is read in full
        tx.run("UPDATE gvc_runs SET payload_json = ?, summary_json = NULL WHERE id = ?",
               ('{"results": "garbage"}', saved["lab"]))
    at = _open(app)
    warning = next(_shown(w.value) for w in at.warning if f"#{saved['lab']}" in _shown(w.value))
    assert "unreadable" in warning and "results: expected a list" in warning
    assert sorted(at.dataframe[0].value["run"]) == [saved["laptop"], saved["train"]], "the rest still draws"
    assert len(_charts(at)) == 2
    at.button(key=f"results_delete_bad_{saved['lab']}").click().run()
    assert "for everyone who shares this store" in _text(at)
    assert len(store.read_runs().unreadable) == 1, "asks before deleting"
    at.button(key="results_delete_yes").click().run()
    assert not at.exception and f"Deleted run #{saved['lab']}." in _text(at)
    assert store.read_runs().unreadable == [] and len(store.list_runs()) == 2


def test_a_row_changed_by_hand_after_it_was_listed_is_named_when_charted(app, saved):
    store = open_store()
    with store._transaction() as tx:  # its summary still lists it; reading it for the charts finds it unreadable
        tx.run("UPDATE gvc_runs SET payload_json = ? WHERE id = ?", ('{"results": "garbage"}', saved["lab"]))
    at = _open(app)
    assert saved["lab"] in list(at.dataframe[0].value["run"])
    warning = next(_shown(w.value) for w in at.warning if f"#{saved['lab']}" in _shown(w.value))
    assert "unreadable" in warning and "results: expected a list" in warning
    assert len(_charts(at)) == 2, "the other chosen runs still draw"
    at.button(key=f"results_delete_bad_{saved['lab']}").click().run()
    at.button(key="results_delete_yes").click().run()
    assert not at.exception and f"Deleted run #{saved['lab']}." in _text(at)


def test_delete_can_be_cancelled(app, saved):
    at = _open(app)
    at.button(key="results_delete").click().run()
    at.button(key="results_delete_no").click().run()
    assert not at.exception and "for everyone who shares this store" not in _text(at)
    assert len(open_store().list_runs()) == 3


def test_only_unreadable_rows(app):
    store = open_store()
    run_id = save_payload(store, "train", train_payload(), machine=LAPTOP)
    with store._transaction() as tx:
        tx.run("UPDATE gvc_runs SET created_at = ?, summary_json = NULL WHERE id = ?",
               ("0001-01-01T00:00:00+01:00", run_id))
    at = _open(app)
    assert any(f"#{run_id}" in _shown(w.value) and "created_at" in _shown(w.value) for w in at.warning)
    assert "No saved runs yet" in _text(at)


KEY = "correct horse battery staple"


def _everything_shown(at: AppTest) -> str:
    """Every element's text and the session's widget values: where a leaked key would show."""
    widgets = [str(w.value) for w in at.text_input] + [str(o) for s in at.selectbox for o in s.options]
    return _text(at) + "\n".join(widgets) + "\n".join(str(e.value) for e in at.exception)


def test_a_student_deletes_only_their_own_runs_and_the_key_allows_any(app, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_INSTRUCTOR_KEY", KEY)
    ana = _upload(_open(app), "ana.json", json.dumps(matmul_payload(LAPTOP)).encode())
    [anas] = [r.run_id for r in open_store().list_runs()]
    assert "anyone may delete" not in _text(ana), "a key is set: no open-board line"
    saved_at = open_store().get(anas).created_at[:16].replace("T", " ")
    options = ana.selectbox(key="results_delete_pick").options
    assert options == [f"#{anas} matmul (imported) · Ben's laptop · {saved_at}"]

    ben = _open(AppTest.from_file(app._script_path, default_timeout=120))
    assert list(ben.dataframe[0].value["run"]) == [anas], "Ben sees Ana's run"
    assert not ben.selectbox and "None of the runs shown was saved or imported by this browser session" in _text(ben)
    ben.session_state["results_confirm"] = anas  # even a forged confirmation is checked by the store
    ben.run()
    ben.button(key="results_delete_yes").click().run()
    assert "saved by another browser session" in ben.error[0].value
    assert [r.run_id for r in open_store().list_runs()] == [anas]

    ben.text_input(key="results_key").input("wrong key").run()
    assert "not the instructor key" in ben.error[0].value and not ben.selectbox
    assert "Stored in the" not in _text(ben), "the server's path is for the instructor"
    ben.text_input(key="results_key").input(KEY).run()
    assert "Instructor mode" in ben.success[0].value
    assert "Stored in the SQLite file" in _text(ben), "the instructor sees where the runs are kept"
    assert KEY not in _everything_shown(ben), "the key is neither shown nor kept in a widget"
    ben.selectbox(key="results_delete_pick").set_value(anas).run()
    ben.button(key="results_delete").click().run()
    ben.button(key="results_delete_yes").click().run()
    assert f"Deleted run #{anas}." in _text(ben) and open_store().list_runs() == []


def test_a_session_deletes_a_run_it_saved_without_the_key(app, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_INSTRUCTOR_KEY", KEY)
    store = open_store()
    other = save_payload(store, "matmul", matmul_payload(LAB), {})  # the command line: no owner
    at = AppTest.from_file(app._script_path, default_timeout=120)
    at.session_state["board_owner_token"] = "ana's token"  # what result_store.save_run saves with
    mine = save_payload(store, "matmul", matmul_payload(LAPTOP), {}, owner_token="ana's token")
    at = _open(at)
    assert at.selectbox(key="results_delete_pick").options[0].startswith(f"#{mine} ")
    assert len(at.selectbox(key="results_delete_pick").options) == 1, f"run #{other} is not hers"
    at.button(key="results_delete").click().run()
    at.button(key="results_delete_yes").click().run()
    assert f"Deleted run #{mine}." in _text(at) and [r.run_id for r in store.list_runs()] == [other]


def test_wrong_keys_lock_the_field_for_the_session(app, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_INSTRUCTOR_KEY", KEY)
    save_payload(open_store(), "matmul", matmul_payload(LAB), {})
    at = _open(app)
    for attempt in range(5):
        at.text_input(key="results_key").input(f"guess {attempt}").run()
    at.text_input(key="results_key").input(KEY).run()
    assert "Too many wrong keys" in at.error[0].value and not at.selectbox


def test_no_key_is_an_open_board_with_a_neutral_line(app, saved):
    at = _open(app)
    assert "anyone may delete one" in _text(at) and not at.warning, "one neutral line, no yellow banner (issue 34)"
    assert len(at.selectbox(key="results_delete_pick").options) == 3


def test_a_large_board_reads_the_newest_runs_and_shows_more_on_request(app, saved, monkeypatch):
    from core.store import board

    monkeypatch.setattr(board, "PAGE_RUNS", 2)
    at = _open(app)
    assert sorted(at.dataframe[0].value["run"]) == [saved["lab"], saved["train"]]
    assert "Showing the newest 2 of 3 saved runs" in _text(at)
    at.button(key="results_more").click().run()
    assert sorted(at.dataframe[0].value["run"]) == sorted(saved.values()) and not at.get("button") == []
    assert "Showing the newest" not in _text(at)


def test_imported_runs_are_marked_in_the_table_the_legend_and_the_filter(app, saved):
    at = _upload(_open(app), "ben.json", json.dumps(matmul_payload(LAPTOP)).encode())
    table = at.dataframe[0].value
    assert sorted(table["source"]) == ["imported", "measured", "measured", "measured"]
    names = [t.get("name") for t in json.loads(_charts(at)[0].proto.spec)["data"]]
    assert any(n and n.endswith("(imported) · Ben's laptop") for n in names), names
    at.multiselect(key="results_sources").set_value(["imported"]).run()
    assert list(at.dataframe[0].value["source"]) == ["imported"]


def test_a_new_session_gets_no_more_key_tries(app, monkeypatch):
    """Issue 30: the lock was per session and said "Open a new session": every reload gave five more guesses."""
    monkeypatch.setenv("GPU_VS_CPU_INSTRUCTOR_KEY", KEY)
    save_payload(open_store(), "matmul", matmul_payload(LAB), {})
    at = _open(app)
    for attempt in range(5):
        at.text_input(key="results_key").input(f"guess {attempt}").run()
    fresh = _open(AppTest.from_file(app._script_path, default_timeout=120))  # a reload: a new session
    fresh.text_input(key="results_key").input(KEY).run()
    shown = fresh.error[0].value
    assert "Too many wrong keys" in shown and "session" not in shown.lower() and not fresh.selectbox


def test_a_reload_keeps_the_right_to_delete_the_sessions_runs(app, monkeypatch):
    """Issue 30: a reload (a new session) lost the right to delete the runs the session had saved. The browser
    keeps the token in a cookie; a new session takes it back only if this server issued it."""
    from pages.shared import result_store

    monkeypatch.setenv("GPU_VS_CPU_INSTRUCTOR_KEY", KEY)
    cookie: dict[str, str | None] = {"value": None}
    monkeypatch.setattr(result_store, "_browser_cookie", lambda: cookie["value"])
    ana = _open(app).run()  # the token was issued in the first run; the next gives it to the browser, once
    token = ana.session_state["board_owner_token"]
    scripts = [h.proto.body for h in ana.get("html")]
    assert any(f"gvc_owner={token};" in s and "SameSite=Strict" in s for s in scripts), "the browser keeps it"
    assert not ana.run().get("html"), "once"
    ana = _upload(ana, "ana.json", json.dumps(matmul_payload(LAPTOP)).encode())
    [anas] = [r.run_id for r in open_store().list_runs()]

    cookie["value"] = token  # the reload: a new session, the browser sending the cookie back
    again = _open(AppTest.from_file(app._script_path, default_timeout=120))
    assert again.session_state["board_owner_token"] == token
    assert again.selectbox(key="results_delete_pick").options[0].startswith(f"#{anas} ")

    cookie["value"] = forged = new_owner_token()  # made up, not issued (other forms: test_store_access.py)
    other = _open(AppTest.from_file(app._script_path, default_timeout=120))
    assert other.session_state["board_owner_token"] not in (forged, token), "a fresh token instead"
    assert not other.selectbox and "None of the runs shown" in _text(other)
