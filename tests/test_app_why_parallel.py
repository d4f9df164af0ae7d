"""AppTest of the 'why parallel' page: every section run with tiny sizes, the GPU branch faked."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from core import parallel_demos as demos
from core.device_lock import JobCancelled
from core.errors import DashboardError
from core.timing import Measurement

PAGE = "pages/why_parallel.py"
SECTIONS = {"marbles": demos.MarblesResult, "chain": demos.ChainResult, "timing_bug": demos.TimingBugResult,
            "first_call": demos.FirstCallResult, "location": demos.LocationResult}
TINY = {"wp_small_n": 8, "wp_large_n": 16, "wp_budget_s": 0.1, "wp_steps": 5, "wp_rows": 2, "wp_width": 8,
        "wp_bug_cpu_n": 16, "wp_bug_gpu_n": 16}


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def _open_tiny(app: AppTest) -> AppTest:
    app.switch_page(PAGE).run()
    assert not app.exception
    for key, value in TINY.items():
        app.number_input(key=key).set_value(value)
    return app.run()


def _text(app: AppTest) -> str:
    return "\n".join(str(e.value) for e in [*app.markdown, *app.subheader, *app.info, *app.caption, *app.code])


def _charts(app: AppTest) -> int:
    return len(app.get("plotly_chart"))


def test_every_section_runs_with_tiny_sizes(app, no_gpu):
    _open_tiny(app)
    assert "No GPU here" in _text(app) and _charts(app) == 0
    for done, key in enumerate(SECTIONS, start=1):  # each run adds its chart and keeps the earlier ones
        app.button(key=f"wp_run_{key}").click().run()
        assert not app.exception, key
        assert not app.error, [e.value for e in app.error]
        assert _charts(app) == done, f"{key} drew no chart"
        assert isinstance(app.session_state[f"wp_result_{key}"], SECTIONS[key])
        assert app.session_state[f"wp_partial_{key}"] is False
    marbles = app.session_state["wp_result_marbles"]
    assert marbles.sizes == (8, 16) and marbles.threads == demos.thread_ladder(demos.usable_cores())
    text = _text(app)
    assert "cpu: one operation" in text and "CPU, n = 16: without synchronize" in text
    assert "n = 8 on cpu: the first call in a fresh process took" in text
    assert "Nothing to mix: this machine has only the CPU." in text
    # results survive a rerun caused by any other widget
    app.button(key="wp_run_location").click().run()
    assert _charts(app) == len(SECTIONS)


def test_without_gpu_the_explanations_say_so(app, no_gpu):
    app.switch_page(PAGE).run()
    text = _text(app)
    assert "On a CPU there is nothing asynchronous" in text and "about 3 s" in text
    assert "there is no GPU here, so only the CPU is measured" in text
    assert "a_cpu = torch.randn" in text and "torch.cuda.synchronize()" in text  # the snippets


def test_with_a_gpu_the_explanations_name_it(app, fake_cuda):
    app.switch_page(PAGE).run()
    assert not app.exception
    text = _text(app)
    assert "No GPU here" not in text
    assert "The GPU (cuda:0) splits the bag" in text and "A GPU (cuda:0) works in the background" in text
    assert "with the GPU cuda:0" in text


def test_an_error_is_shown_not_raised(app, no_gpu, monkeypatch):
    def broken(config, *, hooks):
        raise DashboardError("the fresh Python process failed: try again")

    monkeypatch.setattr(demos, "run_first_call", broken)
    _open_tiny(app)
    app.button(key="wp_run_first_call").click().run()
    assert not app.exception
    assert [e.value for e in app.error] == ["the fresh Python process failed: try again"]


def test_a_stopped_section_keeps_and_shows_its_finished_steps(app, no_gpu, monkeypatch):
    def stopped_half_way(config, *, hooks):
        point = demos.MarblesPoint(8, "cpu", 1, Measurement((1e-5,), 100, 1e-4))
        partial = demos.MarblesResult((point,), (1, 2), None)
        hooks.report(demos.Progress(1, 4, "n = 8, 1 thread", partial))
        raise JobCancelled("stopped by the user; the steps finished so far are kept")

    monkeypatch.setattr(demos, "run_marbles", stopped_half_way)
    _open_tiny(app)
    app.button(key="wp_run_marbles").click().run()
    assert not app.exception
    assert "the steps finished so far are kept" in app.error[0].value
    assert "Stopped before the end" in _text(app) and _charts(app) == 1


def test_the_page_sits_after_hardware_check():
    app_py = (Path(__file__).resolve().parents[1] / "app.py").read_text()
    assert app_py.index('"pages/hardware.py"') < app_py.index('"pages/why_parallel.py"')
