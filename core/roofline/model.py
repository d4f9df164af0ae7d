"""The roofline model of one matmul, and the crossover it predicts between two series.

    t(n) = overhead + max(2n^3 / peak, 3 * s * n^2 / bandwidth)     (s: bytes per element)
    end to end on a GPU: + 2 * s * n^2 / h2d + s * n^2 / d2h

An n x n product does 2n^3 operations on at least three n x n matrices, so its arithmetic
intensity is 2n / (3s) operations per byte: it grows with n, which is why small products sit
under the bandwidth roof (and under the fixed cost of starting one operation) and big ones reach
the compute roof. Two series with different constants cross where their t(n) are equal; that
size follows from the constants alone, so it can be checked against the measured crossover.

`model_of` reads a series' model from its measured roofs (`DeviceRoofs`). It lives here, beside the
model and without torch, because the roofline figures draw it too (core/charts/roofline.py may not
import the run; tests/test_layers.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from core.errors import DashboardError
from core.results.roofline import DeviceRoofs

ELEMENT_BYTES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
SEARCH_MAX_N = 1 << 17  # beyond this no product fits in any device's memory today
GRID_PER_DOUBLING = 16


def element_bytes(dtype: str) -> int:
    try:
        return ELEMENT_BYTES[dtype]
    except KeyError:
        raise DashboardError(f"unknown dtype {dtype!r}; choose one of: {', '.join(ELEMENT_BYTES)}") from None


def intensity(n: int, dtype: str) -> float:
    """Operations per byte of an n x n product that reads A and B and writes C once: 2n / (3s)."""
    return 2 * n / (3 * element_bytes(dtype))


@dataclass(frozen=True)
class RooflineModel:
    """The constants of one series, and the time they predict."""

    overhead_s: float  # fixed cost of one operation: a kernel launch, a thread wake-up, the sync
    peak_gflops: float  # compute roof
    bandwidth_gbs: float  # memory roof, bytes read + written per second / 1e9
    dtype: str = "float32"
    h2d_gbs: float | None = None  # host -> device copy rate; None: no copies (the CPU)
    d2h_gbs: float | None = None

    def __post_init__(self) -> None:
        if self.overhead_s < 0 or self.peak_gflops <= 0 or self.bandwidth_gbs <= 0:
            raise DashboardError("a roofline model needs overhead >= 0 and positive peak and bandwidth, got "
                                 f"{self.overhead_s}, {self.peak_gflops}, {self.bandwidth_gbs}")

    @property
    def ridge_intensity(self) -> float:
        return self.peak_gflops / self.bandwidth_gbs

    def compute_s(self, n: float) -> float:
        return 2 * n**3 / (self.peak_gflops * 1e9)

    def memory_s(self, n: float) -> float:
        return 3 * element_bytes(self.dtype) * n**2 / (self.bandwidth_gbs * 1e9)

    def time_s(self, n: float) -> float:
        """Predicted seconds of one product already on the device."""
        return self.overhead_s + max(self.compute_s(n), self.memory_s(n))

    def copies_s(self, n: float) -> float:
        """Predicted seconds to copy A and B in and C out; 0 where there is nothing to copy."""
        if self.h2d_gbs is None or self.d2h_gbs is None:
            return 0.0
        s = element_bytes(self.dtype)
        return 2 * s * n**2 / (self.h2d_gbs * 1e9) + s * n**2 / (self.d2h_gbs * 1e9)

    def end_to_end_s(self, n: float) -> float:
        return self.time_s(n) + self.copies_s(n)

    def roof_gflops(self, ops_per_byte: float) -> float:
        """The attainable rate at an intensity: min(peak, bandwidth x intensity)."""
        return min(self.peak_gflops, self.bandwidth_gbs * ops_per_byte)


Bound = Literal["value", "fast", "slow"]


def _bound(roofs: DeviceRoofs, name: str, bound: Bound, *, roof: bool) -> float | None:
    """A constant, or the end of its spread that makes the series fast (high roof, low cost) or slow."""
    value: float | None = getattr(roofs, name)
    limits = roofs.spread(name)
    if bound == "value" or value is None or limits is None:
        return value
    return limits[1 if (bound == "fast") == roof else 0]


def model_of(roofs: DeviceRoofs, bound: Bound = "value") -> RooflineModel | None:
    """The model a series' roofs define; None while a roof is missing (nothing timed yet).

    bound "fast" or "slow" takes every constant at the end of its spread that makes the series
    fastest or slowest: the predicted crossover's interval comes from these.
    """
    peak = _bound(roofs, "peak_gflops", bound, roof=True)
    bandwidth = _bound(roofs, "bandwidth_gbs", bound, roof=True)
    launch = _bound(roofs, "launch_s", bound, roof=False)
    if not peak or not bandwidth or launch is None:
        return None
    overhead = launch + (_bound(roofs, "wake_s", bound, roof=False) or 0.0)
    return RooflineModel(overhead, peak, bandwidth, roofs.dtype, _bound(roofs, "h2d_gbs", bound, roof=True),
                         _bound(roofs, "d2h_gbs", bound, roof=True))


def predict_crossover(challenger: RooflineModel, baseline: RooflineModel, *, end_to_end: bool = False,
                      lo: int = 1, hi: int = SEARCH_MAX_N) -> float | None:
    """The smallest n from which the challenger's predicted time stays below the baseline's, up to `hi`.

    `lo` itself when the challenger is ahead everywhere; None when it is not ahead at `hi`. Found
    on a log grid, then refined by bisection on the last bracket.
    """
    def ahead(n: float) -> bool:
        if end_to_end:
            return challenger.end_to_end_s(n) < baseline.end_to_end_s(n)
        return challenger.time_s(n) < baseline.time_s(n)

    steps = round(GRID_PER_DOUBLING * math.log2(hi / lo))
    grid = [lo * 2 ** (k / GRID_PER_DOUBLING) for k in range(steps + 1)]
    if not ahead(grid[-1]):
        return None
    i = len(grid) - 1
    while i > 0 and ahead(grid[i - 1]):
        i -= 1
    if i == 0:
        return float(lo)
    a, b = grid[i - 1], grid[i]  # behind at a, ahead at b
    for _ in range(40):
        mid = math.sqrt(a * b)
        a, b = (a, mid) if ahead(mid) else (mid, b)
    return b


def relative_error(predicted_s: float, measured_s: float) -> float:
    """(predicted - measured) / measured: negative when the model is too optimistic."""
    return (predicted_s - measured_s) / measured_s
