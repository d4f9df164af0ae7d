"""How busy the machine was just before a timed job: the optional `load` field of every result.

Figures taken while other programs keep the cores busy are noisy (a two-thread product waits for a
descheduled thread; an epoch takes several times its quiet time), so a result carries the load it
was measured under and the Results page can flag it. Files written before this field existed have
no `load` key and read as `None`: the field is optional in every schema version.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import PlainValidator
from pydantic.dataclasses import dataclass

from core.results import fields as f
from core.results.schema import Declared

MAX_CORES = 1 << 16


def _probe_seconds(value: object) -> float:
    return f.number_between(0.0, 60.0)(value) or 0.0  # null (not recorded) reads as 0


@dataclass(frozen=True, kw_only=True)
class MachineLoad(Declared):
    """One probe of the machine, taken while the job already held its devices."""

    cores: Annotated[int, PlainValidator(f.count_between(1, MAX_CORES))]  # logical cores this process may run on
    # CPU others used, in cores
    others_cores: Annotated[float | None, PlainValidator(f.number_between(0.0, MAX_CORES))] = None
    # the OS's 1-minute load average
    load_average: Annotated[float | None, PlainValidator(f.number_between(0.0, 1e6))] = None
    free_cores: f.Size  # cores left for this job: the default thread count
    busy: f.Flag  # other programs took enough CPU that the figures may be noisy
    probe_s: Annotated[float, PlainValidator(_probe_seconds)] = 0.0  # how long the probe watched

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

