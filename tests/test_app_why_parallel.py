"""AppTest of the 'why parallel' page: every section run with tiny sizes, the GPU branch faked."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from core.parallel import demos
from core.platform.device_lock import JobCancelled
from core.errors import DashboardError
from core.platform.timing import Measurement
from tests.lock_helpers import hold_cpu_for

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
    def broken(config, *, hooks, devices=None):
        raise DashboardError("the fresh Python process failed: try again")

    monkeypatch.setattr(demos, "run_first_call", broken)
    _open_tiny(app)
    app.button(key="wp_run_first_call").click().run()
    assert not app.exception
    assert [e.value for e in app.error] == ["the fresh Python process failed: try again"]


def test_a_stopped_section_keeps_and_shows_its_finished_steps(app, no_gpu, monkeypatch):
    def stopped_half_way(config, *, hooks, devices=None):
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


# ---------------------------------------------------------------- the classroom: line and cap (issue 5)


def test_a_section_waits_for_a_busy_cpu_and_says_so(app, no_gpu):
    _open_tiny(app)
    holder = hold_cpu_for(1.5)
    app.button(key="wp_run_chain").click().run()
    holder.join(10)
    assert not app.exception and not app.error
    assert any(c.value.startswith("Waited ") and c.value.endswith(" s for cpu.") for c in app.caption)
    assert isinstance(app.session_state["wp_result_chain"], demos.ChainResult) and _charts(app) == 1


def test_the_untimed_section_needs_no_turn(app, no_gpu):
    from core.platform.device_lock import hold_devices

    _open_tiny(app)
    with hold_devices(["cpu"], label="a long sweep"):  # held by this thread: the page's thread would wait
        app.button(key="wp_run_location").click().run()
    assert not app.exception and not any(c.value.startswith("Waited ") for c in app.caption)
    assert isinstance(app.session_state["wp_result_location"], demos.LocationResult)


def test_the_per_job_cap_stops_a_section_and_keeps_its_steps(app, no_gpu, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_MAX_JOB_S", "0.3")
    _open_tiny(app)
    app.number_input(key="wp_budget_s").set_value(2.0)  # the section would take 2 s; the cap is 0.3 s
    app.button(key="wp_run_marbles").click().run()
    assert not app.exception
    assert "the limit per job" in app.error[0].value and "GPU_VS_CPU_MAX_JOB_S" in app.error[0].value
    result = app.session_state["wp_result_marbles"]
    assert 1 <= len(result.points) < 2 * len(result.threads), "stopped between steps, the first ones kept"
    assert "Stopped before the end" in _text(app) and _charts(app) == 1
