"""The one out-of-memory wrapper of the race: an allocation that fails despite the memory guard becomes
`RanOutOfMemory` after the memory is handed back, so the caller can skip the size and go on.

The engine (one series) and the paired rounds (every series of a size) both run their work through
`releasing_on_oom`.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from typing import TypeVar

import torch

from core.errors import DashboardError
from core.platform.devices import dead_context, device_key
from core.platform.memory import release_device_memory

T = TypeVar("T")
OutOfMemoryError: type[BaseException] = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
OUT_OF_MEMORY_TEXTS = (
    "out of memory",  # CUDA's caching allocator (torch.OutOfMemoryError), MPS
    "can't allocate memory",  # the CPU allocator
    "cublas_status_alloc_failed",  # cuBLAS could not allocate its workspace
    "cublas_status_not_initialized",  # cuBLAS could not create its handle: on a full GPU, for want of memory
)


class RanOutOfMemory(DashboardError):
    """An allocation failed anyway; the memory has been released and the caller may go on."""


def is_out_of_memory(exc: BaseException) -> bool:
    """torch's OOM error, or the RuntimeErrors the CPU and MPS allocators and cuBLAS raise instead.

    A cuBLAS error on a CUDA context an earlier error broke is not a lack of memory: that raises the
    DeadContext (core.platform.devices.dead_context) saying so instead."""
    if isinstance(exc, OutOfMemoryError):
        return True
    text = str(exc).lower()
    if isinstance(exc, RuntimeError) and "cublas_status" in text and (dead := dead_context(exc)) is not None:
        raise dead from exc  # a context broken by an earlier error: not a lack of memory (issue 33)
    return isinstance(exc, RuntimeError) and any(t in text for t in OUT_OF_MEMORY_TEXTS)


def releasing_on_oom(work: Callable[[], T], devices: Sequence[torch.device], what: str) -> T:
    """Run `work`; turn an out-of-memory error into RanOutOfMemory after freeing every device's memory.

    Any other error is re-raised as it is. The message names `what` ("n=512 float32") and the devices.
    """
    try:
        return work()
    except Exception as exc:  # only out-of-memory is handled, the rest re-raised
        if not is_out_of_memory(exc):
            raise
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    # Leaving the except block dropped the traceback and with it the frames holding the tensors.
    gc.collect()
    for device in devices:
        release_device_memory(device)
    where = ", ".join(device_key(d) for d in devices)
    raise RanOutOfMemory(f"{what} on {where} ran out of memory ({reason}); the memory was released; "
                         "choose a smaller size")
