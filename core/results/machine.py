"""The machine a run ran on, as `core.platform.hardware.inspect_machine().to_dict()` writes it.

Checked on import, so `"gpus": 5` or a GPU without an index is refused with its path instead of
failing later in a legend. A result keeps the machine as the plain object it came as: keys this
version does not know are kept, and `Machine` only declares what must hold of the ones it does.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import PlainValidator
from pydantic.dataclasses import dataclass

from core.results import fields as f

OptionalCount = Annotated[int | None, PlainValidator(lambda v: None if v is None else f.count_between(0)(v))]


@dataclass(frozen=True, kw_only=True)
class Cpu:
    name: f.OptionalText = None
    capability: f.OptionalText = None
    physical_cores: OptionalCount = None
    logical_cores: OptionalCount = None
    torch_threads: OptionalCount = None
    ram_total_bytes: OptionalCount = None
    ram_available_bytes: OptionalCount = None


@dataclass(frozen=True, kw_only=True)
class Gpu:
    index: f.Count
    name: f.OptionalText = None
    compute_capability: f.OptionalText = None
    total_memory_bytes: OptionalCount = None
    free_memory_bytes: OptionalCount = None
    multiprocessors: OptionalCount = None


@dataclass(frozen=True, kw_only=True)
class Machine:
    cpu: Cpu | None = None
    gpus: f.Items[Gpu] = ()
    mps_available: f.OptionalFlag = None
    tf32_matmul: f.OptionalFlag = None
    torch_version: f.OptionalText = None
    cuda_version: f.OptionalText = None
    notes: f.Items[f.Note] = ()


def read_machine(value: Any, path: str) -> dict[str, Any]:
    """The machine object, checked and kept as it came; {} reads as an unknown machine."""
    f.read(Machine, value, path)
    result: dict[str, Any] = value
    return result


def _checked(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise f.Expected("a JSON object")
    f.check(Machine, value)
    return value


MachineInfo = Annotated[dict[str, Any], PlainValidator(_checked)]  # a result's `machine` field
