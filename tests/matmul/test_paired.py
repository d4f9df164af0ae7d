"""Interleaved timing: the series of a size alternate (A, B, B, A, ...), each gets the same number of samples."""

from __future__ import annotations

import pytest

from core.matmul import paired
from core.matmul.config import MatmulOptions
from core.matmul.series import Series
from core.matmul.paired import MIN_ROUNDS, interleave
from core.platform.timing import MIN_BLOCK_S


def fake_blocks(per_call_s: dict[str, float], log: list[tuple[str, int]]):
    """Blocks that take `per_call_s` per call on a fake clock, and log (name, calls) in order."""
    def block(name):
        def timed(calls):
            log.append((name, calls))
            return per_call_s[name] * calls
        return timed
    return [block(name) for name in per_call_s]


def test_rounds_alternate_the_order_and_give_equal_samples():
    log = []
    a, b = interleave(fake_blocks({"A": 0.02, "B": 0.05}, log), budget_s=1.0)
    assert log[:4] == [("A", 1), ("B", 1), ("A", 1), ("B", 1)]  # cold calls, then warm probes (samples here)
    rounds = [name for name, _ in log[4:]]
    assert rounds[:6] == ["B", "A", "A", "B", "B", "A"]  # ABBA: a steady drift costs both alike
    assert a.samples == b.samples >= MIN_ROUNDS
    assert a.first_call_s == 0.02 and set(a.times_s) == {0.02} and set(b.times_s) == {0.05}
    assert sum({"A": 0.02, "B": 0.05}[name] * calls for name, calls in log) <= 1.0 + 1e-9  # within the budget


def test_fast_products_are_timed_in_blocks_of_at_least_the_minimum():
    log = []
    a, b = interleave(fake_blocks({"A": 1e-5, "B": 0.5}, log), budget_s=2.0)
    assert a.calls_per_block == round(MIN_BLOCK_S / 1e-5) and b.calls_per_block == 1
    assert ("A", a.calls_per_block) in log and a.samples == b.samples


def test_a_size_near_the_budget_still_gets_the_minimum_samples():
    log = []
    (a, b) = interleave(fake_blocks({"A": 0.4, "B": 0.2}, log), budget_s=1.0)  # cold + probe alone: 1.2 s
    assert a.samples == b.samples == MIN_ROUNDS
    spent = sum({"A": 0.4, "B": 0.2}[n] * c for n, c in log)
    assert spent == pytest.approx(0.6 * (1 + MIN_ROUNDS))  # never more than the minimum beyond the budget


def test_one_series_is_timed_like_a_plain_measurement():
    log = []
    (only,) = interleave(fake_blocks({"A": 0.001}, log), budget_s=0.5)
    assert only.calls_per_block == 10 and 0.4 < only.samples * 0.01 + 0.002 <= 0.5


def test_real_series_share_operands_and_carry_the_load_of_their_window():
    s1, s2 = Series("cpu", "float32", threads=1), Series("cpu", "float32", threads=2)
    points = paired.time_interleaved([s1, s2], 32, MatmulOptions(budget_s=0.1))
    assert [p.series for p in points] == [s1.label, s2.label] and [p.threads for p in points] == [1, 2]
    assert points[0].samples == points[1].samples >= MIN_ROUNDS
    assert points[0].others_cores is not None and points[0].others_cores == points[1].others_cores
    assert points[0].rel_error is not None and points[0].rel_error < 1e-5


def test_series_that_cannot_yet_be_told_apart_sample_on_past_the_budget_up_to_the_extra():
    """nvbench's rule: sampling stops on a noise criterion. Overlapping series go on up to the extra budget;
    the same series judged settled stop at the budget."""
    def noisy(name: str, base: float, log: list):
        jitter = iter([1.0, 1.4, 0.8, 1.3, 0.9, 1.2] * 100)

        def timed(calls):
            log.append(name)
            return base * next(jitter) * calls
        return timed
    plain_log: list = []
    plain = interleave([noisy("A", 0.1, plain_log), noisy("B", 0.11, plain_log)], budget_s=2.0)
    log: list = []
    seen: list[int] = []

    def settled(times) -> bool:
        seen.append(len(times[0]))
        return False
    longer = interleave([noisy("A", 0.1, log), noisy("B", 0.11, log)], budget_s=2.0, settled=settled, extra_s=2.0)
    assert longer[0].samples > plain[0].samples and seen and seen[0] >= MIN_ROUNDS
    assert sum(longer[0].times_s) + sum(longer[1].times_s) <= 4.0 + 0.3  # within budget + extra (+ one round)
    log.clear()
    early = interleave([noisy("A", 0.1, log), noisy("B", 0.11, log)], budget_s=2.0, settled=lambda t: True, extra_s=2.0)
    assert early[0].samples == plain[0].samples


def test_samples_settled_only_when_every_pair_is_called():
    from core.matmul.verdict import samples_settled
    tight = [1.0, 1.01, 0.99, 1.0]
    assert samples_settled([tight, [2 * t for t in tight]]) and samples_settled([tight, tight])
    assert not samples_settled([tight, [2 * t for t in tight], [1.0, 2.0, 0.5, 1.5]])
    assert not samples_settled([tight[:2], tight[:2]])


def test_the_noise_criterion_counts_what_others_used_so_far(monkeypatch):
    """An interval just clear of the margin is not settled while a neighbour's reach could still withhold it."""
    from core.matmul.verdict import samples_settled
    tight = [1.0, 1.002, 0.998] * 4
    a, b = tight, [1.08 * t for t in tight]
    assert samples_settled([a, b]) and not samples_settled([a, b], reach=1.05)
    assert samples_settled([a, [1.0, 2.0, 0.5]], reach=float("inf"))  # nothing to wait for: stop at the budget
    contenders = [paired._Contender(Series("cpu", "float32", threads=t), paired.torch.device("cpu"), None)
                  for t in (1, 2)]
    monkeypatch.setattr(paired, "usable_cores", lambda: 2)
    monkeypatch.setattr(paired, "cpu_reading", lambda: "after")
    monkeypatch.setattr(paired, "others_between",
                        lambda before, after: 0.1 if (before, after) == ("before", "after") else None)
    settled = paired._settled(contenders, "before")
    assert not settled([a, b])  # 0.1 cores on a pair that needs both: reach 1.11
    assert settled([a, [1.3 * t for t in tight]])
    monkeypatch.setattr(paired, "others_between", lambda before, after: 0.6)  # busy: no sample will call it
    assert paired._settled(contenders, "before")([a, [1.0, 2.0, 0.5]])
