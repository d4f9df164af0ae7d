import statistics

import pytest
import torch

from core.platform import clock

from core.platform import timing
from core.errors import DashboardError

CUDA = torch.device("cuda", 0)
CPU = torch.device("cpu")


class FakeClock:
    """Advances by a scripted cost per call of the timed function; logs clock reads."""

    def __init__(self, events: list[str]) -> None:
        self.t = 0.0
        self.events = events

    def read(self) -> float:
        self.events.append("clock")
        return self.t


@pytest.fixture
def fake_clock(fake_cuda, monkeypatch):
    fc = FakeClock(fake_cuda.events)
    monkeypatch.setattr(clock, "read_clock", fc.read)
    return fc


def _fn(fc: FakeClock, costs):
    it = iter(costs)

    def call():
        fc.events.append("call")
        fc.t += next(it)

    return call


def test_every_cuda_clock_read_follows_a_sync(fake_clock):
    m = timing.measure(_fn(fake_clock, [0.5] + [0.02] * 1000), CUDA, budget_s=1.0)
    events = fake_clock.events
    reads = [i for i, e in enumerate(events) if e == "clock"]
    assert reads, "the clock was never read"
    for i in reads:
        assert events[i - 1] == "sync", f"clock read at {i} not preceded by a sync: {events[max(0, i - 3):i + 1]}"
    assert m.synchronized


def test_warm_up_is_not_a_sample(fake_clock):
    # a cold first call 50x slower than the rest must not move the median
    m = timing.measure(_fn(fake_clock, [1.0] + [0.02] * 1000), CUDA, budget_s=2.0)
    assert m.first_call_s == pytest.approx(1.0)
    assert max(m.times_s) == pytest.approx(0.02)
    assert m.median_s == pytest.approx(0.02)


def test_fast_calls_are_batched_into_blocks(fake_clock):
    m = timing.measure(_fn(fake_clock, [1e-4] * 100000), CUDA, budget_s=0.5)
    assert m.calls_per_block == 100  # 10 ms / 0.1 ms
    assert m.median_s == pytest.approx(1e-4)
    assert m.samples >= 5


def test_a_call_longer_than_the_budget_is_timed_once(fake_clock):
    m = timing.measure(_fn(fake_clock, [30.0, 13.0, 13.0, 13.0]), CUDA, budget_s=5.0)
    assert m.samples == 1 and m.calls_per_block == 1
    assert m.median_s == pytest.approx(13.0) and m.iqr_s == 0


def test_budget_bounds_the_samples(fake_clock):
    m = timing.measure(_fn(fake_clock, [0.1] * 1000), CUDA, budget_s=1.0, min_samples=3)
    assert 3 <= m.samples <= 9
    assert m.first_call_s + m.timed_s <= 1.0 + 1e-9  # warm-up plus timed blocks stay in budget


def test_unsynced_reads_skip_the_sync_but_drain_afterwards(fake_clock):
    m = timing.measure(_fn(fake_clock, [0.5] + [0.02] * 1000), CUDA, budget_s=1.0, sync=False)
    assert not m.synchronized
    ev = fake_clock.events
    # at least one clock read right after a call, with no sync between: the bug on purpose
    assert any(ev[i] == "clock" and ev[i - 1] == "call" for i in range(1, len(ev)))
    assert ev[-1] == "sync"


def test_statistics_are_derived_from_samples():
    m = timing.Measurement(times_s=(1.0, 2.0, 3.0, 4.0, 100.0), calls_per_block=2, first_call_s=9.0)
    assert m.median_s == 3.0 and m.min_s == 1.0 and m.max_s == 100.0
    assert m.q1_s == 2.0 and m.q3_s == 4.0 and m.iqr_s == 2.0
    assert m.timed_s == 220.0
    assert statistics.median(m.times_s) == m.median_s


def test_real_clock_on_cpu_gives_plausible_numbers():
    a = torch.randn(64, 64)
    m = timing.measure(lambda: a @ a, CPU, budget_s=0.2)
    assert m.samples >= 1 and 0 < m.median_s < 0.1
    assert m.min_s <= m.median_s <= m.max_s


@pytest.mark.parametrize("kwargs", [{"budget_s": 0}, {"min_samples": 0}, {"min_samples": 5, "max_samples": 2}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(DashboardError):
        timing.measure(lambda: None, CPU, **kwargs)


def test_torch_threads_restores_the_count():
    before = torch.get_num_threads()
    with timing.torch_threads(1) as n:
        assert n == 1 == torch.get_num_threads()
    assert torch.get_num_threads() == before
    with pytest.raises(DashboardError):
        with timing.torch_threads(0):
            pass
