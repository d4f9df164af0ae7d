"""The crossover: the matrix size from which a challenger (the GPU) beats a baseline (the CPU) for good.

"For good" matters: with noisy timings the GPU can win at one small size, lose at the next and
win from then on. The crossover is the smallest size from which the challenger's median is
lower at every larger measured size, interpolated between the two measured sizes around it
on a log-log scale (speed-up is close to a power law in n there).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

INTERPOLATED = "interpolated"  # between two measured sizes
BELOW_RANGE = "below_range"  # the challenger wins at every measured size: at or below the first
NONE_IN_RANGE = "none"  # the challenger is not ahead at the largest measured size
NO_DATA = "no_data"  # no size measured for both


@dataclass(frozen=True)
class Crossover:
    status: str  # one of INTERPOLATED, BELOW_RANGE, NONE_IN_RANGE, NO_DATA
    n: float | None  # the crossover size; the first measured size for BELOW_RANGE; None otherwise
    lower_n: int | None = None  # the measured size just below (where the challenger did not win)
    upper_n: int | None = None  # the measured size from which the challenger wins

    @property
    def n_int(self) -> int | None:
        """Rounded for JSON and tables."""
        return None if self.n is None else int(round(self.n))

    def describe(self, challenger: str = "the GPU", baseline: str = "the CPU") -> str:
        if self.status == INTERPOLATED:
            return (f"{challenger} beats {baseline} from n ≈ {self.n_int:,} on "
                    f"(between the measured sizes {self.lower_n:,} and {self.upper_n:,})")
        if self.status == BELOW_RANGE:
            return f"{challenger} beats {baseline} at every measured size: the crossover is at or below n = {self.n_int:,}"
        if self.status == NONE_IN_RANGE:
            return f"no crossover in this range: {challenger} does not beat {baseline} for good at the sizes measured"
        return f"no size was measured for both {challenger} and {baseline}"


def find_crossover(sizes: Sequence[int], challenger_s: Sequence[float], baseline_s: Sequence[float]) -> Crossover:
    """Crossover from times measured at the same sizes (any order; each size once)."""
    if not (len(sizes) == len(challenger_s) == len(baseline_s)):
        raise ValueError(f"need equal lengths, got {len(sizes)}, {len(challenger_s)}, {len(baseline_s)}")
    points = sorted(zip(sizes, challenger_s, baseline_s))
    if not points:
        return Crossover(NO_DATA, None)
    speedups = [base / chal for _, chal, base in points]  # > 1: the challenger is faster
    first_winning = len(points)
    for i in range(len(points) - 1, -1, -1):
        if speedups[i] <= 1.0:
            break
        first_winning = i
    if first_winning == len(points):
        return Crossover(NONE_IN_RANGE, None)
    if first_winning == 0:
        return Crossover(BELOW_RANGE, float(points[0][0]), None, points[0][0])
    lo, hi = first_winning - 1, first_winning
    n_lo, n_hi = points[lo][0], points[hi][0]
    log_s_lo, log_s_hi = math.log(speedups[lo]), math.log(speedups[hi])  # <= 0 and > 0
    fraction = (0.0 - log_s_lo) / (log_s_hi - log_s_lo)
    n = math.exp(math.log(n_lo) + fraction * (math.log(n_hi) - math.log(n_lo)))
    return Crossover(INTERPOLATED, n, n_lo, n_hi)


def crossover_from_frame(frame: pd.DataFrame, challenger: str, baseline: str, column: str = "median_s") -> Crossover:
    """Crossover of two series of a results table (columns 'series', 'n' and `column`)."""
    pick = frame[frame["series"].isin([challenger, baseline])].dropna(subset=[column])
    wide = pick.pivot_table(index="n", columns="series", values=column, aggfunc="median")
    if challenger not in wide or baseline not in wide:
        return Crossover(NO_DATA, None)
    wide = wide.dropna()
    return find_crossover(list(wide.index), list(wide[challenger]), list(wide[baseline]))
