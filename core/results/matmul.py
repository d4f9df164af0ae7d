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

import dataclasses
import math
import statistics
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any, ClassVar

from pydantic import Field, PlainValidator, model_validator
from pydantic.dataclasses import dataclass
from pydantic_core import ArgsKwargs

from core.results import fields as f
from core.results import table
from core.results.crossover import (SWEEP_VERSION, Crossover, Verdict, pick_headline, sentence, short, shown_order,
                                    upgrade_sweep)
from core.results.guess import Guess
from core.results.load import MachineLoad
from core.results.machine import Machine
from core.results.result_kind import Frame, ResultKind
from core.results.schema import Declared, Kind, columns
from core.results.shared_race import SharedRace

KIND = "matmul"
VERSION = SWEEP_VERSION  # 3
OLD_KIND_NAMES = ("matmul_race",)  # version 1's name for the same object
CACHE_CHOICES = ("warm", "cold")  # core.platform.cache's: the matrices left in cache between repetitions, or evicted
LATE = Field(default=None, exclude_if=f.omitted_when_none)  # a key a later release added: written only when set


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile, the same rule as numpy's default and torch's Measurement."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


MS = 1e3  # seconds -> milliseconds, as the tables show times
# computed from the samples (or a sample-less file's statistics), never passed
DERIVED: Any = Field(default=None, init=False)
# what StoredStatistics holds
STATISTICS = ("median_s", "iqr_s", "q1_s", "q3_s", "min_s", "max_s", "samples", "end_to_end_s")


@dataclass(frozen=True, kw_only=True)
class StoredStatistics(Declared):
    """The statistics a version 1 file carries without its samples: kept as stored, since nothing can redo them.

    Read from the point's own keys (no nesting in the file), so a bad one is named as before:
    `results[0].median_s`. Its own quartiles must be in order, as any measurement's are.
    """

    median_s: f.Number
    iqr_s: f.Number
    q1_s: f.Number = None
    q3_s: f.Number = None
    min_s: f.Number = None
    max_s: f.Number = None
    samples: f.Count
    end_to_end_s: f.Number = None

    def __post_init__(self) -> None:
        order = [(name, getattr(self, name)) for name in ("min_s", "q1_s", "median_s", "q3_s", "max_s")]
        known = [(name, value) for name, value in order if value is not None]
        for (low_name, low), (high_name, high) in zip(known, known[1:]):
            if low > high * (1 + 1e-9):
                raise f.Expected(f"{low_name} <= {high_name} ({low_name} = {low:.6g} s is above {high_name} = "
                                 f"{high:.6g} s)")


POWER_CAP = "sw_power_cap"  # NVML's reason for a GPU held at its power limit (core.platform.sensors)


@dataclass(frozen=True, kw_only=True)
class PointClock(Declared):
    """The clock a size was timed at (core.platform.sensors: the CPU's before and after the size, a GPU's sampled
    while its blocks ran); None where the OS or the driver does not say. Saved as the point's `clock` object;
    older files had these keys on the point."""

    cpu_mhz: Annotated[f.Number, f.Shown("CPU", "MHz")] = LATE  # the CPU's current clock after the size
    gpu_sm_mhz: Annotated[f.Number, f.Shown("GPU", "MHz")] = LATE  # a CUDA GPU's SM clock while the size ran (NVML)
    gpu_temperature_c: Annotated[f.Number, f.Shown("GPU", "°C")] = LATE
    gpu_power_w: Annotated[f.Number, f.Shown("GPU", "W")] = LATE
    throttle: Annotated[f.OptionalText, f.Shown("throttled")] = LATE  # the GPU's reasons seen during the size
    throttled: f.OptionalFlag = LATE  # the GPU was slowed (`slowed`) while the size was timed: marked, not trusted

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(r for r in (self.throttle or "").split(", ") if r)

    @property
    def power_limited(self) -> bool:
        """The GPU ran at its power cap: the clock it runs any sustained work at, a fact about it, not noise."""
        return POWER_CAP in self.reasons

    @property
    def slowed(self) -> bool:
        """Slowed for a reason that is the moment's, not the GPU's: a thermal or hardware slowdown, a clock drop,
        a reason not given. A power cap alone is not (older files marked it `throttled` too)."""
        return bool(self.throttled) and (not self.reasons or any(r != POWER_CAP for r in self.reasons))


# a version 2 file's flat keys, read into `clock`
CLOCK_KEYS = tuple(field.name for field in dataclasses.fields(PointClock))


@dataclass(frozen=True, kw_only=True)
class MatmulPoint(Declared):
    """One timed size of one series: a row of the results table and of the JSON `results` list.

    Its statistics (median, quartiles, GFLOP/s, end to end) are derived from the synchronized samples `times_s`
    (per call, one per timed block), so they cannot disagree with them; they are written to the JSON as
    before. A file without samples (version 1) keeps the statistics it stored (`stored`). Each field's
    `Shown` is its label and unit in every table a person reads; every scalar field is a CSV column.
    """

    device: f.Device
    n: Annotated[f.Size, f.Shown("n")]
    dtype: f.Name
    series: Annotated[f.OptionalText, f.Shown("series", read="label")] = None  # the chart line: 'cpu float32 2 threads'
    tf32: f.OptionalFlag = None  # TF32 setting in effect during CUDA float32 timing
    threads: f.OptionalSize = None  # torch threads in effect during the CPU timing
    median_s: Annotated[f.Number, f.Shown("median", "ms", MS)] = DERIVED
    iqr_s: Annotated[f.Number, f.Shown("IQR", "ms", MS)] = DERIVED
    q1_s: f.Number = DERIVED
    q3_s: f.Number = DERIVED
    min_s: Annotated[f.Number, f.Shown("min", "ms", MS)] = DERIVED
    max_s: Annotated[f.Number, f.Shown("max", "ms", MS)] = DERIVED
    samples: Annotated[f.Count, f.Shown("samples")] = DERIVED
    calls_per_block: Annotated[f.OptionalSize, f.Shown("calls per sample")] = None
    first_call_s: Annotated[f.Number, f.Shown("first call", "ms", MS)] = None  # the cold warm-up call, never a sample
    gflops: Annotated[f.Number, f.Shown("", "GFLOP/s")] = DERIVED  # 2·n³ / median
    unsynced_s: Annotated[f.Number, f.Shown("unsynced", "ms", MS)] = None  # timed without waiting (the classic bug)
    h2d_s: Annotated[f.Number, f.Shown("copy in", "ms", MS)] = None  # host->device copy of A and B; 0 on the CPU
    d2h_s: Annotated[f.Number, f.Shown("copy out", "ms", MS)] = None  # device->host copy of C
    end_to_end_s: Annotated[f.Number, f.Shown("end to end", "ms", MS)] = DERIVED  # copy in + product + copy out
    # ||C - C64|| / ||C64|| on sampled rows; null: not checked
    rel_error: Annotated[f.Number, f.Shown("rel. error")] = None
    times_s: f.Items[Annotated[float | None, PlainValidator(f.number_between())]] = ()
    timed_s: f.Number = LATE  # seconds inside timed blocks (all measurements), for the sweep-overhead bench
    # CPU other programs used while this size was timed, in cores (its verdict's busy flag)
    others_cores: f.Number = LATE
    clock: PointClock = Field(default_factory=lambda: PointClock(), exclude_if=lambda c: c == PointClock())  # the clock
    # it ran at, written only when read; a table shows its fields as columns of their own
    stored: StoredStatistics | None = Field(default=None, exclude=True)  # a sample-less file's statistics

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Statistics passed or read are dropped where samples give them, else kept as `stored`; the clock's
        flat keys (version 2 files before `clock`) are read into `clock`."""
        if isinstance(data, ArgsKwargs):
            return ArgsKwargs(data.args, _upgraded(dict(data.kwargs or {})))
        return _upgraded(data) if isinstance(data, dict) else data

    def __post_init__(self) -> None:
        times = [t for t in self.times_s if t is not None]
        figures: dict[str, float | None]
        if times:
            middle = statistics.median(times)
            q1, q3 = quantile(times, 0.25), quantile(times, 0.75)
            figures = {"median_s": middle, "iqr_s": q3 - q1, "q1_s": q1, "q3_s": q3, "min_s": min(times),
                       "max_s": max(times), "samples": len(times),
                       "end_to_end_s": None if self.h2d_s is None or self.d2h_s is None
                       else self.h2d_s + middle + self.d2h_s}
        elif self.stored is not None:
            figures = {name: getattr(self.stored, name) for name in STATISTICS}
        else:
            figures = {"samples": 0}
        median = figures.get("median_s")
        figures["gflops"] = 2 * self.n**3 / median / 1e9 if median else None
        for name, value in figures.items():
            object.__setattr__(self, name, value)

    @property
    def is_gpu(self) -> bool:
        return self.device != "cpu"

    @property
    def label(self) -> str:
        """The series this point belongs to (files without `series` name it by device and dtype)."""
        return self.series or f"{self.device} {self.dtype}"


def _upgraded(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    stats = {name: data.pop(name) for name in (*STATISTICS, "gflops") if name in data}
    stats.pop("gflops", None)  # always 2·n³ / median
    if not data.get("times_s"):
        data[f.INLINE] = stats
    flat = {name: data.pop(name) for name in CLOCK_KEYS if name in data}
    clock = data.get("clock")
    if clock is None or (flat and isinstance(clock, PointClock)):  # a file before `clock`; replace(point, cpu_mhz=...)
        data["clock"] = {**(f.write(clock) if isinstance(clock, PointClock) else {}), **flat}
    return data


POINT_COLUMNS = tuple(columns(MatmulPoint))  # the point's JSON keys, in the declaration's order


SKIP_REASONS = {"time": "time budget", "memory": "memory", "out_of_memory": "out of memory"}  # as a headline says them


@dataclass(frozen=True, kw_only=True)
class SkippedSize(Declared):
    """A size of a series the sweep did not time, and why."""

    device: f.Device
    n: f.Size
    dtype: f.Name
    series: f.Text
    # "memory" (refused before allocating), "out_of_memory" (failed anyway), "time" (left out by the size plan
    # before the race, or not tried after its series ran far slower than planned: core.matmul.sizes)
    reason: f.Name
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
    machine: Machine | None = None
    stop_reason: str = Field(default="", exclude=True)  # why it stopped (the cap, the user); this session only
    load: MachineLoad | None = LATE  # how busy the machine was as it started; None in files older than the field
    verdicts: tuple[Verdict, ...] | None = LATE  # per size and comparison: faster, same or unclear (compute time)
    cache: Annotated[str | None, PlainValidator(f.one_of(CACHE_CHOICES))] = LATE  # "warm" or "cold"; None: older, warm
    guess: Guess | None = LATE  # the crossover the student predicted before the run (core.matmul.guess compares)
    shared: SharedRace | None = LATE  # one race several sessions watched: each copy names it (not new evidence)

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
        """'n 64–2048, GPU wins from n≈300', '..., no crossover' or '..., cannot tell (busy)' for Results and
        the board; sizes asked for but not timed are named: 'n 64–1024 (skipped 2048: time budget), ...'."""
        sizes = [p.n for p in self.results] or [0]
        return f"n {min(sizes)}–{max(sizes)}{self.skipped_words}, {short(self.headline_crossover)}"

    @property
    def skipped_words(self) -> str:
        """' (skipped 2048: time budget)', ' (skipped 1024 for 1 of 2 series, 2048: memory, time budget)', or ''."""
        if not self.skipped:
            return ""
        series = max(len(self.series), 1)
        by_size: dict[int, set[str]] = {}
        for skip in self.skipped:
            by_size.setdefault(skip.n, set()).add(skip.series)
        sizes = [f"{n}" if len(named) >= series else f"{n} for {len(named)} of {series} series"
                 for n, named in sorted(by_size.items())]
        reasons = sorted({SKIP_REASONS.get(skip.reason, skip.reason) for skip in self.skipped})
        return f" (skipped {', '.join(sizes)}: {', '.join(reasons)})"

    def to_json(self) -> dict[str, Any]:
        return super().to_json()


# ---- the kind's record (core/results/result_kind.py): what the store's tables, the import and the pages read

# Every scalar column of the saved row (core.results.table: not its raw samples, its clock's fields in its
# place) but its own series name (the frame's `series` names the run too); a field added to MatmulPoint
# appears here by itself. The race page's CSV and the Results export are both this table.
MATMUL_FIELDS = [c.key for c in table.columns(MatmulPoint) if c.key != "series"]


def _variant(point: MatmulPoint) -> str:
    """What sets a sweep's series apart on one device: dtype, plus TF32 and CPU threads when recorded.

    A sweep comparing 1 and 2 CPU threads (or TF32 off and on) has two rows per size on one
    device; without these in the name they would be drawn as one zigzag line.
    """
    parts = [point.dtype]
    if point.tf32 is not None:
        parts.append(f"TF32 {'on' if point.tf32 else 'off'}")
    if point.threads is not None:
        parts.append(f"{point.threads} thread{'s' if point.threads != 1 else ''}")
    return " ".join(parts)


def _rows(sweep: MatmulSweep, device_title: Callable[[str], str]) -> Iterator[tuple[str, dict[str, object]]]:
    """One row per measured (series, n)."""
    for point in sweep.results:
        title = device_title(point.device)
        cells = {name: value for name, value in table.flat_row(point).items() if name != "series"}
        yield f"{title} {_variant(point)}", {"device_title": title, **cells}


RESULT_KIND = ResultKind(name=KIND, schema=MatmulSweep, title="matmul sweep", detect=("results",),
                         frame=Frame(("device_title", *MATMUL_FIELDS), _rows, order=("run_id", "series", "n")),
                         old_names=OLD_KIND_NAMES, board=True)
