"""The machine a run ran on, as `core.platform.hardware.inspect_machine().to_dict()` writes it.

Read field by field on import, so `"gpus": 5` or a GPU without an index is refused with its
path instead of failing later in a legend; keys this version does not know are kept.
"""

from __future__ import annotations

from typing import Any

from core.results import fields as f

CPU_COUNTS = ("physical_cores", "logical_cores", "torch_threads", "ram_total_bytes", "ram_available_bytes")
GPU_COUNTS = ("total_memory_bytes", "free_memory_bytes", "multiprocessors")


def read_machine(value: Any, path: str) -> dict[str, Any]:
    """The machine object, checked; {} reads as an unknown machine."""
    machine = f.obj(value, path)
    cpu = machine.get("cpu")
    if cpu is not None:
        _read_cpu(cpu, f"{path}.cpu")
    f.list_of(machine.get("gpus") or [], f"{path}.gpus", _read_gpu)
    f.optional_flag(machine.get("mps_available"), f"{path}.mps_available")
    f.optional_flag(machine.get("tf32_matmul"), f"{path}.tf32_matmul")
    f.optional_text(machine.get("torch_version"), f"{path}.torch_version")
    f.optional_text(machine.get("cuda_version"), f"{path}.cuda_version")
    f.list_of(machine.get("notes") or [], f"{path}.notes", lambda v, p: f.text(v, p, max_chars=2000, empty=True))
    return machine


def _read_cpu(value: Any, path: str) -> None:
    cpu = f.obj(value, path)
    f.optional_text(cpu.get("name"), f"{path}.name")
    f.optional_text(cpu.get("capability"), f"{path}.capability")
    for key in CPU_COUNTS:
        f.optional_count(cpu.get(key), f"{path}.{key}")


def _read_gpu(value: Any, path: str) -> None:
    gpu = f.obj(value, path)
    f.count(f.field(gpu, "index", path), f"{path}.index")
    f.optional_text(gpu.get("name"), f"{path}.name")
    f.optional_text(gpu.get("compute_capability"), f"{path}.compute_capability")
    for key in GPU_COUNTS:
        f.optional_count(gpu.get(key), f"{path}.{key}")
