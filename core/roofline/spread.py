"""How a constant's repeats become one figure with its spread, and when it is too noisy to state as a fact.

The roofline measures each constant REPEATS times, the series' probes taking turns (A, B, B, A, ...),
so a neighbour that starts halfway through slows both series alike. Noise on a shared machine only
ever adds time (a descheduled thread, a cache another program emptied), never removes it, so:

- a roof (bandwidth, peak) is the best sustained figure: the highest repeat, each repeat itself a
  median over blocks (sustained, not one lucky block);
- a fixed cost (launch, thread wake-up) is a low quantile (LOW_QUANTILE) of each repeat's samples,
  which ignores the blocks a neighbour slowed, and the constant is the median of the repeats, which
  ignores one repeat that ran beside a neighbour all the way through (a minimum would keep the one
  repeat whose one-thread part happened to be slowed, making the wake-up look free);
- its spread is the lowest and the highest repeat; it is `noisy` when the highest is more than
  NOISY_FACTOR times the lowest (times under TIME_FLOOR_S counted as TIME_FLOOR_S: a wake-up of 0
  against 1 µs is not a disagreement anyone could act on), or when other programs took cores the
  series needed while the repeats ran (machine_load.busy_for, as the Matmul verdicts use: half a core
  beyond the cores the series left idle; a CPU series needs its threads, a GPU series one core).

A GPU's copy rates (host to device and back, pageable and pinned) are rates like the bandwidth: the
best repeat, its spread, flagged by the same rule.

A noisy constant is still shown, with its range, but the model's error summary leaves its series
out and the page says what it is, so a busy machine's 1.27e+05 µs start-up cost is never a fact.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from core.platform.machine_load import busy_for
from core.platform.units import number, quantity, seconds
from core.results.roofline import Spread

REPEATS = 3  # figures per constant: the fewest whose median ignores one bad repeat
NOISY_FACTOR = 1.5  # highest repeat over lowest beyond which the repeats disagree (a quiet 2-core laptop: < 1.2)
LOW_QUANTILE = 0.25  # of a fixed cost's samples: below the median, where a neighbour's stalls do not reach
TIME_FLOOR_S = 2e-6  # fixed costs below 2 µs are within a clock read and a Python call of each other
COPIES = ("h2d_gbs", "d2h_gbs", "h2d_pinned_gbs", "d2h_pinned_gbs")  # a GPU's host <-> device rates
ROOFS = ("bandwidth_gbs", "peak_gflops", *COPIES)  # best repeat (a rate); the others (launch_s, wake_s) the median
THEORY_BELOW = "theory underestimates this machine (boost clock?)"
THEORY_MARGIN = 0.02  # measured above theory by less than this is within a timing's noise: not flagged

# What each constant is called where a person reads it (the field names stay in the JSON).
NAMES = {"bandwidth_gbs": "memory bandwidth", "peak_gflops": "peak rate", "launch_s": "start-up cost",
         "wake_s": "thread wake-up cost", "h2d_gbs": "copy rate to the GPU", "d2h_gbs": "copy rate from the GPU",
         "h2d_pinned_gbs": "pinned copy rate to the GPU", "d2h_pinned_gbs": "pinned copy rate from the GPU"}


def name_of(field: str) -> str:
    """'thread wake-up cost' for 'wake_s': what a person reads; an unknown field as it is."""
    return NAMES.get(field, field)


def names_of(fields: Sequence[str]) -> str:
    """'memory bandwidth, start-up cost': a series' noisy constants in words."""
    return ", ".join(name_of(f) for f in fields)


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (numpy's default rule)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def constant(name: str, repeats: Sequence[float]) -> float:
    """The figure a constant's repeats give: the best for a roof, the median for a fixed cost."""
    if not repeats:
        raise ValueError(f"no repeats of {name}")
    return max(repeats) if name in ROOFS else statistics.median(repeats)


def spread_of(name: str, repeats: Sequence[float], others_cores: float | None = None) -> Spread:
    return Spread(name=name, low=min(repeats), high=max(repeats), repeats=len(repeats), others_cores=others_cores)


def disagree(spread: Spread) -> bool:
    """Do the repeats differ by more than NOISY_FACTOR (fixed costs floored at TIME_FLOOR_S)?"""
    if spread.low is None or spread.high is None or spread.repeats < 2:
        return False
    floor = 0.0 if spread.name in ROOFS else TIME_FLOOR_S
    return max(spread.high, floor) > NOISY_FACTOR * max(spread.low, floor, 1e-300)


def busy(spread: Spread, spare_cores: int = 0) -> bool:
    """Did others take cores the constant's series needed (machine_load.busy_for; `spare_cores`: the
    cores the series left idle, 0 when it used them all)?"""
    return busy_for(spread.others_cores, cores=spare_cores + 1, needed=1)


def figure(name: str, value: float | None) -> str:
    """One constant as a person reads it: a time in the unit that suits it ('3.85 ms'), a rate in its unit."""
    unit, scale = UNITS.get(name, ("", 1.0))
    if unit == "µs":
        return seconds(value or 0.0)
    return quantity((value or 0.0) * scale, unit) if unit else number((value or 0.0) * scale)


def why_noisy(spread: Spread, spare_cores: int = 0) -> str | None:
    """The note a noisy constant carries (None when it is not noisy): its range, and busy or not."""
    reasons = []
    if disagree(spread):
        reasons.append(f"its {spread.repeats} repeats ranged from {figure(spread.name, spread.low)} to "
                       f"{figure(spread.name, spread.high)} (more than {NOISY_FACTOR:g}x apart)")
    if busy(spread, spare_cores):
        reasons.append(f"other programs used {spread.others_cores:.1f} cores while it was measured")
    return f"the {name_of(spread.name)} is noisy: " + " and ".join(reasons) if reasons else None


UNITS = {"bandwidth_gbs": ("GB/s", 1.0), "peak_gflops": ("GFLOP/s", 1.0), "launch_s": ("µs", 1e6),
         "wake_s": ("µs", 1e6), **{name: ("GB/s", 1.0) for name in COPIES}}


def spare_cores(cores: int, threads: int | None) -> int:
    """Cores a series leaves idle: a CPU series uses its threads, a GPU series (threads None) one core."""
    return max(0, cores - (threads or 1))


def flags(spreads: Sequence[Spread], spare_cores: int = 0) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(names of the noisy constants, a note for each) among `spreads`; `spare_cores` as for `busy`."""
    names, notes = [], []
    for s in spreads:
        note = why_noisy(s, spare_cores)
        if note is not None:
            names.append(s.name)
            notes.append(note)
    return tuple(names), tuple(notes)


def others_over(windows: Sequence[tuple[float | None, float]]) -> float | None:
    """Cores others used over several (others_cores, seconds) windows: the time-weighted mean."""
    known = [(o, s) for o, s in windows if o is not None and s > 0]
    if not known:
        return None
    return sum(o * s for o, s in known) / sum(s for _, s in known)
