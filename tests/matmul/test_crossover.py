"""The crossover on synthetic timings: none, at the first size, interpolated, noisy."""

import math
from types import SimpleNamespace

import pytest

from core.matmul.crossover import BELOW_RANGE, INTERPOLATED, NO_DATA, NONE_IN_RANGE, crossover_of, find_crossover
from core.results.crossover import sentence

SIZES = [128, 256, 512, 1024, 2048]


def _times(speedups, base=1.0):
    """GPU times giving the wanted speed-ups against a CPU that takes `base` everywhere."""
    return [base / s for s in speedups], [base] * len(speedups)


def _said(gpu, cpu):
    """The sentence of the record made from these medians (no verdicts: the medians' rule)."""
    points = [SimpleNamespace(label=label, n=n, median_s=t) for label, times in (("gpu", gpu), ("cpu", cpu))
              for n, t in zip(SIZES, times)]
    return sentence(crossover_of(points, "gpu", "cpu"))


def test_none_when_the_gpu_never_wins():
    gpu, cpu = _times([0.1, 0.2, 0.5, 0.8, 0.9])
    c = find_crossover(SIZES, gpu, cpu)
    assert c.status == NONE_IN_RANGE and c.n is None and c.n_int is None
    assert "no crossover in this range" in _said(gpu, cpu)


def test_none_when_the_gpu_falls_behind_again_at_the_top():
    gpu, cpu = _times([0.5, 2.0, 3.0, 4.0, 0.9])
    assert find_crossover(SIZES, gpu, cpu).status == NONE_IN_RANGE


def test_at_the_first_size_when_the_gpu_always_wins():
    gpu, cpu = _times([1.5, 2, 4, 8, 16])
    c = find_crossover(SIZES, gpu, cpu)
    assert c.status == BELOW_RANGE and c.n_int == 128 and c.upper_n == 128
    assert "at or below n = 128" in _said(gpu, cpu)


def test_interpolated_on_a_log_log_scale():
    gpu, cpu = _times([0.25, 0.5, 0.5, 2.0, 4.0])  # from 0.5x at 512 to 2x at 1024: halfway in log
    c = find_crossover(SIZES, gpu, cpu)
    assert c.status == INTERPOLATED and (c.lower_n, c.upper_n) == (512, 1024)
    assert c.n == pytest.approx(math.sqrt(512 * 1024))
    assert "n ≈ 724 on (between the measured sizes 512 and 1,024)" in _said(gpu, cpu)


def test_noisy_early_win_does_not_count():
    gpu, cpu = _times([0.5, 1.2, 0.9, 1.5, 3.0])  # wins at 256 by luck, loses at 512, wins from 1024
    c = find_crossover(SIZES, gpu, cpu)
    assert (c.lower_n, c.upper_n) == (512, 1024) and 512 < c.n < 1024


def test_a_tie_is_not_a_win_and_puts_the_crossover_on_it():
    gpu, cpu = _times([0.5, 1.0, 2.0, 4.0, 8.0])
    c = find_crossover(SIZES, gpu, cpu)
    assert c.n == pytest.approx(256)


def test_order_of_the_input_does_not_matter():
    gpu, cpu = _times([0.25, 0.5, 0.5, 2.0, 4.0])
    shuffled = [4, 0, 3, 1, 2]
    c = find_crossover([SIZES[i] for i in shuffled], [gpu[i] for i in shuffled], [cpu[i] for i in shuffled])
    assert c.n == pytest.approx(math.sqrt(512 * 1024))


def test_no_data_and_bad_lengths():
    assert find_crossover([], [], []).status == NO_DATA
    with pytest.raises(ValueError):
        find_crossover([1, 2], [1.0], [1.0, 2.0])


def test_from_points_uses_common_sizes_only():
    rows = [("gpu", n, t) for n, t in [(128, 2.0), (256, 1.5), (512, 0.5), (1024, 0.1)]]
    rows += [("cpu", n, t) for n, t in [(128, 1.0), (512, 1.0), (1024, 1.0), (4096, 9.0)]]
    points = [SimpleNamespace(label=label, n=n, median_s=t) for label, n, t in rows]
    c = crossover_of(points, "gpu", "cpu")
    assert (c.call, c.n_low, c.n_high) == ("found", 128, 512)  # 256 has no CPU time, 4096 no GPU time
    assert crossover_of(points, "gpu", "tpu").call == "unclear"
