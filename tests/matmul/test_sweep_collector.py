"""SweepCollector: the steps a sweep reported, kept where an interrupted page can still draw them."""

from __future__ import annotations

import pytest

from core.errors import DashboardError
from core.matmul import sweep
from core.matmul.collector import SweepCollector
from core.matmul.config import MatmulOptions, SweepConfig
from core.matmul.sweep import run_sweep
from core.platform.jobs import JobHooks
from tests.matmul.test_sweep import fake_result, per_series

CONFIG = SweepConfig(sizes=(16, 32, 64), threads=(1,), options=MatmulOptions(budget_s=0.05))


@pytest.fixture
def fake_timer(monkeypatch):
    monkeypatch.setattr(sweep, "time_interleaved",
                        per_series(lambda series, n, options: fake_result(series, n, n**3 / 1e9)))


def test_a_finished_sweep_is_what_run_sweep_returned(fake_timer):
    collector = SweepCollector.start(CONFIG)
    final = collector.finish(run_sweep(CONFIG, JobHooks(on_progress=collector.add)))
    assert collector.result() is final and collector.stop_summary() is None
    assert [r.n for r in collector.results] == [16, 32, 64] and collector.steps_done == collector.steps_total == 3
    assert collector.can_save and collector.save_note() == "Not saved to the Results page: the save did not go through."
    collector.saved_run = 7
    assert not collector.can_save and collector.save_note().startswith("Saved as run #7")


def test_an_interrupted_sweep_is_rebuilt_from_its_steps_and_marked_stopped(fake_timer):
    collector = SweepCollector.start(CONFIG)

    class Interrupted(Exception):
        pass

    def stop_after_two(progress):  # Streamlit's Stop raises inside a hook, like this
        collector.add(progress)
        if len(collector.results) == 2:
            raise Interrupted

    with pytest.raises(Interrupted):
        run_sweep(CONFIG, JobHooks(on_progress=stop_after_two))
    shown = collector.result()
    assert shown.stopped and [r.n for r in shown.results] == [16, 32]
    assert shown.series == [s.label for s in collector.series]
    assert collector.stop_summary() == "Stopped after 2 of 3 steps; what was measured is kept below."
    assert collector.save_note() == "Not saved to the Results page: an incomplete sweep is saved only on request."


def test_a_capped_sweep_says_why_it_stopped(fake_timer, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_MAX_JOB_S", "1e-9")
    collector = SweepCollector.start(CONFIG)
    collector.finish(run_sweep(CONFIG, JobHooks(on_progress=collector.add)))
    assert not collector.has_steps and "the limit per job" in collector.stop_summary()
    assert collector.save_note() == "Nothing was measured, so nothing was saved to the Results page."


def test_a_bad_choice_is_refused_when_the_collector_starts():
    with pytest.raises(DashboardError, match="unknown device"):
        SweepCollector.start(SweepConfig(sizes=(16,), devices=("gpu",)))
