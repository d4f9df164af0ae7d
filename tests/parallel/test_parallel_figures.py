"""Figures of the 'why parallel' page, built from hand-made results: each section draws its own, beside it."""

from __future__ import annotations

import pytest

from core.parallel import chain, first_call, location, marbles as marbles_section, processes, registry, timing_bug
from core.parallel.chain import ChainConfig, ChainPoint, ChainResult
from core.parallel.figures import wide_span
from core.parallel.first_call import FirstCallPoint, FirstCallResult
from core.parallel.location import LocationResult
from core.parallel.marbles import MarblesPoint, MarblesResult
from core.parallel.timing_bug import SyncPoint, TimingBugResult
from core.platform.timing import Measurement
from tests.chart_checks import assert_legend_below, assert_log_axis


def m(median: float, first: float | None = None) -> Measurement:
    return Measurement((median,), 1, median if first is None else first)


def marbles(gpu: bool) -> MarblesResult:
    points = [MarblesPoint(n, "cpu", t, m(0.01 * n / t)) for n in (64, 1024) for t in (1, 2, 4)]
    if gpu:
        points += [MarblesPoint(n, "cuda:0", None, m(1e-4)) for n in (64, 1024)]
    return MarblesResult(tuple(points), (1, 2, 4), "cuda:0" if gpu else None)


def test_marbles_figure_draws_the_ideal_line_and_one_line_per_size():
    fig = marbles_section.marbles_figure(marbles(gpu=False))
    names = [t.name for t in fig.data]
    assert names == ["ideal: k workers, k× as fast", "n = 64", "n = 1024"]
    assert list(fig.data[0].y) == [1, 2, 4] and list(fig.data[1].y) == pytest.approx([1, 2, 4])
    assert fig.layout.yaxis.type == "linear"  # 1 to 4: a log axis would only blur it
    assert fig.layout.yaxis.range[0] == 0 and fig.layout.yaxis.range[1] > 4
    assert_legend_below(fig)


def test_marbles_figure_puts_the_gpu_after_the_threads():
    fig = marbles_section.marbles_figure(marbles(gpu=True))
    stars = [t for t in fig.data if t.name.endswith("on the GPU")]
    assert len(stars) == 2 and stars[0].x == ("GPU (cuda:0)",)
    assert stars[1].y[0] == pytest.approx(0.01 * 1024 / 1e-4)
    assert list(fig.layout.xaxis.categoryarray) == ["1 thread", "2 threads", "4 threads", "GPU (cuda:0)"]
    assert_log_axis(fig.layout.yaxis)  # the GPU is thousands of times faster
    assert list(fig.layout.yaxis.tickvals)[:2] == [1.0, 10.0]


def test_chain_figure_groups_the_two_shapes_per_device():
    points = (ChainPoint("cpu", "one op", m(0.005)), ChainPoint("cpu", "chain", m(0.008)),
              ChainPoint("cuda:0", "one op", m(5e-5)), ChainPoint("cuda:0", "chain", m(0.016)))
    fig = chain.chain_figure(ChainResult(ChainConfig(), points, "cuda:0"))
    assert [t.name for t in fig.data] == ["one big operation", "chain of 1000 tiny steps"]
    assert fig.data[1].x == ("CPU", "GPU (cuda:0)") and fig.data[1].y == pytest.approx((8, 16))  # ms
    assert_log_axis(fig.layout.yaxis, "ms")  # 50 µs to 16 ms
    assert list(fig.data[0].text) == ["5 ms", "50 µs"]  # each bar's own reading
    assert_legend_below(fig)
    assert all(t.cliponaxis is False for t in fig.data)  # text above the tallest bar is not cut


def test_chain_figure_of_a_partial_result_leaves_gaps():
    fig = chain.chain_figure(ChainResult(ChainConfig(), (ChainPoint("cpu", "one op", m(0.005)),), None))
    assert fig.data[1].y == (None,)


def test_timing_bug_figure():
    r = TimingBugResult((SyncPoint("cpu", 1024, m(0.02), m(0.02)), SyncPoint("cuda:0", 8192, m(2e-5), m(0.02))),
                        "cuda:0")
    fig = timing_bug.timing_bug_figure(r)
    assert [t.name for t in fig.data] == ["without synchronize (wrong on a GPU)", "with synchronize (the real time)"]
    assert fig.data[0].x == ("CPU, n = 1024", "GPU (cuda:0), n = 8192")
    assert fig.data[0].y == pytest.approx((20, 0.02))
    assert_log_axis(fig.layout.yaxis, "ms")
    lo, hi = fig.layout.yaxis.range
    assert hi > 1.3 + 0.1  # log10(20 ms) plus room for the bar's text


def test_first_call_figure_has_three_bars_per_size():
    p = FirstCallPoint("cpu", 64, Measurement((1e-5,), 100, 5e-4), Measurement((1e-5,), 100, 2e-5))
    fig = first_call.first_call_figure(FirstCallResult((p,), None))
    assert len(fig.data) == 3
    assert [t.y[0] for t in fig.data] == pytest.approx([500, 20, 10])  # all below 1 ms: in µs
    assert_log_axis(fig.layout.yaxis, "µs")
    assert fig.layout.yaxis.range[0] <= 1 - 0.5  # half a decade under the 10 µs bar: it still has a height
    assert_legend_below(fig)


@pytest.mark.parametrize("result, verdict, tensors", [
    (LocationResult(None), "would raise an error on a machine with a GPU", {"a_cpu"}),
    (LocationResult("cuda:0", "msg", "RuntimeError", "cuda:0"), "a_cpu @ a_gpu → RuntimeError", {"a_cpu", "a_gpu"}),
])
def test_location_figure(result, verdict, tensors):
    fig = location.location_figure(result)
    texts = [a.text for a in fig.layout.annotations]
    assert all(0 <= a.x <= 1 and 0 <= a.y <= 1 for a in fig.layout.annotations)  # axes fixed to [0, 1]
    assert fig.layout.showlegend is False
    assert any(verdict in t for t in texts)
    assert {t for t in texts if t in ("<b>a_cpu</b>", "<b>a_gpu</b>")} == {f"<b>{x}</b>" for x in tensors}


def test_the_y_axis_is_linear_for_a_narrow_span_and_log_for_a_wide_one():
    cpu_only = TimingBugResult((SyncPoint("cpu", 1024, m(0.0208), m(0.0209)),), None)
    linear = timing_bug.timing_bug_figure(cpu_only).layout.yaxis
    assert linear.type == "linear" and linear.range[0] == 0  # 20.8 vs 20.9 ms must look alike
    assert linear.title.text == "median time (ms)"
    with_gpu = TimingBugResult(cpu_only.points + (SyncPoint("cuda:0", 8192, m(2e-5), m(0.02)),), "cuda:0")
    assert timing_bug.timing_bug_figure(with_gpu).layout.yaxis.type == "log"
    assert not wide_span([None, 0.0, 1.0, 30.0]) and wide_span([1.0, 31.0])


def test_every_section_draws_with_the_builder_beside_it():
    """A section's figure lives in the section's own module: no chart module imports the sections back."""
    assert [s.figure for s in registry.SECTIONS] == [marbles_section.marbles_figure, processes.processes_figure,
                                                     chain.chain_figure, timing_bug.timing_bug_figure,
                                                     first_call.first_call_figure, location.location_figure]
