"""The machine a run ran on, as `core.platform.hardware.inspect_machine().record()` gives it: a typed `Machine`.

Checked on import, so `"gpus": 5` or a GPU without an index is refused with its path instead of
failing later in a legend. Every reader takes the typed record (`machine.gpus[0].name`), never a dict.
Its JSON is the object it was read from, key for key: keys this version does not know are kept
(`extra`) and written back, and a key a file left out stays out (`keys`), so a run's machine reads and
writes as it came; `{}` is an unknown machine.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, PlainValidator, SerializerFunctionWrapHandler, model_serializer, model_validator
from pydantic.dataclasses import dataclass

from core.results import fields as f
from core.results.schema import Declared, field_names

OptionalCount = Annotated[int | None, PlainValidator(lambda v: None if v is None else f.count_between(0)(v))]


@dataclass(frozen=True, kw_only=True)
class Open(Declared):
    """A record written back as it was read: unknown keys kept in `extra`, absent keys left out (`keys`)."""

    extra: dict[str, Any] = Field(default_factory=dict, repr=False)
    keys: tuple[str, ...] | None = Field(default=None, repr=False)  # the keys it was read with; None: built here

    @model_validator(mode="before")
    @classmethod
    def _keep_as_read(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = set(field_names(cls)) - {"extra", "keys"}
        return {**{k: v for k, v in data.items() if k in known},
                "extra": {k: v for k, v in data.items() if k not in known}, "keys": tuple(data)}

    @model_serializer(mode="wrap")
    def _write_as_read(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        extra, keys = data.pop("extra", {}), data.pop("keys", None)
        if keys is None:
            return {**data, **extra}
        return {k: data[k] if k in data else extra[k] for k in keys if k in data or k in extra}


@dataclass(frozen=True, kw_only=True)
class Cpu(Open):
    name: f.OptionalText = None
    capability: f.OptionalText = None
    physical_cores: OptionalCount = None
    logical_cores: OptionalCount = None
    torch_threads: OptionalCount = None
    ram_total_bytes: OptionalCount = None
    ram_available_bytes: OptionalCount = None


@dataclass(frozen=True, kw_only=True)
class Gpu(Open):
    index: f.Count
    name: f.OptionalText = None
    compute_capability: f.OptionalText = None
    total_memory_bytes: OptionalCount = None
    free_memory_bytes: OptionalCount = None
    multiprocessors: OptionalCount = None


@dataclass(frozen=True, kw_only=True)
class Machine(Open):
    cpu: Cpu | None = None
    gpus: f.Items[Gpu] = ()
    mps_available: f.OptionalFlag = None
    tf32_matmul: f.OptionalFlag = None
    torch_version: f.OptionalText = None
    cuda_version: f.OptionalText = None
    notes: f.Items[f.Note] = ()

    def gpu(self, index: int) -> Gpu | None:
        """The GPU with this CUDA index, if the record names it."""
        return next((g for g in self.gpus if g.index == index), None)

    @property
    def hardware(self) -> tuple[Any, ...]:
        """What makes two records one machine for a comparison of timings: the CPU (name, cores, RAM), each GPU
        (index, name, memory) and Apple's MPS; not what changes from minute to minute (free memory, TF32, notes).
        An unknown machine ({}) is like no other: its tuple holds only None and ()."""
        cpu = self.cpu
        return ((None, None, None, None) if cpu is None else
                (cpu.name, cpu.physical_cores, cpu.logical_cores, cpu.ram_total_bytes),
                tuple((g.index, g.name, g.total_memory_bytes) for g in self.gpus), self.mps_available)

    @property
    def known(self) -> bool:
        """Does the record name any hardware at all?"""
        return (self.cpu is not None and self.cpu.name is not None) or bool(self.gpus)


def unknown_machine() -> Machine:
    """A machine nothing is known of: written as {}."""
    return Machine(keys=())


def read_machine(value: Any, path: str) -> Machine:
    """The machine object, checked; {} reads as an unknown machine."""
    machine: Machine = f.read(Machine, value, path)
    return machine

