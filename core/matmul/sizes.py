"""The sizes a race times, decided before any size is timed, the same for the same settings on the same machine.

Two caps, both from figures that do not change from one race to the next:

- memory: a size whose operands (core.matmul.guards.memory_need) need more than MEMORY_SHARE of all the memory
  its device has (`total_device_bytes`, not what is free at this moment) is left out;
- time: a size whose warm-up plus one timed product, reckoned from this machine's rate card
  (core.matmul.rate_card: t ~ n^3 from the nearest calibrated size below), would exceed the budget per size
  is left out. Sizes up to FREE_N are always kept (and a race of only those needs no card).

Each size left out is a `SkippedSize` ("memory" or "time") saying why, shown with the race's other skips. What
is free now still guards every size as it comes (guards.check_memory, round_memory): another program's memory
is a fact of the moment, and a size it pushes out is skipped then, saying so. And a size the plan kept but that
ran far slower than the card said ends its series (`runaway`), so a wrong card cannot run away with the race.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch

from core.matmul.config import MatmulOptions
from core.matmul.guards import GUARD_CALLS, DoesNotFit, check_memory, memory_need, options_need, skipped_size
from core.matmul.out_of_memory import RanOutOfMemory
from core.matmul.plan import Plan
from core.matmul.rate_card import Card, Rates, rates_for
from core.matmul.series import Series
from core.platform.memory import total_device_bytes
from core.platform.units import byte_size
from core.results.matmul import MatmulPoint, SkippedSize

MEMORY_SHARE = 0.5  # of a device's whole memory: the most one size may plan to use
FREE_N = 256  # sizes up to this one need no time cap: 34 MFLOP, tens of ms even at 1 GFLOP/s (CPU half precision)
RUNAWAY = 4.0  # a size whose warm-up alone, or the next size's predicted cost, passes this many budgets ends a series


def memory_refusal(series: Series, n: int, options: MatmulOptions, total: Callable[[torch.device], int]
                   ) -> str | None:
    """Why size n does not belong in the plan for memory (more than MEMORY_SHARE of the device, or of the RAM for
    a GPU's host copies), or None."""
    device = torch.device(series.device)
    need = options_need(device, series.dtype, n, options)
    cap = int(MEMORY_SHARE * total(device))
    if need.device_bytes > cap:
        return (f"n={n:,} {series.dtype} on {series.device} needs "
                f"{byte_size(need.device_bytes)}, more than half of the "
                f"{byte_size(total(device))} it has in all: the plan leaves such sizes out so that what other programs "
                "hold at the moment cannot decide a race's sizes; choose a smaller size")
    if series.device != "cpu" and need.host_bytes > int(MEMORY_SHARE * total(torch.device("cpu"))):
        return (f"n={n:,} {series.dtype} on {series.device} needs "
                f"{byte_size(need.host_bytes)} of RAM for the float64 check "
                "and host copies, more than half of this machine's RAM; choose a smaller size or turn off end to end")
    return None


def time_refusal(series: Series, n: int, budget_s: float, rates: Rates) -> str | None:
    """Why size n does not belong in the plan for time (warm-up plus one timed product, from the card, would
    overrun the budget), or None."""
    seconds, source = rates.seconds(n)
    if GUARD_CALLS * seconds <= budget_s:
        return None
    how = "as calibrated" if source == n else f"t ~ n^3 from n={source:,} as calibrated"
    return (f"left out before timing: about {seconds:.3g} s per product ({how} on {rates.measured_at[:10]}), so "
            f"warm-up plus one timed product would exceed the {budget_s:g} s budget per size; raise the budget to "
            "time it")


@dataclass(frozen=True)
class SizePlan:
    """Which sizes of which series a race times, decided before timing, and the rest with why."""

    sizes: Mapping[Series, tuple[int, ...]]  # the sizes each series times, ascending
    rates: Mapping[Series, Rates]  # the card's, for the series that needed one
    left_out: Mapping[tuple[Series, int], SkippedSize]
    notes: tuple[str, ...] = ()  # where the sizes came from (the rate card), for the race's report

    def refusal(self, series: Series, n: int) -> SkippedSize | None:
        return self.left_out.get((series, n))

    def next_size(self, series: Series, n: int) -> int | None:
        return next((m for m in self.sizes.get(series, ()) if m > n), None)


def decide(series: Sequence[Series], sizes: Sequence[int], options: MatmulOptions, rates: Mapping[Series, Rates],
           total: Callable[[torch.device], int] = total_device_bytes, notes: tuple[str, ...] = ()) -> SizePlan:
    """The plan from fixed figures alone: the same arguments, the same plan (unit-tested without a machine)."""
    kept: dict[Series, tuple[int, ...]] = {}
    left_out: dict[tuple[Series, int], SkippedSize] = {}
    for s in series:
        ran = []
        for n in sorted(sizes):
            if (message := memory_refusal(s, n, options, total)) is not None:
                left_out[(s, n)] = skipped_size(s, n, "memory", message)
            elif n > FREE_N and (message := time_refusal(s, n, options.budget_s, rates[s])) is not None:
                left_out[(s, n)] = skipped_size(s, n, "time", message)
            else:
                ran.append(n)
        kept[s] = tuple(ran)
    return SizePlan(kept, rates, left_out, notes)


def calibration_fits(series: Series, n: int) -> bool:
    """Whether the calibration may allocate size n: within the plan's memory share, and free now."""
    device = torch.device(series.device)
    need = memory_need(device, series.dtype, n, check_error=False)
    if need.device_bytes > MEMORY_SHARE * total_device_bytes(device):
        return False
    try:
        check_memory(need)
    except DoesNotFit:
        return False
    return True


def size_plan(plan: Plan, probe: Callable[[Series, int], float], *, busy: bool = False,
              say: Callable[[str], None] = lambda line: None) -> SizePlan:
    """The race's sizes on this machine: its card's rates (calibrating a series it lacks, `say` told) and its
    memory."""
    def fitting_probe(s: Series, n: int) -> float | None:
        try:
            return probe(s, n)
        except (DoesNotFit, RanOutOfMemory):
            return None

    needed = [s for s in plan.series if max(plan.config.sizes) > FREE_N]  # small sizes need no card
    card: Card = rates_for(needed, fitting_probe, calibration_fits, busy=busy, say=say)
    return decide(plan.series, plan.config.sizes, plan.config.options, card.rates,
                  notes=(card.note(),) if needed else ())


def runaway(point: MatmulPoint, next_n: int | None, budget_s: float, rates: Rates | None) -> str | None:
    """The safety stop after a size is timed: why its series ends here, or None.

    The plan kept the size from the card's figures. If the size itself overran (a product over the budget, and
    its warm-up alone more than RUNAWAY budgets), or the series' next planned size would take more than RUNAWAY
    budgets, the machine is far slower than its card says and the series' larger sizes are not tried. The next
    size is reckoned both ways, and the lower kept: the card scaled by how much slower this size ran (a slower
    machine), and this size's median scaled by n^3 (a stall of a few ms at a small size is added time, not a rate).
    Only sizes from the card's first on are compared: below it a GPU's launch latency is not n^3."""
    median, first = point.median_s or 0.0, point.first_call_s or 0.0
    if first > RUNAWAY * budget_s and GUARD_CALLS * median > budget_s:
        return (f"not tried: the warm-up of n={point.n:,} alone took {first:.3g} s, more than {RUNAWAY:g} times the "
                f"{budget_s:g} s budget per size (far slower than this machine's rate card says), so the series "
                "stopped there")
    if next_n is None or rates is None or not median or point.n < min(n for n, _ in rates.ladder):
        return None
    slower = median / rates.seconds(point.n)[0]
    predicted = min(rates.seconds(next_n)[0] * slower, median * (next_n / point.n) ** 3)
    if GUARD_CALLS * predicted <= RUNAWAY * budget_s:
        return None
    return (f"not tried: n={point.n:,} took {median:.3g} s per product, {slower:.3g} times what this machine's rate "
            f"card says, so n={next_n:,} would take about {predicted:.3g} s: warm-up and one timed product more than "
            f"{RUNAWAY:g} times the {budget_s:g} s budget per size; the series stopped there")
