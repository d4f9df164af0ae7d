"""The Matmul race figures, built from a synthetic sweep."""

import pytest

from core.matmul import report, sweep
from core.charts.matmul import gflops_figure, speedup_figure, speedup_table, time_figure
from core.lecture import LECTURE_N
from tests.chart_checks import assert_annotations_inside, assert_legend_below, assert_log_axis, assert_points_inside
from core.matmul.engine import measured_point
from core.matmul.series import Series
from core.matmul.config import MatmulOptions, SweepConfig
from core.matmul.sweep import run_sweep
from core.platform.timing import Measurement
from tests.matmul.test_sweep import per_series


@pytest.fixture
def result(monkeypatch, fake_cuda):
    """CPU n^3 ns, GPU 1 ms flat (equal at n = 100); the GPU's unsynced figure 1 us."""

    def time_matmul(series, n, options):
        t = 1e-3 if series.is_gpu else n**3 / 1e9
        m = Measurement((t * 0.9, t, t * 1.2), 1, t * 10)
        unsynced = Measurement((1e-6,), 1, 0.0, synchronized=False) if series.is_gpu else None
        copy = Measurement((2e-4,), 1, 0.0) if series.is_gpu else None
        return measured_point(series, n, m, unsynced, copy, copy, 1e-7, series.threads, series.tf32)

    monkeypatch.setattr(sweep, "time_interleaved", per_series(time_matmul))
    config = SweepConfig(sizes=(32, 64, 128, 256), devices=("cpu", "cuda"), threads=(1,),
                         options=MatmulOptions(end_to_end=True))
    return run_sweep(config)


def _names(fig):
    return [t.name for t in fig.data]


def test_time_figure_has_truth_bug_copies_and_lecture_points(result):
    fig = time_figure(report.results_frame(result.results))
    names = _names(fig)
    assert "cpu float32 1 thread" in names and "cuda:0 float32 TF32 off" in names
    assert "cuda:0 float32 TF32 off, not synchronized (wrong)" in names
    assert "cuda:0 float32 TF32 off, with copies" in names
    assert "cpu float32 1 thread, not synchronized (wrong)" not in names  # nothing asynchronous on a CPU
    lecture = [t for t in fig.data if t.name.startswith("lecture")]
    assert [(t.x[0], t.y[0]) for t in lecture] == [(LECTURE_N, 23_000.0), (LECTURE_N, 3_000.0)]  # in ms
    assert [t.name for t in lecture] == ["lecture CPU ≈ 23,000 ms (23 s)", "lecture Colab GPU ≈ 3,000 ms (3 s)"]
    cpu = next(t for t in fig.data if t.name == "cpu float32 1 thread")
    assert list(cpu.x) == [32, 64, 128, 256] and cpu.error_y.array is not None  # spread shown
    assert cpu.y[0] == pytest.approx(32**3 / 1e9 * 1e3)  # seconds scaled to the axis's ms


def test_time_figure_axes(result):
    fig = time_figure(report.results_frame(result.results))
    assert_log_axis(fig.layout.xaxis)
    assert_log_axis(fig.layout.yaxis, "ms")
    assert list(fig.layout.xaxis.tickvals) == [100.0, 1000.0, 10_000.0]  # 32 .. 10,000: decades only
    assert_legend_below(fig)
    assert_points_inside(fig)
    texts = {a.text: a for a in fig.layout.annotations}  # the lecture's labels, in the plot, on a white backing
    assert set(texts) == {"lecture CPU ≈ 23,000 ms (23 s)", "lecture Colab GPU ≈ 3,000 ms (3 s)"}
    assert all(a.xanchor == "right" and a.bgcolor for a in texts.values())
    assert_annotations_inside(fig)


def test_time_figure_without_lecture_reads_in_microseconds_when_all_is_fast(monkeypatch, fake_cuda):
    def time_matmul(series, n, options):
        t = n / 1e7  # 3.2 .. 25.6 µs
        return measured_point(series, n, Measurement((t * 0.01, t * 0.01, t, t, t * 1.2), 1, t), None, None, None,
                              1e-7, series.threads, series.tf32)

    monkeypatch.setattr(sweep, "time_interleaved", per_series(time_matmul))
    measured = run_sweep(SweepConfig(sizes=(32, 64, 128, 256), devices=("cpu",), threads=(1,)))
    frame = report.results_frame(measured.results)
    fig = time_figure(frame, lecture=False)
    assert_log_axis(fig.layout.yaxis, "µs")
    assert fig.data[0].y[0] == pytest.approx(3.2)
    assert_points_inside(fig)  # the lower arm (q1 = 1% of the median) clipped above the axis floor
    assert fig.data[0].error_y.arrayminus[0] == pytest.approx(3.2 * 0.9)


def test_gflops_figure(result):
    fig = gflops_figure(report.results_frame(result.results))
    cpu = next(t for t in fig.data if t.name == "cpu float32 1 thread")
    assert cpu.y[0] == pytest.approx(2.0)  # 2n^3 / n^3 ns = 2 GFLOP/s
    assert any("lecture CPU ≈ 87 GFLOP/s" == t.name for t in fig.data)
    assert_log_axis(fig.layout.xaxis)
    assert_log_axis(fig.layout.yaxis)
    assert fig.layout.yaxis.title.text == "GFLOP/s"
    assert_legend_below(fig)
    assert_points_inside(fig)
    assert {a.text for a in fig.layout.annotations} == {"lecture CPU ≈ 87 GFLOP/s", "lecture Colab GPU ≈ 667 GFLOP/s"}
    assert_annotations_inside(fig)


def test_speedup_figure_marks_the_crossover(result):
    crossovers = result.crossovers
    fig = speedup_figure(report.results_frame(result.results), crossovers)
    names = _names(fig)
    assert "cuda:0 float32 TF32 off vs cpu float32 1 thread" in names
    assert "cuda:0 float32 TF32 off vs cpu float32 1 thread (with copies)" in names
    assert "crossover n ≈ 100" in names
    assert any(t.name.startswith("lecture ≈ 7.7×") for t in fig.data)
    labels = {a.text: a for a in fig.layout.annotations}
    assert set(labels) == {"break-even", "crossover ≈ 100", "crossover ≈ 112",  # the second: with copies
                           "lecture ≈ 7.7× (23 s vs 3 s)"}
    assert labels["lecture ≈ 7.7× (23 s vs 3 s)"].xanchor == "right"  # n = 10,000 is the right edge: text leftward
    assert labels["break-even"].y == 0 and labels["break-even"].yanchor == "bottom"  # log10(1): on its line
    assert labels["crossover ≈ 100"].x == pytest.approx(2.0)
    assert labels["crossover ≈ 100"].xanchor == "left"  # left half of 32 .. 10,000: the text grows rightward
    assert_log_axis(fig.layout.xaxis)
    assert_log_axis(fig.layout.yaxis)
    assert_legend_below(fig)
    assert_annotations_inside(fig)
    assert_points_inside(fig)
    table = speedup_table(report.results_frame(result.results), "cuda:0 float32 TF32 off", "cpu float32 1 thread")
    assert table["speedup"].tolist() == pytest.approx([32**3 / 1e6, 64**3 / 1e6, 128**3 / 1e6, 256**3 / 1e6])


def test_empty_results_give_placeholder_figures():
    empty = report.results_frame([])
    for fig in (time_figure(empty), gflops_figure(empty), speedup_figure(empty, [])):
        assert fig.layout.annotations[0].text == "no results yet"


def test_cpu_only_speedup_has_no_lecture_gpu_point(monkeypatch):
    series = [Series("cpu", "float32", threads=1), Series("cpu", "float32", threads=2)]
    rows = []
    for s in series:
        for n in (64, 128):
            t = n**3 / 1e9 / s.threads
            rows.append(measured_point(s, n, Measurement((t,), 1, t), None, None, None, None, s.threads, None))
    result = report.sweep_of(SweepConfig(sizes=(64, 128)), series, rows, machine={})
    fig = speedup_figure(report.results_frame(result.results), result.crossovers)
    assert "cpu float32 2 threads vs cpu float32 1 thread" in _names(fig)
    assert not any(t.name.startswith("lecture") for t in fig.data)
    assert_legend_below(fig)  # shown with no crossover too: the line needs its name
    assert "break-even (1×)" in _names(fig)
    lo, hi = fig.layout.yaxis.range
    assert lo < 0 < hi  # 1× on the axis even where every speed-up is above it
    assert_annotations_inside(fig)


def test_a_crossover_near_the_right_edge_grows_its_label_leftward(result):
    fig = speedup_figure(report.results_frame(result.results), result.crossovers, lecture=False)  # sizes 32 .. 256 only
    label = next(a for a in fig.layout.annotations if a.text == "crossover ≈ 112")
    assert label.xanchor == "right" and label.xshift < 0  # cut off at the right edge before
    assert_annotations_inside(fig)
