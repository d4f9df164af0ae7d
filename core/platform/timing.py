"""Adaptive timing of one callable on one device: warm up, pick a block size, sample to a budget.

Same idea as torch.utils.benchmark's `blocked_autorange` (and checked against it in
bench/timing_accuracy.py), with two differences this dashboard needs: a wall-clock budget
that also stops huge sizes after a single timed call, and the cold first call kept as data
for the first-call demo instead of thrown away.

Cold-cache samples are one call each (`time_after_flush`). On a CUDA GPU they are timed by CUDA events
recorded on the stream after the flush, as Triton's `do_bench` does: one call read by the host clock
carries the launch and synchronize latency (tens of microseconds) that a warm block of at least
MIN_BLOCK_S spreads out, so at a small n on an A100 or H100 "cold minus warm" would be mostly that
latency, and the cold crossover would move with it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import torch

from core.platform import clock
from core.platform.devices import synchronize
from core.errors import DashboardError
from core.results.matmul import quantile  # the one rule, shared with a saved point's statistics

MIN_BLOCK_S = 0.010  # 10 ms per timed block: a clock read plus a sync (~10 us) stays below 0.1%
MAX_CALLS_PER_BLOCK = 1_000_000


class Flush(Protocol):
    """A hook run before each timed block, outside the clock (core.platform.cache's cold caches)."""

    cost_s: float  # seconds one call takes, counted against the budget but never timed

    def __call__(self) -> None: ...


@dataclass(frozen=True)
class Measurement:
    """Raw per-call times of each timed block; statistics are derived, never stored."""

    times_s: tuple[float, ...]  # block time / calls_per_block, one entry per block
    calls_per_block: int
    first_call_s: float  # the cold warm-up call: reported for the demo, never a sample
    synchronized: bool = True  # False only for the deliberately wrong "forgot to sync" figure

    @property
    def samples(self) -> int:
        return len(self.times_s)

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    @property
    def min_s(self) -> float:
        return min(self.times_s)

    @property
    def max_s(self) -> float:
        return max(self.times_s)

    @property
    def q1_s(self) -> float:
        return quantile(self.times_s, 0.25)

    @property
    def q3_s(self) -> float:
        return quantile(self.times_s, 0.75)

    @property
    def iqr_s(self) -> float:
        return self.q3_s - self.q1_s

    @property
    def timed_s(self) -> float:
        """Seconds spent inside timed blocks (the warm-up excluded)."""
        return sum(self.times_s) * self.calls_per_block


def time_block(fn: Callable[[], object], calls: int, device: torch.device, *, sync: bool = True) -> float:
    """Seconds for `calls` back-to-back calls of `fn`.

    With sync=False the clock is read without waiting (the classic bug); the device is drained
    afterwards, outside the timed region, so one bad reading does not leak into the next.
    """
    if sync:
        start = clock.now(device)
        for _ in range(calls):
            fn()
        return clock.now(device) - start
    start = clock.now_unsynced()
    for _ in range(calls):
        fn()
    elapsed = clock.now_unsynced() - start
    synchronize(device)
    return elapsed


def event_seconds(fn: Callable[[], object], device: torch.device, calls: int = 1) -> float:
    """Seconds per call of `fn` between two CUDA events recorded on `device`'s current stream around the
    calls: timestamps the GPU writes itself, so work queued before the first (a flush) is not in them, and
    neither is the host's launch or synchronize latency."""
    stream = torch.cuda.current_stream(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(stream)
    for _ in range(calls):
        fn()
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) / 1000.0 / calls  # elapsed_time is in milliseconds


def time_after_flush(fn: Callable[[], object], device: torch.device, flush: Callable[[], None]) -> float:
    """Seconds for one call of `fn` with cold caches: the flush first, never timed. On a CUDA GPU the
    flush is queued and the call timed by events recorded after it (`event_seconds`); elsewhere by the
    clock, whose first read waits for the flush."""
    flush()
    if device.type == "cuda":
        return event_seconds(fn, device)
    return time_block(fn, 1, device)


def measure(
    fn: Callable[[], object],
    device: torch.device,
    *,
    budget_s: float = 1.0,
    min_samples: int = 5,
    max_samples: int = 200,
    sync: bool = True,
    flush: Flush | None = None,
) -> Measurement:
    """Time `fn` on `device` within about `budget_s` seconds of wall time, warm-up included.

    Fast calls are grouped into blocks of at least MIN_BLOCK_S so the clock's resolution and
    the sync cost do not matter; a call slower than the whole budget is timed once. Sampling
    stops at max_samples, or once min_samples are in and the budget is spent, or when the next
    block would overrun the budget. With a `flush` (cold caches) every block is one call and the
    flush runs before it, outside the clock; its cost counts against the budget.
    """
    if budget_s <= 0:
        raise DashboardError(f"time budget must be positive, got {budget_s} s")
    if min_samples < 1 or max_samples < min_samples:
        raise DashboardError(f"need 1 <= min_samples <= max_samples, got {min_samples} and {max_samples}")
    overhead = 0.0 if flush is None else flush.cost_s

    def block(calls: int, synced: bool = sync) -> float:
        if flush is not None and synced:
            return time_after_flush(fn, device, flush)  # one call (calls is 1 with a flush), the flush never timed
        if flush is not None:
            flush()
        return time_block(fn, calls, device, sync=synced)

    first = block(1, True)  # cold: library set-up, kernel selection, page faults
    probe = block(1)  # warm
    calls = 1 if probe >= MIN_BLOCK_S or flush is not None else min(MAX_CALLS_PER_BLOCK,
                                                                     math.ceil(MIN_BLOCK_S / max(probe, 1e-9)))
    times: list[float] = [probe] if calls == 1 else []
    spent = first + probe + 2 * overhead
    while len(times) < max_samples:
        expected = (statistics.median(times) if times else probe) * calls + overhead
        if times and (spent + expected > budget_s) and (len(times) >= min_samples or spent > budget_s / 2):
            break
        elapsed = block(calls)
        times.append(elapsed / calls)
        spent += elapsed + overhead
    return Measurement(tuple(times), calls, first, synchronized=sync)


@contextmanager
def torch_threads(n: int | None) -> Iterator[int]:
    """Run a block with `n` CPU threads for torch (None: leave as is), then restore.

    torch's thread count is process-wide, which is why timed jobs also hold the device lock.
    """
    before = torch.get_num_threads()
    if n is not None:
        if n < 1:
            raise DashboardError(f"thread count must be at least 1, got {n}")
        torch.set_num_threads(n)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
