"""How much memory there is: RAM (respecting a container's limit) and free device memory.

A container often sees the host's RAM in /proc/meminfo while its cgroup allows far less;
sizing a matrix by the host figure gets the process killed instead of refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import psutil
import torch

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


def free_device_bytes(device: torch.device) -> int:
    """Bytes a new allocation on `device` can use now.

    CUDA: the driver's free figure plus what torch's caching allocator holds but does not use,
    since torch hands that back to us before asking the driver. MPS: the recommended working set
    minus what is allocated. CPU: available RAM.
    """
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
        return int(free + max(0, cached))
    if device.type == "mps":
        return int(torch.mps.recommended_max_memory() - torch.mps.driver_allocated_memory())
    return ram_info().available_bytes


def release_device_memory(device: torch.device) -> None:
    """Give cached blocks back after an out-of-memory error, so the next size starts clean."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
    elif device.type == "mps":
        torch.mps.empty_cache()
