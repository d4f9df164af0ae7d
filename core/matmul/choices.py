"""What the race's widgets and the CLI's flags may offer: sizes, dtypes, thread counts, TF32 settings.

Choices come from core so a page cannot offer what the machine cannot run: `size_choices` asks the memory
guard (core.matmul.guards) which sizes fit now, `dtype_choices` what the chosen devices support
(and core.matmul.plan's `tf32_unavailable` why the TF32 choice would change nothing).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

from core.errors import DashboardError
from core.matmul.guards import largest_fitting_size
from core.matmul.series import DTYPES, supported_dtypes
from core.platform.devices import resolve_device

MIN_SIZE = 16  # smallest n the page offers; the CLI accepts any n >= 1
TF32_CHOICES: dict[str, tuple[bool, ...]] = {"off": (False,), "on": (True,), "both": (False, True)}  # radio, --tf32


def log_sizes(lo: int, hi: int, per_doubling: int = 1) -> tuple[int, ...]:
    """Sizes from lo to hi evenly spaced on a log scale, `per_doubling` of them per factor 2."""
    if lo < 1 or hi < lo:
        raise DashboardError(f"need 1 <= smallest size <= largest size, got {lo} and {hi}")
    if per_doubling < 1:
        raise DashboardError(f"points per doubling must be at least 1, got {per_doubling}")
    steps = round(per_doubling * math.log2(hi / lo))
    sizes = {round(lo * 2 ** (k / per_doubling)) for k in range(steps + 1)}
    return tuple(sorted(s for s in sizes | {lo} if s <= hi))


def size_options(max_n: int) -> list[int]:
    """Powers of two from MIN_SIZE up to max_n, for the page's size slider."""
    options, n = [], MIN_SIZE
    while n <= max_n:
        options.append(n)
        n *= 2
    return options


def tf32_settings(choice: str) -> tuple[bool, ...]:
    """The TF32 settings a page or CLI choice ("off", "on", "both") asks to compare."""
    try:
        return TF32_CHOICES[choice]
    except KeyError:
        raise DashboardError(f"TF32 must be one of {', '.join(TF32_CHOICES)}, not {choice!r}") from None


def thread_choices() -> list[int]:
    """CPU thread counts a user may compare: 1 to the logical core count."""
    return list(range(1, (os.cpu_count() or 1) + 1))


def default_race_threads(gpu_here: bool) -> tuple[int | None, ...]:
    """The thread counts a race starts with: two series that always differ.

    Without a GPU, 1 thread against all cores (the marbles: does splitting the work pay?); "free
    cores" stays a choice, but as a default it could come to 1 thread on a busy machine and race a
    series against itself. With a GPU the race is CPU against GPU: one CPU series, the free cores.
    """
    cores = os.cpu_count() or 1
    if gpu_here or cores == 1:
        return (None,)
    return (1, cores)


def dtype_choices(devices: Sequence[str]) -> list[str]:
    """dtypes at least one of `devices` supports, in DTYPES order."""
    supported = {d for name in devices for d in supported_dtypes(resolve_device(name))}
    return [d for d in DTYPES if d in supported]


def size_choices(devices: Sequence[str], dtypes: Sequence[str], *, end_to_end: bool = False,
                 cache: str = "warm", ceiling: int = 1 << 17) -> list[int]:
    """Powers of two from MIN_SIZE up to the largest that fits now on every chosen device.

    At least [MIN_SIZE], so a slider always has something to show; beyond that, a size
    the memory guard would refuse is not offered (cold caches: with the flush buffer counted).
    """
    largest = ceiling
    for name in devices:
        device = resolve_device(name)
        for dtype in dtypes:
            if dtype in supported_dtypes(device):
                fits = largest_fitting_size(device, dtype, size_options(largest), end_to_end=end_to_end, cache=cache)
                largest = min(largest, fits or MIN_SIZE)
    return size_options(max(largest, MIN_SIZE))
