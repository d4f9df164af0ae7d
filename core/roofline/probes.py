"""The measured roofs of one device: memory bandwidth, the fixed cost of one operation, the copy rates.

Each probe is one callable timed by `core.platform.timing.measure` (warm-up, a synchronize before
every clock read, blocks of at least 10 ms, median), the same engine that times the Matmul race,
so a roof and a matmul point are measured the same way. The compute roof needs no probe of its
own: it is the best rate among the sweep's large products.

Each function gives one repeat's figure (the copy rates too, through `Copies`); core.roofline.run
calls them REPEATS times, the series taking turns, and core.roofline.spread turns the repeats into a
constant and its spread. The
fixed costs are a low quantile of the samples (spread.LOW_QUANTILE), not their median: a
neighbour's stall only ever adds time.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from core.matmul.paired import interleave
from core.platform import timing
from core.platform.timing import Measurement
from core.roofline.spread import LOW_QUANTILE, quantile

CPU_STREAM_BYTES = 64 * 2**20  # per buffer: twice most L3 caches, so the copy streams from RAM
GPU_STREAM_BYTES = 256 * 2**20  # far above any GPU's L2
COPY_BYTES = 64 * 2**20  # host <-> device transfers
LAUNCH_N = 8  # a product this small does no measurable work: its time is the cost of starting one
WAKE_ELEMENTS_PER_THREAD = 32_768  # torch's grain size: an elementwise op gives each thread at least this many


def stream_bytes(device: torch.device) -> int:
    return CPU_STREAM_BYTES if device.type == "cpu" else GPU_STREAM_BYTES


def bandwidth_gbs(device: torch.device, dtype: torch.dtype, *, budget_s: float, nbytes: int | None = None) -> float:
    """STREAM-style copy of one large buffer into another on the device: (read + write bytes) / median time."""
    nbytes = nbytes or stream_bytes(device)
    count = nbytes // torch.empty((), dtype=dtype).element_size()
    src = torch.ones(count, dtype=dtype, device=device)
    dst = torch.empty_like(src)
    m = timing.measure(functools.partial(dst.copy_, src), device, budget_s=budget_s, min_samples=3)
    return rate_gbs(2 * count * src.element_size(), m)


def launch_s(device: torch.device, dtype: torch.dtype, *, budget_s: float) -> float:
    """Low quantile of the time of one tiny product (n = LAUNCH_N), synced like every other measurement."""
    a = torch.ones(LAUNCH_N, LAUNCH_N, dtype=dtype, device=device)
    out = torch.empty_like(a)
    m = timing.measure(functools.partial(torch.matmul, a, a, out=out), device, budget_s=budget_s)
    return quantile(m.times_s, LOW_QUANTILE)


def wake_s(threads: int, *, budget_s: float) -> float:
    """The fixed cost of splitting one operation across `threads` CPU threads: t(k) - t(1) / k.

    A tiny product runs on one thread whatever the setting, so `launch_s` cannot see what a product
    big enough to split pays to wake the other threads, and that cost decides where more threads
    start to win. An add of one grain per thread is split evenly: on k threads its work takes 1/k of
    the one-thread time, and what it takes beyond that is the wake-up. The two are timed in
    alternation (core.matmul.paired.interleave), so a neighbour slows both; each is a low quantile
    of its samples. Never below zero.
    """
    cpu = torch.device("cpu")
    x = torch.ones(threads * WAKE_ELEMENTS_PER_THREAD)
    out = torch.empty_like(x)
    add = functools.partial(torch.add, x, 1.0, out=out)

    def on(count: int) -> Callable[[int], float]:
        def block(calls: int) -> float:
            with timing.torch_threads(count):
                return timing.time_block(add, calls, cpu)
        return block

    one, split = interleave([on(1), on(threads)], budget_s)
    return max(0.0, quantile(split.times_s, LOW_QUANTILE) - quantile(one.times_s, LOW_QUANTILE) / threads)


DIRECTIONS = ("h2d", "d2h")  # host -> device, device -> host


class Copies:
    """The copy-rate probes of one GPU: host <-> device transfers of one buffer, pageable or pinned.

    Each call is one repeat's figure of one direction; the buffers are made on first use and kept, so
    the roofline's rounds (the series taking turns, REPEATS times, like every other constant) time the
    transfers, not the allocator or the pinning.
    """

    def __init__(self, device: torch.device, nbytes: int = COPY_BYTES) -> None:
        self.device, self.nbytes = device, nbytes
        self._buffers: dict[bool, tuple[torch.Tensor, torch.Tensor]] = {}

    def buffers(self, pinned: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """(host, device) buffers; the host one page-locked when `pinned`."""
        if pinned not in self._buffers:
            host = torch.ones(self.nbytes // 4, dtype=torch.float32)
            if pinned:
                host = host.pin_memory()
            self._buffers[pinned] = (host, torch.empty_like(host, device=self.device))
        return self._buffers[pinned]

    def rate_gbs(self, direction: str, *, pinned: bool, budget_s: float) -> float:
        """GB/s of one direction ("h2d" or "d2h"), the median of its blocks."""
        host, dev = self.buffers(pinned)
        dst, src = (dev, host) if direction == "h2d" else (host, dev)
        m = timing.measure(functools.partial(dst.copy_, src), self.device, budget_s=budget_s, min_samples=3)
        return rate_gbs(host.numel() * host.element_size(), m)


def rate_gbs(nbytes: int, m: Measurement) -> float:
    return nbytes / m.median_s / 1e9
