"""The hardware check's GPU memory bar."""

import pytest

from core.charts.hardware import gpu_memory_bar
from core.platform.hardware import GpuInfo
from core.platform.units import GIB
from tests.chart_checks import assert_legend_below


def test_gpu_memory_bar_shows_used_and_free_on_one_gib_axis():
    gpu = GpuInfo(0, "NVIDIA H200", 16 * GIB, 13 * GIB, "9.0", 132)
    fig = gpu_memory_bar(gpu)
    assert [t.name for t in fig.data] == ["used 3 GiB", "free 13 GiB"]
    assert fig.layout.barmode == "stack" and fig.layout.xaxis.title.text == "GiB"
    assert fig.layout.xaxis.range == pytest.approx((0, 16))  # the whole card, nothing past it
    assert_legend_below(fig)
