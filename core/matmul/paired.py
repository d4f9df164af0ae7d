"""Time the series of one size in alternation (A, B, B, A, A, B, ...), so a change of load hits them alike.

Timing series one after the other lets a neighbour that starts halfway through a size make the
second series look slow: the chart then shows a difference that is the machine's, not the
series'. Here every series of a size is prepared first (operands made, one cold call each), then
sampled in rounds of one block per series, the order turned over every round (ABBA: a load that
rises steadily costs both series the same on average), until the size's budget (the per-series
budget times the number of series, as when they ran one after the other) is spent. Each series
gets the same number of samples, at least MIN_ROUNDS, so every size can be given a verdict
(core.matmul.verdict); near the size plan's limit (core.matmul.sizes) that can take up to twice the budget. When
the budget is spent and the samples cannot yet tell the series apart (verdict.samples_settled),
rounds go on for up to EXTRA_BUDGET times the budget more: a large size gets only three or four
samples in its budget, and three samples each left n = 1024 and 2048 "unclear" on quiet runs of
the default race whose medians differed by 1.3-1.5x.

Blocks are sized as `core.platform.timing.measure` sizes them (at least MIN_BLOCK_S, the warm
probe kept as a sample when one call fills a block), and each block runs under its own series'
thread count and TF32 setting. The engine's pieces are reused as they are: `make_operands`,
`product`, `measured_point`, and the unsynchronized and copy figures, measured per series after
the rounds (they are side figures, not raced). CPU series of one dtype share their operands (the
memory guard counted one set); each GPU TF32 setting gets its own, so C checked against float64
is that setting's own product.

The CPU that other programs used during the size (machine_load's counters read before and after)
is kept on each point as `others_cores`: its verdict is "unclear" when that is a busy machine.

The CPU's frequency is read before and after the rounds; a GPU's SM clock, temperature, power and
throttle reasons are sampled while its blocks run (core.platform.sensors.RunSampler: an idle GPU shows
neither the slowdown nor the clock of the work); a size the GPU was slowed during is marked `throttled`,
one it ran at its power cap says so.

With cold caches (options.cache, core.platform.cache) every block is one call, each preceded by
its device's flush outside the clock (timing.time_after_flush: a GPU's call timed by CUDA events
recorded after the flush, not by the host clock); the flushes' cost counts against the size's budget.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Sequence

import torch

from core.matmul import engine
from core.matmul.config import MatmulOptions
from core.matmul.engine import COPY_BUDGET_FRACTION
from core.matmul.out_of_memory import releasing_on_oom
from core.matmul.series import DTYPES, Series, check_dtype
from core.matmul.verdict import MIN_SAMPLES, cores_needed, is_busy, samples_settled
from core.platform import timing
from core.platform.cache import CacheFlush, cache_flush
from core.platform.devices import resolve_device, synchronize
from core.platform.machine_load import CpuReading, cpu_reading, explained_slowdown, others_between, usable_cores
from core.platform.sensors import RunSampler, over, read_clocks
from core.platform.timing import MAX_CALLS_PER_BLOCK, MIN_BLOCK_S, Measurement
from core.results.matmul import MatmulPoint, PointClock

MIN_ROUNDS = MIN_SAMPLES  # samples per series: the fewest a verdict accepts
MAX_ROUNDS = 200  # as timing.measure's max_samples
EXTRA_BUDGET = 1.0  # a size whose series cannot yet be told apart samples on, up to this much more of its budget

Block = Callable[[int], float]  # seconds for `calls` back-to-back calls of one series' product


def block_calls(probe_s: float) -> int:
    """Calls per timed block: enough to fill MIN_BLOCK_S (timing.measure's rule)."""
    return 1 if probe_s >= MIN_BLOCK_S else min(MAX_CALLS_PER_BLOCK, math.ceil(MIN_BLOCK_S / max(probe_s, 1e-9)))


def interleave(blocks: Sequence[Block], budget_s: float, *, min_rounds: int = MIN_ROUNDS,
               max_rounds: int = MAX_ROUNDS, single_calls: bool = False, overhead_s: float = 0.0,
               settled: Callable[[list[list[float]]], bool] | None = None, extra_s: float = 0.0) -> list[Measurement]:
    """Sample every block in alternating rounds within `budget_s` (cold calls included); one
    Measurement per block, each with the same number of samples.

    Round 0 is each series' warm probe (a sample when one call fills a block, else followed by one
    block); later rounds alternate the order. A round starts while it is expected to fit the
    budget, and always until every series has `min_rounds` samples. Past the budget, rounds go on
    while `settled(samples)` says the samples cannot yet be told apart and the round is expected to
    fit `extra_s` more (nvbench's rule: stop on a noise criterion, not on a count). `single_calls`:
    every block is one call (cold caches: the blocks flush before their call, `overhead_s` each,
    counted in the budget but not in the times).
    """
    firsts = [block(1) for block in blocks]  # cold: library set-up, page faults; never a sample
    spent = sum(firsts) + overhead_s * len(blocks)
    calls: list[int] = []
    times: list[list[float]] = []
    for block in blocks:
        probe = block(1)
        calls.append(1 if single_calls else block_calls(probe))
        sample = probe if calls[-1] == 1 else block(calls[-1]) / calls[-1]
        spent += probe + overhead_s + (0.0 if calls[-1] == 1 else sample * calls[-1])
        times.append([sample])
    order = list(range(len(blocks)))
    while len(times[0]) < max_rounds:
        expected = sum(statistics.median(t) * c + overhead_s for t, c in zip(times, calls))
        if len(times[0]) >= min_rounds and spent + expected > budget_s and (
                settled is None or spent + expected > budget_s + extra_s or settled(times)):
            break
        order.reverse()
        for i in order:
            elapsed = blocks[i](calls[i])
            times[i].append(elapsed / calls[i])
            spent += elapsed + overhead_s
    return [Measurement(tuple(t), c, first) for t, c, first in zip(times, calls, firsts)]


@dataclasses.dataclass
class _Contender:
    """One series at one size: its device, its operands, and the settings its blocks ran under."""

    series: Series
    device: torch.device
    ops: engine.Operands
    flush: CacheFlush | None = None  # cold caches: run before each timed call, outside the clock
    threads: int | None = None  # torch's thread count in effect (CPU)
    tf32: bool | None = None  # TF32 in effect (CUDA float32)
    sampler: RunSampler | None = None  # a CUDA GPU's sensors, read while its blocks run

    @property
    def cpu_threads(self) -> int | None:
        return self.series.threads if self.device.type == "cpu" else None

    @property
    def tf32_setting(self) -> bool | None:
        return self.series.tf32 if self.device.type == "cuda" and self.series.dtype == "float32" else None

    def block(self, calls: int) -> float:
        with timing.torch_threads(self.cpu_threads) as threads, engine.tf32_matmul(self.tf32_setting) as tf32:
            self.threads, self.tf32 = threads, tf32
            if self.sampler is None:
                return self._timed(calls)
            with self.sampler.working():
                return self._timed(calls)

    def _timed(self, calls: int) -> float:
        if self.flush is not None:  # cold: one call, the flush before it never timed (CUDA events on a GPU)
            return timing.time_after_flush(engine.product(self.ops), self.device, self.flush)
        return timing.time_block(engine.product(self.ops), calls, self.device)


def _contenders(series: Sequence[Series], n: int, options: MatmulOptions) -> list[_Contender]:
    shared: dict[tuple[str, str, bool | None], engine.Operands] = {}
    flushes: dict[str, CacheFlush | None] = {}
    out = []
    for s in series:
        device = resolve_device(s.device)
        check_dtype(device, s.dtype)
        key = (s.device, s.dtype, s.tf32 if device.type == "cuda" else None)
        if key not in shared:
            shared[key] = engine.make_operands(device, DTYPES[s.dtype], n, seed=options.seed,
                                               end_to_end=options.end_to_end)
            synchronize(device)  # randn is queued on a GPU: finish it before the first clock read
        if s.device not in flushes:
            flushes[s.device] = cache_flush(device, options.cache)
        out.append(_Contender(s, device, shared[key], flushes[s.device]))
    return out


def _point(c: _Contender, n: int, compute: Measurement, options: MatmulOptions, others: float | None,
           clock: PointClock) -> MatmulPoint:
    """The saved point of one contender: its interleaved samples, its side figures, the load and the clock."""
    unsynced = copy_in = copy_out = None
    with timing.torch_threads(c.cpu_threads), engine.tf32_matmul(c.tf32_setting):
        if options.unsynced and engine.is_async(c.device):
            unsynced = engine.measure_unsynced(engine.product(c.ops), c.device, compute,
                                               budget_s=engine.UNSYNCED_BUDGET_FRACTION * options.budget_s)
        if options.end_to_end and c.device.type != "cpu":
            copy_in, copy_out = engine.measure_copies(c.ops, c.device, budget_s=COPY_BUDGET_FRACTION * options.budget_s)
        # Series sharing operands differ only in thread count, which leaves the arithmetic as it is: C is theirs.
        rel_error = engine.relative_error(c.ops, seed=options.seed) if options.check_error else None
    return engine.measured_point(c.series, n, compute, unsynced, copy_in, copy_out, rel_error,
                                 c.threads if c.device.type == "cpu" else None, c.tf32, others_cores=others,
                                 clock=clock)


def _settled(contenders: Sequence[_Contender], before: CpuReading | None) -> Callable[[list[list[float]]], bool]:
    """The noise criterion: every pair told apart by the verdicts' rule, with what other programs have
    used since `before` (so sampling does not stop on a call the neighbour's reach then withholds)."""
    cores = usable_cores()
    spare = max(0, cores - max(cores_needed(c.device.type != "cpu", c.series.threads, cores) for c in contenders))

    def settled(times: list[list[float]]) -> bool:
        others = others_between(before, cpu_reading())
        if is_busy(others, spare):  # the verdict will be "busy" whatever the samples: sampling on only costs time
            return True
        return samples_settled(times, reach=explained_slowdown(others, spare=spare))
    return settled


def time_interleaved(series: Sequence[Series], n: int, options: MatmulOptions = MatmulOptions()) -> list[MatmulPoint]:
    """One point per series at size n, their samples taken in alternation (see the module docstring).

    The memory guard has been passed per series by the caller; an allocation that fails anyway
    raises RanOutOfMemory for the whole size, after releasing every device involved.
    """
    devices = list(dict.fromkeys(resolve_device(s.device) for s in series))

    def rounds() -> list[MatmulPoint]:
        contenders = _contenders(series, n, options)
        samplers = {d: RunSampler(d, read=read_clocks) for d in devices if d.type == "cuda"}
        for c in contenders:
            c.sampler = samplers.get(c.device)
        clocks_before = {d: read_clocks(d) for d in devices if d not in samplers}
        before = cpu_reading()
        cold = options.cache == "cold"
        overhead = max((c.flush.cost_s for c in contenders if c.flush is not None), default=0.0)
        budget = options.budget_s * len(contenders)
        for sampler in samplers.values():
            sampler.start()
        try:
            measured = interleave([c.block for c in contenders], budget, single_calls=cold, overhead_s=overhead,
                                  settled=_settled(contenders, before), extra_s=EXTRA_BUDGET * budget)
        finally:
            for sampler in samplers.values():
                sampler.stop()
        others = others_between(before, cpu_reading())
        clocks = {d: over(r, read_clocks(d)).record() for d, r in clocks_before.items()}
        clocks.update({d: sampler.reading().record() for d, sampler in samplers.items()})
        return [_point(c, n, m, options, others, clocks[c.device]) for c, m in zip(contenders, measured)]

    return releasing_on_oom(rounds, devices, f"n={n}")
