"""AppTest of the 'why parallel' page: every section run with tiny sizes, the GPU branch faked."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from dataclasses import replace

from core.errors import DashboardError
from core.parallel import machine, registry
from core.parallel.chain import ChainResult
from core.parallel.first_call import FirstCallResult
from core.parallel.location import LocationResult
from core.parallel.marbles import MarblesPoint, MarblesResult
from core.parallel.processes import ProcessesResult
from core.parallel.timing_bug import TimingBugResult
from core.platform.device_lock import JobCancelled
from core.platform.jobs import Progress, WaitCancelled, run_job
from core.platform.timing import Measurement
from tests.lock_helpers import hold_cpu_for

PAGE = "pages/why_parallel.py"
# in page order
RESULTS = (MarblesResult, ProcessesResult, ChainResult, TimingBugResult, FirstCallResult, LocationResult)
TINY = {"wp_small_n": 8, "wp_large_n": 16, "wp_budget_s": 0.1, "wp_processes": 2, "wp_steps": 5, "wp_rows": 2,
        "wp_width": 8, "wp_bug_cpu_n": 16, "wp_bug_gpu_n": 16}


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
    links = [link.proto.label for link in app.get("page_link")]
    elements = [*app.markdown, *app.subheader, *app.info, *app.caption, *app.code]
    return "\n".join([*(str(e.value) for e in elements), *links])


def _charts(app: AppTest) -> int:
    return len(app.get("plotly_chart"))


def with_run(monkeypatch, key: str, run) -> None:
    """Swap one section's runner in the registry the page walks."""
    sections = tuple(replace(s, run=run) if s.key == key else s for s in registry.SECTIONS)
    monkeypatch.setattr(registry, "SECTIONS", sections)


@pytest.mark.slow
def test_every_section_runs_with_tiny_sizes(app, no_gpu):
    _open_tiny(app)
    assert "No GPU here" in _text(app) and _charts(app) == 0
    assert [s.key for s in registry.SECTIONS] == ["marbles", "processes", "chain", "timing_bug", "first_call",
                                                  "location"]
    for done, (section, kind) in enumerate(zip(registry.SECTIONS, RESULTS), start=1):
        key = section.key  # each run adds its chart and keeps the earlier ones
        app.button(key=f"wp_run_{key}").click().run()
        assert not app.exception, key
        assert not app.error, [e.value for e in app.error]
        assert _charts(app) == done, f"{key} drew no chart"
        assert isinstance(app.session_state[f"wp_result_{key}"], kind)
        assert app.session_state[f"wp_partial_{key}"] is False
    marbles = app.session_state["wp_result_marbles"]
    assert marbles.sizes == (8, 16) and marbles.threads == machine.thread_ladder(machine.usable_cores())
    text = _text(app)
    assert "cpu: one operation" in text and "CPU, n = 16: without synchronize" in text
    assert "n = 8 on cpu: the first call in a fresh process took" in text
    assert "Nothing to mix: this machine has only the CPU." in text
    # results survive a rerun caused by any other widget
    app.button(key="wp_run_location").click().run()
    assert _charts(app) == len(registry.SECTIONS)


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
    def broken(config, hooks):
        raise DashboardError("the fresh Python process failed: try again")

    with_run(monkeypatch, "first_call", broken)
    _open_tiny(app)
    app.button(key="wp_run_first_call").click().run()
    assert not app.exception
    assert [e.value for e in app.error] == ["the fresh Python process failed: try again"]


def test_a_stopped_section_keeps_and_shows_its_finished_steps(app, no_gpu, monkeypatch):
    def stopped_half_way(config, hooks):
        point = MarblesPoint(8, "cpu", 1, Measurement((1e-5,), 100, 1e-4))
        with run_job(["cpu"], hooks, label="marbles") as job:
            job.report(Progress(1, 4, "n = 8, 1 thread", MarblesResult((point,), (1, 2), None)))
            raise JobCancelled("stopped by the user; the steps finished so far are kept")

    with_run(monkeypatch, "marbles", stopped_half_way)
    _open_tiny(app)
    app.button(key="wp_run_marbles").click().run()
    assert not app.exception
    assert "the steps finished so far are kept" in app.error[0].value
    assert "Stopped before the end" in _text(app) and _charts(app) == 1


def test_leaving_the_line_says_nothing_ran_and_keeps_the_last_result(app, no_gpu, monkeypatch):
    def left_the_line(config, hooks):
        raise WaitCancelled("cancelled while waiting for cpu")

    _open_tiny(app)
    app.button(key="wp_run_location").click().run()
    with_run(monkeypatch, "location", left_the_line)
    app.button(key="wp_run_location").click().run()
    assert not app.exception and not app.error
    assert "Left the line; nothing ran." in [i.value for i in app.info]
    assert isinstance(app.session_state["wp_result_location"], LocationResult) and _charts(app) == 1
    assert "Stopped before the end" not in _text(app)


def test_the_page_sits_after_hardware_check():
    app_py = (Path(__file__).resolve().parents[2] / "app.py").read_text()
    assert app_py.index('"pages/hardware.py"') < app_py.index('"pages/why_parallel.py"')


# ---------------------------------------------------------------- the classroom: line and cap (issue 5)


def test_a_section_waits_for_a_busy_cpu_and_says_so(app, no_gpu):
    _open_tiny(app)
    holder = hold_cpu_for(1.5)
    app.button(key="wp_run_chain").click().run()
    holder.join(10)
    assert not app.exception and not app.error
    assert any(c.value.startswith("Waited ") and c.value.endswith(" s for cpu.") for c in app.caption)
    assert isinstance(app.session_state["wp_result_chain"], ChainResult) and _charts(app) == 1


def test_the_untimed_section_needs_no_turn(app, no_gpu):
    from core.platform.device_lock import hold_devices

    _open_tiny(app)
    with hold_devices(["cpu"], label="a long sweep"):  # held by this thread: the page's thread would wait
        app.button(key="wp_run_location").click().run()
    assert not app.exception and not any(c.value.startswith("Waited ") for c in app.caption)
    assert isinstance(app.session_state["wp_result_location"], LocationResult)


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
