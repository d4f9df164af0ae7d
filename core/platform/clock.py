"""The one clock every timing in this project reads.

GPUs run asynchronously: `a @ a` on CUDA returns as soon as the kernel is queued. Reading the
clock without waiting measures the queueing, not the work, and makes the GPU look free. So
`now(device)` synchronizes the device first, exactly like torch.utils.benchmark's timer.
"""

from __future__ import annotations

import time

import torch

from core.platform.devices import synchronize


def read_clock() -> float:
    """Seconds from a monotonic high-resolution clock; tests replace this with a fake."""
    return time.perf_counter()


def now(device: torch.device) -> float:
    """Wait for `device`, then read the clock. Use this for every start and stop reading."""
    synchronize(device)
    return read_clock()


def now_unsynced() -> float:
    """Read the clock without waiting: wrong on a GPU on purpose, to show the classic bug."""
    return read_clock()
