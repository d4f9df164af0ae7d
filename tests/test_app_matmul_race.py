"""AppTests of the Matmul race page: without a GPU, with a fake one, a tiny real run, stop, errors."""

import os

import pytest
import torch
from streamlit.testing.v1 import AppTest

PAGE = "pages/matmul_race.py"


def _text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [i.value for i in at.info] + [w.value for w in at.warning]
    parts += [s.value for s in at.success] + [e.value for e in at.error] + [c.value for c in at.caption]
    return "\n".join(str(p) for p in parts)


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def _tiny_run(app: AppTest) -> AppTest:
    app.switch_page(PAGE).run()
    app.select_slider(key="mm_sizes").set_value((16, 32))
    app.select_slider(key="mm_budget").set_value(0.25)
    app.multiselect(key="mm_threads").set_value([1])
    return app.button(key="mm_run").click().run()


def test_page_without_gpu_says_what_a_gpu_would_add(app, no_gpu):
    app.switch_page(PAGE).run()
    assert not app.exception
    text = _text(app)
    assert "No GPU here" in text and "crossover size" in text and "Runtime > Change runtime type > GPU" in text
    assert app.multiselect(key="mm_devices").value == ["cpu"]
    cores = os.cpu_count() or 1
    assert app.multiselect(key="mm_threads").value == ([1, cores] if cores > 1 else [1])  # compare thread counts
    assert app.select_slider(key="mm_sizes").value == (64, 2048)
    offered = [int(n) for n in app.select_slider(key="mm_sizes").options]
    assert offered[:8] == [16, 32, 64, 128, 256, 512, 1024, 2048]  # and on, doubling, while RAM allows
    assert all(b == 2 * a for a, b in zip(offered, offered[1:]))
    assert app.radio(key="mm_tf32").disabled and app.checkbox(key="mm_end_to_end").disabled
    assert not app.get("plotly_chart")  # nothing is timed before Run


def test_tiny_run_shows_charts_table_and_downloads(app, no_gpu):
    _tiny_run(app)
    assert not app.exception, app.exception
    assert not app.error
    results = app.session_state["mm_results"]
    assert [r.n for r in results] == [16, 32]
    assert len(app.get("plotly_chart")) == 3
    table = app.dataframe[0].value
    assert table["n"].tolist() == [16, 32] and (table["median ms"] > 0).all()
    assert len(app.get("download_button")) == 2
    assert app.session_state["mm_final"] is not None and "Stopped" not in _text(app)


def test_stop_keeps_the_measured_rows(app, no_gpu):
    _tiny_run(app)
    app.session_state["mm_final"] = None  # as if Stop had interrupted the sweep after these rows
    app.button(key="mm_stop").click().run()
    assert not app.exception
    assert "Stopped after 2 of 2 steps" in _text(app)
    assert app.dataframe[0].value["n"].tolist() == [16, 32] and len(app.get("plotly_chart")) == 3


def test_bad_choice_is_an_error_message_not_a_traceback(app, no_gpu):
    app.switch_page(PAGE).run()
    app.multiselect(key="mm_devices").set_value([])
    app.button(key="mm_run").click().run()
    assert not app.exception
    assert "choose at least one device" in app.error[0].value


def test_page_with_fake_gpu_offers_it_and_tf32(app, fake_cuda):
    app.switch_page(PAGE).run()
    assert not app.exception
    assert "cuda:0" in app.multiselect(key="mm_devices").value
    assert not app.radio(key="mm_tf32").disabled
    assert "No GPU here" not in _text(app)
    assert app.multiselect(key="mm_threads").value == [os.cpu_count() or 1]
    assert "bfloat16" in app.multiselect(key="mm_dtypes").options
