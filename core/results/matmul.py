"""The matmul sweep's result: what `python -m core matmul --json` prints and the store keeps (kind "matmul").

Version 3 (this one) keeps each crossover as one record (core.results.crossover.Crossover) in
`crossovers`, and no sentence. Version 2 named the kind "matmul", as the store always did, and kept the
crossover in three more shapes (a sentence per comparison, a `crossover` interval, the floats
`crossover_n` and `crossover_end_to_end_n`); version 1 files said `"kind": "matmul_race"` (or had no
kind: the store's own rows and hand-made files) and may lack the optional columns, which read as null.
All read through `MatmulSweep.from_json` (core.results.crossover.upgrade_sweep turns the old crossover
fields into records); it writes 3.

`run_sweep` (core.matmul.sweep) returns a MatmulSweep itself and each timed size is a MatmulPoint
from the engine, so a new column is one field here: the sweep, the JSON, the store, the import,
the results table and the CSV all take it from the declaration.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, PlainValidator, model_validator
from pydantic.dataclasses import dataclass

from core.results import fields as f
from core.results.crossover import (SWEEP_VERSION, Crossover, Verdict, pick_headline, sentence, short, shown_order,
                                    upgrade_sweep)
from core.results.guess import Guess
from core.results.load import MachineLoad
from core.results.machine import MachineInfo
from core.results.schema import Declared, Kind, columns

KIND = "matmul"
VERSION = SWEEP_VERSION  # 3
OLD_KIND_NAMES = ("matmul_race",)  # version 1's name for the same object
CACHE_CHOICES = ("warm", "cold")  # core.platform.cache's: the matrices left in cache between repetitions, or evicted
LATE = Field(default=None, exclude_if=f.omitted_when_none)  # a key a later release added: written only when set


@dataclass(frozen=True, kw_only=True)
class MatmulPoint(Declared):
    """One timed size of one series: a row of the results table and of the JSON `results` list.

    The statistics are those of the synchronized samples `times_s` (per call, one per timed block);
    they are stored too, because version 1 files carry the statistics without the samples.
    """

    device: f.Device
    n: f.Size
    dtype: f.Name
    series: f.OptionalText = None  # the chart line: 'cpu float32 2 threads', 'cuda:0 float32 TF32 off'
    tf32: f.OptionalFlag = None  # TF32 setting in effect during CUDA float32 timing
    threads: f.OptionalSize = None  # torch threads in effect during the CPU timing
    median_s: f.Number
    iqr_s: f.Number
    q1_s: f.Number = None
    q3_s: f.Number = None
    min_s: f.Number = None
    max_s: f.Number = None
    samples: f.Count
    calls_per_block: f.OptionalSize = None
    first_call_s: f.Number = None  # the cold warm-up call, never a sample
    gflops: f.Number
    unsynced_s: f.Number  # the same product timed without waiting (the classic bug); null on the CPU
    h2d_s: f.Number = None  # host->device copy of A and B (end to end on a GPU); 0 on the CPU
    d2h_s: f.Number = None  # device->host copy of C
    end_to_end_s: f.Number = None  # copy in + product + copy out
    rel_error: f.Number  # ||C - C64|| / ||C64|| on sampled rows; null when not checked
    times_s: f.Items[Annotated[float | None, PlainValidator(f.number_between())]] = ()
    timed_s: f.Number = LATE  # seconds inside timed blocks (all measurements), for the sweep-overhead bench
    others_cores: f.Number = LATE  # CPU other programs used while this size was timed, in cores (its verdict's busy flag)
    cpu_mhz: f.Number = LATE  # the CPU's current clock after the size (core.platform.sensors), where the OS says
    gpu_sm_mhz: f.Number = LATE  # a CUDA GPU's SM clock after the size (NVML)
    gpu_temperature_c: f.Number = LATE
    gpu_power_w: f.Number = LATE
    throttle: f.OptionalText = LATE  # the GPU's throttle reasons seen before or after the size: "sw_power_cap, hw_thermal"
    throttled: f.OptionalFlag = LATE  # the GPU throttled while the size was timed: its figures are marked, not trusted

    @property
    def is_gpu(self) -> bool:
        return self.device != "cpu"

    @property
    def label(self) -> str:
        """The series this point belongs to (files without `series` name it by device and dtype)."""
        return self.series or f"{self.device} {self.dtype}"


POINT_COLUMNS = tuple(columns(MatmulPoint))  # the results table's columns, in the declaration's order


@dataclass(frozen=True, kw_only=True)
class SkippedSize(Declared):
    """A size of a series the sweep did not time, and why."""

    device: f.Device
    n: f.Size
    dtype: f.Name
    series: f.Text
    reason: f.Name  # "memory" (refused before allocating), "out_of_memory" (failed anyway), "time" (guard)
    message: f.Message


@dataclass(frozen=True, kw_only=True)
class MatmulSweep(Kind):
    """A whole sweep as saved: its points, crossovers, skips and the machine it ran on."""

    kind: ClassVar[str] = KIND
    schema_version: ClassVar[int] = VERSION

    results: f.Measured[MatmulPoint]
    crossovers: f.Items[Crossover] = ()  # one per (challenger, baseline, time column): core.results.crossover
    skipped: f.Items[SkippedSize] = ()
    notes: f.Items[f.Message] = ()
    settings: f.Settings = Field(default_factory=dict)  # the options it ran with, and its series' labels
    stopped: f.Flag = False
    wall_s: f.Number = None  # from holding the devices to the end
    timed_s: f.Number = None  # seconds inside timed blocks
    finished_at: f.OptionalTimestamp = None
    machine: MachineInfo | None = None
    stop_reason: str = Field(default="", exclude=True)  # why it stopped (the cap, the user); this session only
    load: MachineLoad | None = LATE  # how busy the machine was as it started; None in files older than the field
    verdicts: tuple[Verdict, ...] | None = LATE  # per size and comparison: faster, same or unclear (compute time)
    cache: Annotated[str | None, PlainValidator(f.one_of(CACHE_CHOICES))] = LATE  # "warm" or "cold"; None: older, warm
    guess: Guess | None = LATE  # the crossover the student predicted before the run (core.matmul.guess compares)

    @property
    def devices(self) -> list[str]:
        return list(dict.fromkeys(p.device for p in self.results))

    @property
    def series(self) -> list[str]:
        """The sweep's series labels in the order it timed them (its settings name them all)."""
        named = self.settings.get("series")
        if isinstance(named, list) and all(isinstance(s, str) for s in named):
            return list(named)
        return list(dict.fromkeys(p.label for p in self.results))

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Older files' crossovers (three shapes) as this version's records: core.results.crossover, the one place."""
        return upgrade_sweep(data)

    @property
    def headline_crossover(self) -> Crossover | None:
        """The one crossover this sweep is summed up by, with its call: what the race page shows first, Results'
        `result` column, the Class board's measured crossover, the guess and the CLI's table all read it here."""
        return pick_headline(self.crossovers)

    @property
    def shown_crossovers(self) -> list[Crossover]:
        """The comparisons a page or the CLI lists: the headline's first, then the others in sweep order."""
        return shown_order(self.crossovers)

    @property
    def crossover_lines(self) -> list[str]:
        """'crossover: cuda:0 float32 beats ...', one per comparison as the CLI and the notebook print them."""
        return [f"{c.title}: {sentence(c, self.verdicts)}" for c in self.shown_crossovers]

    @property
    def headline(self) -> str:
        """'n 64–2048, GPU wins from n≈300', '..., no crossover' or '..., cannot tell (busy)' for Results and the board."""
        sizes = [p.n for p in self.results] or [0]
        return f"n {min(sizes)}–{max(sizes)}, {short(self.headline_crossover)}"

    def to_json(self) -> dict[str, Any]:
        return super().to_json()
