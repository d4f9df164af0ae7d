"""What this machine has: CPU, RAM, each CUDA GPU, Apple MPS, and the software versions.

Inspection never raises and never hangs: each query that fails is recorded in `notes` and
its field left as None, so a half-broken CUDA install still yields a useful report.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psutil
import torch

from core.platform import devices, precision
from core.platform.memory import gpu_memory, ram_info
from core.results.machine import Machine, read_machine

T = TypeVar("T")


@dataclass(frozen=True)
class CpuInfo:
    name: str
    physical_cores: int | None
    logical_cores: int | None
    torch_threads: int
    capability: str | None  # SIMD level torch dispatches to, e.g. "AVX512"
    ram_total_bytes: int
    ram_available_bytes: int


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str | None
    total_memory_bytes: int | None
    free_memory_bytes: int | None  # as the driver reports it: other processes' use counts
    compute_capability: str | None  # e.g. "9.0"
    multiprocessors: int | None

    @property
    def used_memory_bytes(self) -> int | None:
        if self.total_memory_bytes is None or self.free_memory_bytes is None:
            return None
        return self.total_memory_bytes - self.free_memory_bytes


@dataclass(frozen=True)
class MachineInfo:
    cpu: CpuInfo
    gpus: list[GpuInfo]
    mps_available: bool
    torch_version: str
    cuda_version: str | None  # the CUDA torch was built with; None for CPU builds
    tf32_matmul: bool  # whether float32 CUDA matmuls may use TF32 tensor cores
    notes: list[str] = field(default_factory=list)  # what could not be found out, and why

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus) or self.mps_available

    def to_dict(self) -> dict[str, Any]:
        """The `python -m core devices --json` object."""
        return asdict(self)

    def record(self) -> Machine:
        """The machine as a run saves it (core.results.machine): every key of `to_dict`, typed."""
        return read_machine(self.to_dict(), "machine")


def _try(notes: list[str], what: str, query: Callable[[], T]) -> T | None:
    try:
        return query()
    except Exception as exc:  # noqa: BLE001 - any driver failure becomes a note, not a crash
        notes.append(f"{what}: unknown ({type(exc).__name__}: {exc})")
        return None


def cpu_name() -> str:
    """The marketing name of the CPU, from the OS where the platform module only knows 'x86_64'."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if platform.system() == "Darwin":
        import subprocess

        try:
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5
            )
            if out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown CPU"


def inspect_cpu(notes: list[str]) -> CpuInfo:
    ram = ram_info()
    if ram.cgroup_limited:
        notes.append("RAM figures are this container's memory limit, lower than the machine's RAM")
    return CpuInfo(
        name=cpu_name(),
        physical_cores=_try(notes, "physical cores", lambda: psutil.cpu_count(logical=False)),
        logical_cores=os.cpu_count(),
        torch_threads=torch.get_num_threads(),
        capability=_try(notes, "CPU SIMD capability", torch.backends.cpu.get_cpu_capability),
        ram_total_bytes=ram.total_bytes,
        ram_available_bytes=ram.available_bytes,
    )


def inspect_gpu(index: int, notes: list[str], free_memory: bool = False) -> GpuInfo:
    """The GPU's properties; its free memory only when asked (see inspect_machine)."""
    props = _try(notes, f"GPU {index} properties", lambda: torch.cuda.get_device_properties(index))
    free_total = _try(notes, f"GPU {index} free memory", lambda: gpu_memory(index)) if free_memory else None
    if free_memory and free_total is None and not any(n.startswith(f"GPU {index} free memory") for n in notes):
        notes.append(f"GPU {index} free memory: unknown (NVML, from nvidia-ml-py and the driver, did not answer, and "
                     "asking CUDA would create a context on the GPU)")
    total = getattr(props, "total_memory", None)
    if total is None and free_total is not None:
        total = int(free_total[1])
    capability = f"{props.major}.{props.minor}" if props is not None else None
    return GpuInfo(
        index=index,
        name=getattr(props, "name", None),
        total_memory_bytes=None if total is None else int(total),
        free_memory_bytes=None if free_total is None else int(free_total[0]),
        compute_capability=capability,
        multiprocessors=getattr(props, "multi_processor_count", None),
    )


def inspect_machine(free_memory: bool = False) -> MachineInfo:
    """A fresh report; cheap enough (a few ms, plus CUDA init the first time) to call per refresh.

    `free_memory`: also ask each GPU how much memory is free, through NVML (core.platform.memory.gpu_memory):
    CUDA's own query would create a context (hundreds of MB) on every GPU and, on a GPU in EXCLUSIVE_PROCESS
    mode, lock out the processes that do the work (a cold-start child, torchrun workers). The records saved
    with each run leave it out; the Hardware page, `python -m core devices` and the self-check ask for it.
    """
    notes: list[str] = []
    cpu = inspect_cpu(notes)
    count = devices.cuda_count()
    if count == 0 and torch.version.cuda is not None:
        notes.append("torch was built with CUDA, but no CUDA device is visible "
                     "(no driver, or CUDA_VISIBLE_DEVICES hides it)")
    gpus = [inspect_gpu(i, notes, free_memory) for i in range(count)]
    tf32 = bool(_try(notes, "TF32 setting", precision.tf32_enabled))
    return MachineInfo(
        cpu=cpu,
        gpus=gpus,
        mps_available=devices.mps_available(),
        torch_version=torch.__version__,
        cuda_version=torch.version.cuda,
        tf32_matmul=tf32,
        notes=notes,
    )
