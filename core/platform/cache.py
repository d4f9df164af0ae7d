"""Cold caches on purpose: evict the caches before each timed call, outside the clock.

A benchmark that repeats one product on the same matrices times it with warm caches: from the
second call on, a small product's A, B and C sit in the CPU's caches (or the GPU's L2), so it runs
faster than it would in a program that touched other data in between. That is the default (what
torch.utils.benchmark does, and what a loop over one layer sees); "cold" is the other honest answer.
With cold caches each repetition is one call, and before it:

- on the CPU a buffer twice the last-level cache is read and written (an add, not a memset: glibc's
  memset of a large buffer uses non-temporal stores, which bypass the cache and evict nothing), so
  whatever the product left in any cache level is gone;
- on a GPU a buffer twice its L2 is zeroed (Triton's `do_bench` zeroes one buffer before every
  repetition; one L2's worth (4 MB on a T4, 40 on an A100, 50 on an H100) may leave part of the
  operands cached, as the L2's replacement is not pure LRU either).

Neither is timed: on the CPU the flush runs before the call's first clock read; on a GPU the zeroing
is queued and the call timed by CUDA events recorded after it (core.platform.timing.time_after_flush),
so neither the flush nor the host's launch latency is in the sample (tests/platform/test_cache.py checks the
order under a fake clock and fake events).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from core.errors import DashboardError
from core.platform.devices import synchronize
from core.results.matmul import CACHE_CHOICES  # the page's radio and `matmul --cache`; warm is the default
SYS_CPU = Path("/sys/devices/system/cpu")
FALLBACK_LLC_BYTES = 32 * 2**20  # a desktop or server L3 of today; used where the OS will not say
MIN_LLC_BYTES, MAX_LLC_BYTES = 2**20, 2**30  # a size outside is a misread (a unit lost), not a cache
FALLBACK_L2_BYTES = 128 * 2**20  # for a GPU whose properties lack L2_cache_size: twice it is do_bench's 256 MB
EVICT_FACTOR = 2  # touch twice the last-level cache / the GPU's L2 (their replacement policies are not pure LRU)


def check_cache(choice: str) -> str:
    if choice not in CACHE_CHOICES:
        raise DashboardError(f"cache must be one of {', '.join(CACHE_CHOICES)}, not {choice!r}")
    return choice


def parse_size(text: str) -> int | None:
    """'32768K', '8M', '1024' (bytes) as in /sys/.../cache/index*/size; None if unreadable."""
    text = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in "KMG" else text
    return int(digits) * scale if digits.isdigit() else None


def llc_from_sys(root: Path = SYS_CPU) -> int | None:
    """The largest cache of the highest level listed under /sys (Linux), in bytes."""
    best: tuple[int, int] | None = None
    for index in root.glob("cpu*/cache/index*"):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = parse_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if size is not None and kind in ("Unified", "Data") and (best is None or (level, size) > best):
            best = (level, size)
    return None if best is None else best[1]


def llc_from_sysconf() -> int | None:
    """glibc's view (it reads CPUID): level 3, else level 2; None where sysconf has no such name."""
    for name in ("SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
        try:
            value = os.sysconf(name)
        except (ValueError, OSError, AttributeError):
            continue
        if value > 0:
            return int(value)
    return None


def llc_bytes(root: Path = SYS_CPU) -> int:
    """The CPU's last-level cache in bytes: /sys, then sysconf, then FALLBACK_LLC_BYTES; a size outside
    MIN_LLC_BYTES..MAX_LLC_BYTES is taken for a misread and skipped."""
    for found in (llc_from_sys(root), llc_from_sysconf()):
        if found is not None and MIN_LLC_BYTES <= found <= MAX_LLC_BYTES:
            return found
    return FALLBACK_LLC_BYTES


def gpu_l2_bytes(device: torch.device) -> int:
    """The GPU's L2 in bytes from its properties (FALLBACK_L2_BYTES where torch does not say)."""
    if device.type != "cuda":
        return FALLBACK_L2_BYTES
    size = getattr(torch.cuda.get_device_properties(device.index or 0), "L2_cache_size", 0)
    return int(size) if isinstance(size, int) and size > 0 else FALLBACK_L2_BYTES


@dataclass
class CacheFlush:
    """The hook run before each timed call with cold caches; `cost_s` (one flush, measured once) lets
    a time budget count the flushes it does not time."""

    buffer: torch.Tensor
    device: torch.device
    cost_s: float = 0.0

    def __call__(self) -> None:
        if self.device.type == "cpu":
            self.buffer.add_(1)  # reads and writes every line
        else:
            self.buffer.zero_()  # as do_bench; queued before the call's start event, so never timed


def flush_bytes(device: torch.device, cache: str) -> int:
    """Bytes the flush buffer takes on `device` (RAM for the CPU): 0 with warm caches. The memory guard
    counts them, so a size near the limit is refused before anything is allocated, not killed after."""
    if check_cache(cache) == "warm":
        return 0
    nbytes = EVICT_FACTOR * (llc_bytes() if device.type == "cpu" else gpu_l2_bytes(device))
    return nbytes // 4 * 4  # whole int32 elements, as allocated


def cache_flush(device: torch.device, cache: str) -> CacheFlush | None:
    """The flush for `device` with cold caches; None with warm ones (nothing to do)."""
    nbytes = flush_bytes(device, cache)
    if nbytes == 0:
        return None
    flush = CacheFlush(torch.zeros(nbytes // 4, dtype=torch.int32, device=device), device)
    flush()  # first touch: page faults, not a flush's cost
    synchronize(device)
    start = time.perf_counter()
    flush()
    synchronize(device)
    flush.cost_s = time.perf_counter() - start
    return flush
