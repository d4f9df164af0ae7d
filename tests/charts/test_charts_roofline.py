"""The Roofline model chart's crossover lines: labelled, inside the axis, and the caption says only what is drawn
(issue 22, item 4e)."""

from __future__ import annotations

import dataclasses
import math

from core.charts.roofline import model_caption, model_figure
from tests.roofline.test_roofline import _synthetic_run, measured_at


def _labels(fig) -> list[str]:
    return [a.text for a in fig.layout.annotations]


def test_each_crossover_inside_the_range_is_a_labelled_line_placed_in_log_coordinates():
    run = _synthetic_run()  # sizes 64-1024, crossovers predicted 49 (beyond) and measured 61 (beyond)
    run = dataclasses.replace(run, predicted_crossover_n=100,
                              measured_crossover=measured_at(run.challenger, run.baseline, 300))
    fig = model_figure(run)
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert sorted(s.x0 for s in lines) == [100, 300]
    labelled = {a.text: a.x for a in fig.layout.annotations}
    assert labelled["predicted n ≈ 100"] == math.log10(100) and labelled["measured n ≈ 300"] == math.log10(300)
    lo, hi = fig.layout.xaxis.range
    assert all(lo <= x <= hi for x in labelled.values())
    caption = model_caption(run, fig)
    assert "predicted crossover (dash-dot) and the measured crossover (dotted)" in caption
    assert "beyond the range" not in caption


def test_a_crossover_outside_the_range_gets_no_line_and_the_caption_says_so():
    run = _synthetic_run()
    run = dataclasses.replace(run, predicted_crossover_n=79_000_000,
                              measured_crossover=measured_at(run.challenger, run.baseline, 300))
    fig = model_figure(run)
    assert [s.x0 for s in fig.layout.shapes if s.type == "line"] == [300]
    assert not any("predicted" in t for t in _labels(fig))
    assert "The predicted crossover, n ≈ 79,000,000, lies beyond the range drawn" in model_caption(run, fig)


def test_the_caption_names_the_copies_lines_only_when_they_are_drawn():
    run = _synthetic_run()  # the GPU has copy rates: its model with copies is drawn, dashed
    fig = model_figure(run)
    assert any(t.name.endswith("model with copies") and t.line.dash == "dash" for t in fig.data)
    assert "dashed: plus the copies" in model_caption(run, fig)
    cpu_only = dataclasses.replace(run, devices_roofs=run.devices_roofs[:1],
                                   points=tuple(p for p in run.points if p.device == "cpu"))
    fig = model_figure(cpu_only)
    assert not any("copies" in (t.name or "") for t in fig.data)
    assert "copies" not in model_caption(cpu_only, fig)


def test_a_prediction_the_noise_allows_to_flip_is_a_band_not_a_line():
    """Issue 31: when the constants' spread allows a crossover and none, the chart marks no predicted n (one draw
    of the noise) and its caption says the model cannot say where."""
    run = _synthetic_run()
    run = dataclasses.replace(run, predicted_crossover_n=100, predicted_crossover_low=100,
                              predicted_crossover_high=None,
                              measured_crossover=measured_at(run.challenger, run.baseline, 300))
    assert run.prediction_flips
    fig = model_figure(run)
    assert [s.x0 for s in fig.layout.shapes if s.type == "line"] == [300]
    assert not any("predicted" in t for t in _labels(fig))
    assert any(s.type == "rect" for s in fig.layout.shapes)
    caption = model_caption(run, fig)
    assert "up to none at all: the model cannot say where" in caption and "n ≈ 100" not in caption
