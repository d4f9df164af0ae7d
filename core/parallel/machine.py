"""What this machine offers a Why-parallel section: its GPU, its cores and their load, its free memory.

Every section asks the same questions before it times anything, so they are answered once here.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from core.errors import DashboardError
from core.platform.devices import available_devices, device_key
from core.platform.machine_load import load_average, usable_cores  # noqa: F401 - the sections' one source
from core.platform.memory import free_device_bytes
from core.platform.units import byte_size

CPU = "cpu"
FLOAT32_BYTES = 4
LIVE_COPIES = 3  # input, result and a workspace alive at once while a product runs


def pick_gpu(devices: Sequence[str] | None = None) -> str | None:
    """The first non-CPU device of `devices` (default: what is present), or None."""
    names = available_devices() if devices is None else list(devices)
    return next((d for d in names if d != CPU), None)


def timed_devices(devices: Sequence[str] | None = None) -> tuple[str, ...]:
    """What a timed section compares, and so holds: the CPU, and the first GPU if there is one."""
    gpu = pick_gpu(devices)
    return (CPU, gpu) if gpu else (CPU,)


def check_threads(threads: int | None) -> None:
    if threads is not None and threads < 1:
        raise DashboardError(f"thread count must be at least 1, got {threads}")


def thread_ladder(max_threads: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to and including max_threads: every doubling, so a 64-core box stays quick."""
    check_threads(max_threads)
    ladder = [1 << i for i in range(max_threads.bit_length()) if 1 << i <= max_threads]
    if ladder[-1] != max_threads:
        ladder.append(max_threads)
    return tuple(ladder)


def require_memory(values: int, device: torch.device, what: str) -> None:
    """Refuse, with a message, a size whose float32 tensors would not fit in free memory, before
    allocating: an out-of-memory crash would take the whole dashboard down with it."""
    need = values * FLOAT32_BYTES
    free = free_device_bytes(device)
    if need > free:
        raise DashboardError(f"{what} needs about {byte_size(need)} on {device_key(device)} "
                             f"but only {byte_size(free)} is free; "
                             "choose a smaller size")
