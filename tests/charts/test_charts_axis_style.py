"""The shared axis style: decade ticks, one time unit, clipped error bars, inside placement."""

from __future__ import annotations

import math

import plotly.graph_objects as go
import pytest

from core.charts import axis_style as ax


@pytest.mark.parametrize("seconds, unit", [
    ([2e-5, 8e-4], "µs"),          # all below a millisecond
    ([1e-5, 0.08], "ms"),          # a sweep: its small end reads 0.01 ms, not a mix of units
    ([1e-6, 23.0], "ms"),          # with the lecture's 23 s
    ([1.5, 23.0], "s"),
    ([], "ms"),
    ([None, float("nan"), 0.0], "ms"),
])
def test_time_unit_by_range(seconds, unit):
    assert ax.time_unit(seconds).name == unit


def test_time_unit_scales_and_labels():
    ms = ax.time_unit([1e-3, 0.5])
    assert ms.scale([0.002, None]) == [pytest.approx(2.0), None]
    assert ms.label(23.0) == "23,000 ms (23 s)" and ax.SECONDS.label(3.0) == "3 s"


@pytest.mark.parametrize("value, text", [
    (1, "1"), (10, "10"), (1000, "1,000"), (10_000, "10,000"), (0.1, "0.1"), (0.01, "0.01"), (0.001, "0.001"),
    (1e-4, "1e-4"), (1e-6, "1e-6"), (0.2, "0.2"), (0.5, "0.5"), (20, "20"),
])
def test_tick_labels_are_whole_values(value, text):
    assert ax.tick_label(value) == text


def test_log_axis_has_decade_ticks_only_with_their_labels():
    axis = ax.log_axis([0.02, 3.0, 450.0], "t (ms)")
    assert axis["type"] == "log" and axis["tickmode"] == "array"
    assert axis["tickvals"] == [0.1, 1.0, 10.0, 100.0]
    assert axis["ticktext"] == ["0.1", "1", "10", "100"]
    lo, hi = axis["range"]
    assert lo < math.log10(0.02) and hi > math.log10(450.0)  # every point inside, with room
    assert axis["minor"] == dict(dtick="D1", showgrid=True, gridcolor=ax.MINOR_GRID, ticks="")  # faint, unlabelled
    assert axis["title"]["text"] == "t (ms)"


def test_a_log_axis_within_one_decade_gets_1_2_5_ticks_with_whole_values():
    axis = ax.log_axis([0.15, 0.9], "speed-up (×)")
    assert axis["tickvals"] == pytest.approx([0.2, 0.5, 1.0])
    assert axis["ticktext"] == ["0.2", "0.5", "1"]


def test_a_log_axis_over_less_than_an_octave_gets_every_whole_step():
    axis = ax.log_axis([16, 32], "n")  # no decade, and only 20 of 1-2-5
    assert axis["tickvals"] == pytest.approx([20.0, 30.0, 40.0])


def test_lower_arms_never_reach_zero_on_a_log_axis():
    arms = ax.clipped_lower_arms([1.0, 2.0, None, 5.0], [0.5, 3.0, 1.0, None])
    assert arms == pytest.approx([0.5, 1.8, 0.0, 0.0])  # 2 - 1.8 = 0.2: a tenth of the value


def test_trace_values_include_error_bar_ends():
    fig = go.Figure(go.Scatter(x=[1, 2], y=[10.0, 20.0], error_y=dict(array=[1.0, 2.0], arrayminus=[5.0, 1.0])))
    assert sorted(ax.trace_values(fig)) == [5.0, 10.0, 11.0, 19.0, 20.0, 22.0]


def test_inside_anchor_grows_text_toward_the_middle():
    assert ax.inside_anchor(1.2, (1.0, 4.0)) == "left" and ax.inside_anchor(3.9, (1.0, 4.0)) == "right"


def test_style_puts_the_legend_under_the_plot():
    """Beside the plot, a legend of long series names took most of the width (issue 34); under it, it
    takes a band of the figure's height that Plotly reserves below the x axis's title."""
    fig = ax.style(go.Figure(), title="t", height=300)
    legend = fig.layout.legend
    assert legend.orientation == "h" and legend.yref == "container" and legend.y == 0 and legend.yanchor == "bottom"
    assert fig.layout.showlegend is True and fig.layout.title.text == "t"


def test_ticks_are_large_enough_for_a_projector():
    axis = ax.log_axis([1.0, 100.0], "t (ms)")
    assert axis["tickfont"]["size"] >= 16 and ax.linear_axis([1.0], "x")["tickfont"]["size"] >= 16
    fig = ax.style(go.Figure(go.Scatter(x=[1], y=[2])), title=None, height=300)
    assert fig.layout.legend.font.size >= 16  # and every axis's own fonts, which Streamlit's theme would shrink
    assert fig.layout.xaxis.tickfont.size >= 16 and fig.layout.yaxis.title.font.size >= 16


def test_the_legend_band_adds_to_the_height_instead_of_squeezing_the_plot():
    """Six long entries under a roofline took 200 of its 520 px (issue 34): the band now adds to the height."""
    def figure(entries: int) -> go.Figure:
        fig = go.Figure([go.Scatter(x=[1], y=[1], name=f"cpu float32 {k} threads theoretical peak")
                         for k in range(entries)])
        return ax.style(fig, title=None, height=400)

    assert figure(0).layout.height == 400
    assert 400 < figure(1).layout.height < figure(6).layout.height
    assert ax.style(go.Figure(go.Scatter(name="x")), title=None, height=300, legend=False).layout.height == 300
