"""Which physical GPU a CUDA index names: its UUID or PCI bus id, and NVML's handle of that GPU.

A CUDA index is this process's own number: under CUDA_VISIBLE_DEVICES=2,0 'cuda:0' is the machine's
third GPU, a torchrun launcher may give each rank one GPU that each calls 'cuda:0', and CUDA's default
order (fastest first) need not be NVML's (PCI bus order). So whatever names a GPU across processes (the
lock files, the order locks are taken in) or asks NVML about it goes by the GPU's own id. NVML's
index is used only where it cannot name another GPU: nothing renumbers CUDA's GPUs and CUDA sees one.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

import torch

ID_PREFIXES = ("GPU-", "MIG-")  # NVML's UUID strings: a whole GPU, a MIG slice


def uuid(index: int) -> str | None:
    """The GPU's UUID as torch gives it (no prefix), or None (an old torch, a driver that does not say)."""
    try:
        value = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    except (RuntimeError, AssertionError, ValueError):  # no driver, or an index that is not there
        return None
    text = str(value) if value else ""
    return text or None


def pci_bus_id(index: int) -> str | None:
    """'00000000:1E:00.0', NVML's form of the GPU's PCI address, where torch gives its parts; else None."""
    try:
        props = torch.cuda.get_device_properties(index)
    except (RuntimeError, AssertionError, ValueError):
        return None
    bus, dev, domain = (getattr(props, k, None) for k in ("pci_bus_id", "pci_device_id", "pci_domain_id"))
    if all(isinstance(v, int) for v in (bus, dev, domain)):
        return f"{domain:08X}:{bus:02X}:{dev:02X}.0"
    return None


def physical_id(index: int) -> str | None:
    """What every process calls this GPU: 'GPU-<uuid>', else 'PCI-<bus id>'; None when torch says neither."""
    found = uuid(index)
    if found:
        return found if found.startswith(ID_PREFIXES) else f"GPU-{found}"
    bus = pci_bus_id(index)
    return None if bus is None else f"PCI-{bus}"


def _index_is_nvmls(index: int) -> bool:
    """True where NVML's index `index` is surely CUDA's: nothing renumbers CUDA's GPUs and it sees only one."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        return False
    try:
        return index == 0 and torch.cuda.device_count() == 1
    except Exception:  # noqa: BLE001 - a broken driver: no handle rather than a wrong one
        return False


def nvml_handle(lib: ModuleType, index: int) -> Any | None:
    """NVML's handle of CUDA device `index`: by UUID, else by PCI bus id, else by index only where that is
    the same GPU; None when the GPU cannot be named (better no figure than another GPU's)."""
    found = uuid(index)
    if found:
        for name in ([found] if found.startswith(ID_PREFIXES) else [p + found for p in ID_PREFIXES]):
            try:
                return lib.nvmlDeviceGetHandleByUUID(name)
            except Exception:  # noqa: BLE001 - NVMLError_NotFound: the other prefix, or the PCI id
                continue
    bus = pci_bus_id(index)
    if bus is not None:
        try:
            return lib.nvmlDeviceGetHandleByPciBusId(bus)
        except Exception:  # noqa: BLE001
            pass
    if _index_is_nvmls(index):
        return lib.nvmlDeviceGetHandleByIndex(index)
    return None
