"""How busy the machine was just before a timed job: the optional `load` field of every result.

Figures taken while other programs keep the cores busy are noisy (a two-thread product waits for a
descheduled thread; an epoch takes several times its quiet time), so a result carries the load it
was measured under and the Results page can flag it. Files written before this field existed have
no `load` key and read as `None`: the field is optional in every schema version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.results import fields as f

MAX_CORES = 1 << 16


@dataclass(frozen=True)
class MachineLoad:
    """One probe of the machine, taken while the job already held its devices."""

    cores: int  # logical cores this process may run on
    others_cores: float | None  # CPU other processes used during the probe, in cores (1.0: one core kept busy)
    load_average: float | None  # the OS's one-minute load average (None where the OS has none)
    free_cores: int  # cores left for this job: the default thread count
    busy: bool  # other programs took enough CPU that the figures may be noisy
    probe_s: float = 0.0  # how long the probe watched

    @property
    def notice(self) -> str | None:
        """The one line a page, the CLI and the Results page show beside a figure taken while busy."""
        if not self.busy:
            return None
        parts = []
        if self.others_cores is not None:
            parts.append(f"other programs used {self.others_cores:.1f} of {self.cores} cores")
        if self.load_average is not None:
            parts.append(f"load average {self.load_average:.1f}")
        return f"Machine busy: figures may be noisy ({', '.join(parts)} just before this run)."

    def to_json(self) -> dict[str, Any]:
        return {"cores": self.cores, "others_cores": self.others_cores, "load_average": self.load_average,
                "free_cores": self.free_cores, "busy": self.busy, "probe_s": self.probe_s}

    @classmethod
    def from_json(cls, value: Any, path: str) -> MachineLoad:
        v = f.obj(value, path)
        cores = f.count(f.field(v, "cores", path), f"{path}.cores", 1)
        if cores > MAX_CORES:
            raise f.fail(f"{path}.cores", f"at most {MAX_CORES} cores", cores)
        return cls(cores=cores, others_cores=f.number(v.get("others_cores"), f"{path}.others_cores", 0.0, MAX_CORES),
                   load_average=f.number(v.get("load_average"), f"{path}.load_average", 0.0, 1e6),
                   free_cores=f.count(f.field(v, "free_cores", path), f"{path}.free_cores", 1),
                   busy=f.flag(f.field(v, "busy", path), f"{path}.busy"),
                   probe_s=f.number(v.get("probe_s", 0.0), f"{path}.probe_s", 0.0, 60.0) or 0.0)


def read_load(value: Any, path: str) -> MachineLoad | None:
    """The optional field: absent or null (older files) reads as None."""
    return None if value is None else MachineLoad.from_json(value, path)
