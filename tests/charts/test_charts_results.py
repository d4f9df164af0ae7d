"""Figures of the Results page, built from saved runs."""

from __future__ import annotations

import pytest

from core.charts.results import matmul_overlay, train_overlay
from core.store.frames import kind_frame
from core.store.database import open_store
from tests.chart_checks import assert_annotations_inside, assert_legend_below, assert_log_axis, assert_points_inside
from tests.result_samples import LAB, LAPTOP, matmul_payload, train_payload, save_payload


@pytest.fixture
def runs():
    store = open_store()
    save_payload(store, "matmul", matmul_payload(LAPTOP, sizes=(256, 512)))
    save_payload(store, "matmul", matmul_payload(LAB, sizes=(256, 512, 1024)))
    save_payload(store, "train", train_payload("cpu", epochs=2, seconds=5.0), machine=LAPTOP)
    save_payload(store, "train", train_payload("cuda:0", epochs=2, seconds=0.2), machine=LAB)
    return store.list_runs()


def test_matmul_overlay_draws_each_series_and_the_lecture(runs):
    fig = matmul_overlay(kind_frame("matmul", runs))
    traces = {t.name: t for t in fig.data}
    assert len(traces) == 3 + 1
    gpu = traces["#2 cuda:0 (NVIDIA H200) float32"]
    cpu = traces["#1 cpu (Student Laptop CPU i5) float32"]
    assert list(gpu.x) == [256, 512, 1024] and gpu.line.dash == "solid" and cpu.line.dash == "dash"
    assert gpu.y[0] == pytest.approx(3.0 * (256 / 10_000) ** 3 * 1e3)  # in the axis's ms
    assert list(gpu.error_y.array) == pytest.approx([y * 0.05 / 2 for y in gpu.y])
    lecture = traces["lecture (n = 10,000)"]
    assert list(lecture.y) == [23_000.0, 3_000.0]
    assert list(lecture.text) == ["lecture: CPU ≈ 23,000 ms (23 s)", "lecture: Colab GPU ≈ 3,000 ms (3 s)"]
    assert [a.text for a in fig.layout.annotations] == list(lecture.text)  # drawn beside the stars too
    assert_annotations_inside(fig)
    assert_log_axis(fig.layout.xaxis)
    assert_log_axis(fig.layout.yaxis, "ms")
    assert fig.layout.yaxis.title.text == "time per product (ms)"
    assert_legend_below(fig)
    assert_points_inside(fig)


def test_matmul_overlay_in_gflops_without_reference(runs):
    fig = matmul_overlay(kind_frame("matmul", runs), "gflops", reference=False)
    assert len(fig.data) == 3 and fig.layout.yaxis.title.text == "GFLOP/s"
    with_ref = matmul_overlay(kind_frame("matmul", runs), "gflops")
    assert list(with_ref.data[-1].y) == pytest.approx([2e12 / 23 / 1e9, 2e12 / 3 / 1e9])
    assert list(with_ref.data[-1].text) == ["lecture: CPU ≈ 87 GFLOP/s", "lecture: Colab GPU ≈ 667 GFLOP/s"]
    assert_log_axis(with_ref.layout.yaxis)
    assert [a.text for a in with_ref.layout.annotations] == list(with_ref.data[-1].text)  # GFLOP/s, not seconds
    assert_annotations_inside(with_ref)
    assert_legend_below(with_ref)
    assert_points_inside(with_ref)


def test_matmul_overlay_error_bars_stop_above_the_axis_floor():
    import pandas as pd
    frame = pd.DataFrame({"series": ["a", "a"], "n": [256, 512], "device": ["cpu", "cpu"], "median_s": [1e-4, 8e-4],
                          "iqr_s": [3e-4, 1e-4], "gflops": [1.0, 1.0], "machine": ["m", "m"], "samples": [5, 5]})
    fig = matmul_overlay(frame, reference=False)
    assert_log_axis(fig.layout.yaxis, "µs")  # all below a millisecond
    assert fig.data[0].error_y.arrayminus[0] == pytest.approx(100 * 0.9)  # not 150 µs below 100 µs
    assert_points_inside(fig)


def test_train_overlay_by_epoch_and_by_time(runs):
    frame = kind_frame("train", runs)
    by_epoch = train_overlay(frame)
    assert len(by_epoch.data) == 2 and all(list(t.x) == [1, 2] for t in by_epoch.data)
    by_time = train_overlay(frame, "train_loss", "elapsed_s")
    xs = {t.name: list(t.x) for t in by_time.data}
    assert xs["#4 cuda:0 (NVIDIA H200) mini-batch"] == pytest.approx([0.2, 0.4])
    assert xs["#3 cpu (Student Laptop CPU i5) mini-batch"] == pytest.approx([5.0, 10.0])
    assert by_time.layout.xaxis.title.text == "seconds of training"
    assert_legend_below(by_time)
    assert by_time.layout.xaxis.range[0] == 0 and by_time.layout.xaxis.range[1] >= 10.0
    assert by_epoch.layout.yaxis.tickformat == ".0%"


def test_empty_frames_give_empty_figures():
    assert len(matmul_overlay(kind_frame("matmul", []), reference=False).data) == 0
    assert len(train_overlay(kind_frame("train", [])).data) == 0
