"""How much memory there is: RAM (respecting a container's limit) and free device memory.

A container often sees the host's RAM in /proc/meminfo while its cgroup allows far less;
sizing a matrix by the host figure gets the process killed instead of refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import psutil
import torch

from core.platform import device_lock, gpu_ids, heap, sensors
from core.platform.devices import has_cuda_context

_CGROUP_V2 = Path("/sys/fs/cgroup")
_CGROUP_V1 = Path("/sys/fs/cgroup/memory")
_NO_LIMIT = 1 << 60  # cgroup v1 reports "no limit" as a huge page-aligned number


@dataclass(frozen=True)
class RamInfo:
    total_bytes: int
    available_bytes: int
    cgroup_limited: bool  # True when the container's limit, not the machine, set the figures


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    if not text or text == "max":
        return None
    try:
        return int(text)
    except ValueError:
        return None


def cgroup_memory(root_v2: Path = _CGROUP_V2, root_v1: Path = _CGROUP_V1) -> tuple[int, int] | None:
    """(limit, usage) in bytes of this process's memory cgroup, or None when unlimited or unknown."""
    for limit_file, usage_file in (
        (root_v2 / "memory.max", root_v2 / "memory.current"),
        (root_v1 / "memory.limit_in_bytes", root_v1 / "memory.usage_in_bytes"),
    ):
        limit = _read_int(limit_file)
        if limit is not None and limit < _NO_LIMIT:
            return limit, _read_int(usage_file) or 0
    return None


def ram_info() -> RamInfo:
    """Total and available RAM, the lower of the machine's and the cgroup's figures."""
    vm = psutil.virtual_memory()
    total, available = int(vm.total), int(vm.available)
    cgroup = cgroup_memory()
    if cgroup is None or cgroup[0] >= total:
        return RamInfo(total, available, cgroup_limited=False)
    limit, usage = cgroup
    return RamInfo(limit, max(0, min(available, limit - usage)), cgroup_limited=True)


def gpu_memory(index: int) -> tuple[int, int] | None:
    """(free, total) bytes of CUDA device `index`, asked so that no CUDA context is created: through NVML,
    else through this process's own context where it has one already; None when neither can say.

    `torch.cuda.mem_get_info` creates a context (hundreds of MB) on a GPU that has none, and keeps it for
    the life of the process: in the server, the `--ranks` launcher or a page's size slider that is memory
    taken from every GPU, and on a GPU in EXCLUSIVE_PROCESS compute mode it locks out the processes that
    will do the work (torchrun ranks, training workers, the cold-start child).
    """
    lib = sensors.nvml()
    if lib is not None:
        try:
            handle = gpu_ids.nvml_handle(lib, index)
            if handle is not None:
                info = lib.nvmlDeviceGetMemoryInfo(handle)
                return int(info.free), int(info.total)
        except Exception:  # noqa: BLE001 - NVMLError_NotSupported and kin: ask the context, if any
            pass
    if has_cuda_context(index):
        free, total = torch.cuda.mem_get_info(index)
        return int(free), int(total)
    return None


def free_device_bytes(device: torch.device) -> int:
    """Bytes a new allocation on `device` can use now.

    CUDA: the driver's free figure plus what torch's caching allocator holds but does not use,
    since torch hands that back to us before asking the driver; where it cannot be known without
    creating a context (no NVML, no context yet), the GPU's total: only a size larger than the whole
    GPU is refused here, and the allocation itself, in the process that makes it, finds out the rest
    (torch's out-of-memory error is caught). MPS: the recommended working set minus what is
    allocated. CPU: available RAM.
    """
    if device.type == "cuda":
        index = device.index or 0
        known = gpu_memory(index)
        free = int(torch.cuda.get_device_properties(index).total_memory) if known is None else known[0]
        cached = 0  # blocks this process cached there: none without a context, and then nothing is asked
        if has_cuda_context(index):
            cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(free + max(0, cached))
    if device.type == "mps":
        return int(torch.mps.recommended_max_memory() - torch.mps.driver_allocated_memory())
    return ram_info().available_bytes


def total_device_bytes(device: torch.device) -> int:
    """All the memory `device` has, whatever others hold of it now: a fixed figure for a fixed machine (the race's
    size plan is decided from it, core.matmul.sizes). CUDA: the GPU's memory (asked without creating a context);
    MPS: the recommended working set; CPU: RAM, or the container's limit where that is lower."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device.index or 0).total_memory)
    if device.type == "mps":
        return int(torch.mps.recommended_max_memory())
    return ram_info().total_bytes


def release_device_memory(device: torch.device) -> bool:
    """Give cached blocks back (after an out-of-memory error, at the end of a job); True if it was done now.

    torch's `empty_cache` frees the cached blocks of every GPU of the process and waits for each, so on
    CUDA it runs only where no other thread of this process holds a GPU (a job timing it): otherwise it
    is left for the last GPU job of the process to end (`release_pending_cache`).
    """
    if device.type == "cuda":
        return _empty_cuda_cache()
    if device.type == "mps":
        torch.mps.empty_cache()
        return True
    return False


_cache_pending = False  # a CUDA cache release was put off while another GPU was being timed


def _empty_cuda_cache() -> bool:
    global _cache_pending
    with device_lock.devices_held_elsewhere() as others:
        if any(d.startswith("cuda") for d in others):
            _cache_pending = True
            return False
        _cache_pending = False
        torch.cuda.empty_cache()  # other threads' claims wait for this: no job starts timing a GPU meanwhile
        return True


def release_pending_cache() -> bool:
    """The CUDA cache release put off while another GPU was timed, now if no other GPU is; True if done."""
    return _empty_cuda_cache() if _cache_pending else False


def give_back_heap() -> bool:
    """Hand the heap pages a CPU job freed back to the operating system; True if it was done now.

    A race's n = 2,048 matrices are 16 MiB each; once glibc has freed one such block it raises its mmap
    threshold, so the later ones come from the heap, and freeing them leaves the pages with the process: a
    server that ran one default race stayed about 70 MiB larger for good (a loop of the race's sizes in a
    thread: 300 MiB after, 231 after malloc_trim, 221 before). malloc_trim walks every arena under its lock,
    which would stall another thread's timed allocations, so it runs only while no other thread of this
    process holds a device.
    """
    with device_lock.devices_held_elsewhere() as others:
        return not others and heap.trim()
