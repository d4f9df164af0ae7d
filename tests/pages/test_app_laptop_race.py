"""AppTests of "Race on your laptop": a browser's run fed through the component's state (what race.js's
setStateValue("result", ...) sets), judged, saved once across reruns, shown on Results and the Class board;
a forged or implausible run refused in one line with nothing saved; the CPU half alone saved with the reason."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from core.results.runs import BROWSER
from core.store.database import open_store
from tests.browser.test_browser_race import payload

PAGE = "pages/laptop_race.py"


def _feed(app: AppTest, value: dict) -> AppTest:
    app.session_state["lap_race"] = {"result": value}
    return app.run()


def _texts(app: AppTest) -> list[str]:
    return [e.value for kind in ("success", "info", "warning", "error") for e in app.get(kind)]


def test_a_browser_run_is_judged_saved_once_and_on_results_and_the_board(app: AppTest):
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    assert not open_store().list_runs()
    app.text_input(key="lap_guess").set_value("200")
    app.text_input(key="lap_label").set_value("Ana")
    _feed(app, payload())
    assert not app.exception, app.exception
    texts = _texts(app)
    assert any(t.startswith("**Crossover:** webgpu float32 beats wasm 4 workers") for t in texts), texts
    assert any("software, not a GPU" in t for t in texts)  # SwiftShader said so
    assert any(t.startswith("You guessed a crossover at n = 200") for t in texts)
    assert any(t.startswith("Forgot to wait") for t in texts)
    assert any(t.startswith("One big dispatch against 16 small dependent ones: at n = 256") for t in texts), texts
    assert [c for c in app.get("plotly_chart") if "lap_time_chart" in str(c.proto.id)]
    (saved,) = open_store().list_runs(kind="browser")
    assert saved.label == "Ana" and saved.provenance.source == BROWSER and saved.result.guess.value == 200

    app.text_input(key="lap_label").set_value("Ana again").run()  # a rerun: the component hands the run back
    app.run()
    assert len(open_store().list_runs(kind="browser")) == 1, "one run id is saved once"

    _feed(app, payload(run_id="run-second-0001"))  # a new click makes a new id
    assert len(open_store().list_runs(kind="browser")) == 2

    app.switch_page("pages/results.py").run()
    assert not app.exception, app.exception
    app.switch_page("pages/class_board.py").run()
    assert not app.exception, app.exception
    assert any("webgpu" in str(r) or "WebGPU" in str(r) for r in app.dataframe[0].value["result"])


def test_a_forged_run_is_refused_in_one_line_and_nothing_is_saved(app: AppTest):
    app.switch_page(PAGE).run()
    forged = payload(run_id="run-forged-0001")
    forged["verdicts"] = [{"n": 64, "a": "webgpu float32", "b": "wasm 1 worker", "call": "faster"}]
    _feed(app, forged)
    assert not app.exception, app.exception
    (error,) = app.error
    assert error.value.startswith("refused the browser's run, nothing saved") and "\n" not in error.value
    implausible = payload(run_id="run-fast-000001")
    implausible["points"][1]["times_s"] = [1e-9] * 5  # a WebAssembly worker at 268 TFLOP/s
    _feed(app, implausible)
    assert "can reach" in app.error[0].value
    assert not open_store().list_runs()


def test_without_webgpu_the_cpu_half_is_saved_with_the_reason(app: AppTest):
    app.switch_page(PAGE).run()
    cpu_only = payload(adapter=None, run_id="run-cpu-only-01")
    cpu_only["gpu"] = "insecure"
    _feed(app, cpu_only)
    assert not app.exception, app.exception
    assert any("not a secure context" in t and "https" in t for t in _texts(app))
    (saved,) = open_store().list_runs(kind="browser")
    assert saved.result.series == ["wasm 1 worker", "wasm 4 workers"]
    assert "CPU only: not a secure page" in saved.headline


def test_a_stopped_run_is_kept_and_saved_only_on_save(app: AppTest):
    app.switch_page(PAGE).run()
    stopped = payload(run_id="run-stopped-0001", sizes=(64, 128))
    stopped["stopped"] = True
    _feed(app, stopped)
    assert not app.exception, app.exception
    assert any(t.startswith("Stopped: the sizes measured before Stop are kept") for t in _texts(app))
    assert not open_store().list_runs()
    app.button(key="lap_save").click().run()
    (saved,) = open_store().list_runs(kind="browser")
    assert saved.result.stopped and {p.n for p in saved.result.points} == {64, 128}
    app.run()
    assert len(open_store().list_runs()) == 1
