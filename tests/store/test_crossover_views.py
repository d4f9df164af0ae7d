"""One saved sweep, three views: the Matmul race page, Results and the Class board name the same crossover
and the same call (issue 22, item 4), because all three read `MatmulSweep.headline_crossover`."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
import torch

from core.results.crossover import sentence
from core.results.matmul import MatmulSweep

pytestmark = pytest.mark.slow  # three pages in AppTest after a race: ~6 s each


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def _fake_race(monkeypatch, others_cores: float) -> None:
    """1 thread n^3 ns, 2 threads 0.4 ms + n^3/2 ns: 2 threads win from n ~ 93 (between 64 and 128)."""
    from core.matmul import sweep
    from tests.matmul.test_sweep import fake_result, per_series

    def one(series, n, options):
        seconds = n**3 / 1e9 if series.threads == 1 else 4e-4 + n**3 / 2e9
        return dataclasses.replace(fake_result(series, n, seconds), others_cores=others_cores)

    monkeypatch.setattr(sweep, "time_interleaved", per_series(one))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


def _views(app) -> tuple[MatmulSweep, list[tuple[str, str]], str, str, str, list[float]]:
    """Race the page, then read what each view says: the race page's boxes and chart marks, Results'
    `result` cell, the Class board's newest line and table cell, and its measured crossovers."""
    app.switch_page("pages/matmul_race.py").run()
    app.select_slider(key="mm_sizes").set_value((32, 512))
    app.multiselect(key="mm_threads").set_value([1, 2])
    app.text_input(key="mm_label").input("Ana")
    app.button(key="mm_run").click().run()
    assert not app.exception
    sweep = app.session_state["mm_sweep"].result()
    boxes = [(kind, b.value) for kind, shown in (("green", app.success), ("amber", app.warning), ("blue", app.info))
             for b in shown if str(b.value).startswith("**")]
    speedup = next(c for c in app.get("plotly_chart") if "Speed-up" in c.proto.spec)
    marks = " ".join(a.get("text", "") for a in json.loads(speedup.proto.spec)["layout"].get("annotations", [])
                     if "crossover" in a.get("text", ""))

    app.switch_page("pages/results.py").run()
    assert not app.exception
    results_cell = app.dataframe[0].value["result"].tolist()
    assert len(results_cell) == 1

    app.switch_page("pages/class_board.py").run()
    assert not app.exception
    board_cell = app.dataframe[-1].value["result"].tolist()
    newest = next(m.value for m in app.markdown if m.value.startswith("**Newest:**"))
    chart = next((c for c in app.get("plotly_chart") if "Matmul crossover" in c.proto.spec), None)
    measured = [] if chart is None else _measured_x(chart.proto.spec)
    return sweep, boxes, marks + " " + results_cell[0], board_cell[0], newest, measured


def _measured_x(spec: str) -> list[float]:
    fig = json.loads(spec)
    trace = next(t for t in fig["data"] if str(t.get("name", "")).startswith("measured ("))
    return [float(x) for x in trace.get("x") or []]


def test_a_found_crossover_is_the_same_size_and_call_on_all_three_pages(app, no_gpu, monkeypatch):
    _fake_race(monkeypatch, others_cores=0.0)
    sweep, boxes, race_and_results, board_cell, newest, measured = _views(app)
    headline = sweep.headline_crossover
    assert headline is not None and headline.call == "found" and 64 < headline.n <= 128
    n = f"{headline.n:,}"
    assert boxes[0] == ("green", f"**Comparison:** {sentence(sweep.shown_crossovers[0], sweep.verdicts)}")
    assert "between n = 64 and n = 128" in boxes[0][1]
    assert f"crossover ≈ {n}" in race_and_results, "the race page's speed-up chart marks it"
    assert race_and_results.endswith(f"cpu float32 2 threads wins from n≈{n}"), "Results lists it"
    assert board_cell.endswith(f"wins from n≈{n}") and newest.endswith(f"wins from n≈{n}"), "the Class board too"
    assert measured == [float(headline.n)], "and draws it as the class's measured crossover"


def test_a_busy_race_says_cannot_tell_on_all_three_pages(app, no_gpu, monkeypatch):
    _fake_race(monkeypatch, others_cores=1.0)
    sweep, boxes, race_and_results, board_cell, newest, measured = _views(app)
    headline = sweep.headline_crossover
    assert headline is not None and headline.call == "unclear" and headline.n is None
    assert boxes[0][0] == "amber" and "cannot tell" in boxes[0][1] and "crossover ≈" not in race_and_results
    assert race_and_results.endswith("cannot tell (machine busy or too noisy)")
    assert "cannot tell" in board_cell and "cannot tell" in newest
    assert measured == [] and "wins from" not in board_cell
