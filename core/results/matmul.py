"""The matmul sweep's result: what `python -m core matmul --json` prints and the store keeps (kind "matmul").

Version 2 (this one) names the kind "matmul", as the store always did; version 1 files said
`"kind": "matmul_race"` (or had no kind: the store's own rows and hand-made files) and may lack
the optional columns, which read as null. Both read through `MatmulSweep.from_json`; it writes 2.

`run_sweep` (core.matmul.sweep) returns a MatmulSweep itself and each timed size is a MatmulPoint
from the engine, so a new column is one field here: the sweep, the JSON, the store, the import,
the results table and the CSV all take it from the declaration.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, PlainValidator
from pydantic.dataclasses import dataclass

from core.results import fields as f
from core.results.load import MachineLoad
from core.results.machine import MachineInfo
from core.results.schema import Declared, Kind, columns

KIND = "matmul"
VERSION = 2
OLD_KIND_NAMES = ("matmul_race",)  # version 1's name for the same object
TIME_COLUMNS = ("median_s", "end_to_end_s")  # what a crossover may compare
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

    @property
    def is_gpu(self) -> bool:
        return self.device != "cpu"

    @property
    def label(self) -> str:
        """The series this point belongs to (files without `series` name it by device and dtype)."""
        return self.series or f"{self.device} {self.dtype}"


POINT_COLUMNS = tuple(columns(MatmulPoint))  # the results table's columns, in the declaration's order


@dataclass(frozen=True, kw_only=True)
class SweepCrossover(Declared):
    """One comparison of a sweep: from which n the challenger series beats the baseline for good."""

    challenger: f.Text  # series label, e.g. 'cuda:0 float32 TF32 off'
    baseline: f.Text  # series label, e.g. 'cpu float32 2 threads'
    time: Annotated[str, PlainValidator(f.one_of(TIME_COLUMNS))]  # 'median_s' (compute) or 'end_to_end_s' (copies)
    gpu_vs_cpu: f.Flag  # a GPU series against a CPU one (the headline), else e.g. 1 vs 2 threads
    status: f.Name  # core.matmul.crossover's INTERPOLATED, BELOW_RANGE, NONE_IN_RANGE or NO_DATA
    n: f.OptionalSize = None  # the crossover size, rounded; None when there is none in range
    lower_n: f.OptionalSize = None
    upper_n: f.OptionalSize = None
    text: f.Message  # the sentence the page and the CLI show

    @property
    def with_copies(self) -> bool:
        return self.time == "end_to_end_s"


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
    crossover_n: Annotated[float | None, PlainValidator(f.number_between(1.0))] = None  # headline: first GPU vs CPU
    crossover_end_to_end_n: Annotated[float | None, PlainValidator(f.number_between(1.0))] = None
    crossovers: f.Items[SweepCrossover] = ()
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

    @property
    def headline(self) -> str:
        sizes = [p.n for p in self.results] or [0]
        crossing = f"GPU wins from n≈{self.crossover_n:.0f}" if self.crossover_n else "no crossover"
        return f"n {min(sizes)}–{max(sizes)}, {crossing}"

    def to_json(self) -> dict[str, Any]:
        return super().to_json()
