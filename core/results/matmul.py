"""The matmul sweep's result: what `python -m core matmul --json` prints and the store keeps (kind "matmul").

Version 2 (this one) names the kind "matmul", as the store always did; version 1 files said
`"kind": "matmul_race"` (or had no kind: the store's own rows and hand-made files) and may lack
the optional columns, which read as null. Both read through `MatmulSweep.from_json`; it writes 2.

`run_sweep` (core.matmul.sweep) returns a MatmulSweep itself and each timed size is a MatmulPoint
from the engine, so a new column is one field here: the sweep, the JSON, the store, the import,
the results table and the CSV all take it from the declaration.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar

from pydantic import Field, PlainValidator, model_validator
from pydantic.dataclasses import dataclass
from pydantic_core import ArgsKwargs

from core.results import fields as f
from core.results.guess import Guess
from core.results.load import MachineLoad
from core.results.machine import Machine
from core.results.schema import Declared, Kind, columns

KIND = "matmul"
VERSION = 2
OLD_KIND_NAMES = ("matmul_race",)  # version 1's name for the same object
TIME_COLUMNS = ("median_s", "end_to_end_s")  # what a crossover may compare
VERDICT_CALLS = ("faster", "same", "unclear")  # core.matmul.verdict's calls for one size
CROSSOVER_CALLS = ("found", "none", "unclear")  # and for a comparison's crossover
CACHE_CHOICES = ("warm", "cold")  # core.platform.cache's: the matrices left in cache between repetitions, or evicted
LATE = Field(default=None, exclude_if=f.omitted_when_none)  # a key a later release added: written only when set


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile, the same rule as numpy's default and torch's Measurement."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


MS = 1e3  # seconds -> milliseconds, as the tables show times
DERIVED: Any = Field(default=None, init=False)  # computed from the samples (or a sample-less file's statistics), never passed
STATISTICS = ("median_s", "iqr_s", "q1_s", "q3_s", "min_s", "max_s", "samples", "end_to_end_s")  # what StoredStatistics holds


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


@dataclass(frozen=True, kw_only=True)
class PointClock(Declared):
    """The clock a size was timed at (core.platform.sensors reads it before and after the size); None where the
    OS or the driver does not say. Saved as the point's `clock` object; older files had these keys on the point."""

    cpu_mhz: Annotated[f.Number, f.Shown("CPU", "MHz")] = LATE  # the CPU's current clock after the size
    gpu_sm_mhz: Annotated[f.Number, f.Shown("GPU", "MHz")] = LATE  # a CUDA GPU's SM clock after the size (NVML)
    gpu_temperature_c: Annotated[f.Number, f.Shown("GPU", "°C")] = LATE
    gpu_power_w: Annotated[f.Number, f.Shown("GPU", "W")] = LATE
    throttle: Annotated[f.OptionalText, f.Shown("throttled")] = LATE  # the GPU's throttle reasons seen before or after the size
    throttled: f.OptionalFlag = LATE  # the GPU throttled while the size was timed: its figures are marked, not trusted


CLOCK_KEYS = tuple(field.name for field in dataclasses.fields(PointClock))  # a version 2 file's flat keys, read into `clock`


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
    rel_error: Annotated[f.Number, f.Shown("rel. error")] = None  # ||C - C64|| / ||C64|| on sampled rows; null: not checked
    times_s: f.Items[Annotated[float | None, PlainValidator(f.number_between())]] = ()
    timed_s: f.Number = LATE  # seconds inside timed blocks (all measurements), for the sweep-overhead bench
    others_cores: f.Number = LATE  # CPU other programs used while this size was timed, in cores (its verdict's busy flag)
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
    call: Annotated[str | None, PlainValidator(f.one_of(CROSSOVER_CALLS))] = LATE  # from the verdicts; compute time only
    n_low: f.OptionalSize = LATE  # the crossover lies above this size (None: at or below n_high)
    n_high: f.OptionalSize = LATE  # and at or below this one

    @property
    def with_copies(self) -> bool:
        return self.time == "end_to_end_s"


@dataclass(frozen=True, kw_only=True)
class Verdict(Declared):
    """At one size: is series `a` faster than `b`, the same, or can we not tell (core.matmul.verdict)?

    With call "faster", `a` is the faster one (the verdict names the winner first); otherwise `a`
    is the comparison's challenger. `ratio` is b's median time over a's, `low`..`high` its interval.
    """

    n: f.Size
    a: f.Text
    b: f.Text
    ratio: f.Number  # b's median time / a's: above 1, a is faster
    low: f.Number  # the ratio's 95 % bootstrap interval
    high: f.Number
    call: Annotated[str, PlainValidator(f.one_of(VERDICT_CALLS))]
    busy: f.Flag = False  # other programs took enough CPU while this size was timed to withhold the call
    why: f.Note = ""  # for "unclear": busy, too few samples, or the interval straddles 1


@dataclass(frozen=True, kw_only=True)
class CrossoverInterval(Declared):
    """The headline comparison's crossover as an interval of sizes, with a call.

    found: challenger `a` beats baseline `b` for good from some size in (n_low, n_high] (n_low None:
    at or below n_high); none: `a` does not beat `b` at the largest size; unclear: cannot tell.
    """

    a: f.Text
    b: f.Text
    n_low: f.OptionalSize = None
    n_high: f.OptionalSize = None
    call: Annotated[str, PlainValidator(f.one_of(CROSSOVER_CALLS))]


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
    machine: Machine | None = None
    stop_reason: str = Field(default="", exclude=True)  # why it stopped (the cap, the user); this session only
    load: MachineLoad | None = LATE  # how busy the machine was as it started; None in files older than the field
    verdicts: tuple[Verdict, ...] | None = LATE  # per size and comparison: faster, same or unclear
    crossover: CrossoverInterval | None = LATE  # the headline comparison's crossover interval and call
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

    @property
    def headline_crossover(self) -> HeadlineCrossover | None:
        """The one crossover this sweep is summed up by, with its call: what the race page shows first, Results'
        `result` column, the Class board's measured crossover and the CLI's table all read it here."""
        return headline_crossover(self)

    @property
    def shown_crossovers(self) -> list[SweepCrossover]:
        """The comparisons a page or the CLI lists: the headline's first, then the others in sweep order."""
        lead = pick_headline(self.crossovers)
        return ([lead] if lead else []) + [c for c in self.crossovers if c is not lead]

    @property
    def headline(self) -> str:
        """'n 64–2048, GPU wins from n≈300', '..., no crossover' or '..., cannot tell (busy)' for Results and the board."""
        sizes = [p.n for p in self.results] or [0]
        c = self.headline_crossover
        return f"n {min(sizes)}–{max(sizes)}, {'no crossover' if c is None else c.short}"

    def to_json(self) -> dict[str, Any]:
        return super().to_json()


def pick_headline(crossovers: tuple[SweepCrossover, ...] | list[SweepCrossover]) -> SweepCrossover | None:
    """The comparison a sweep is summed up by: the first GPU-vs-CPU one of compute time, else the first of
    compute time (without a GPU: the first thread or dtype comparison). The one rule for every view."""
    compute = [c for c in crossovers if c.time == "median_s"]
    return next((c for c in compute if c.gpu_vs_cpu), compute[0] if compute else None)


def _is_gpu_label(label: str) -> bool:
    return label.startswith(("cuda", "mps"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class HeadlineCrossover:
    """A sweep's headline crossover as every view shows it (never saved: derived from the saved fields).

    `call` is the verdicts' (found, none, unclear); `n` the size the race page marks ("wins from n ≈ n"),
    kept inside (n_low, n_high] when the verdicts gave an interval.
    """

    challenger: str
    baseline: str
    gpu_vs_cpu: bool
    call: str
    n: int | None = None
    n_low: int | None = None
    n_high: int | None = None

    @property
    def winner(self) -> str:
        return "GPU" if self.gpu_vs_cpu else self.challenger

    @property
    def short(self) -> str:
        """A table cell: 'GPU wins from n≈300', 'no crossover' or 'crossover: cannot tell (...)'."""
        if self.call == "unclear":
            return "crossover: cannot tell (machine busy or too noisy)"
        if self.call == "none":
            return "no crossover"
        if self.n is not None:
            return f"{self.winner} wins from n≈{self.n:,}"
        return (f"{self.winner} wins from n ≤ {self.n_high:,}" if self.n_low is None
                else f"{self.winner} wins from n between {self.n_low:,} and {self.n_high:,}")


def headline_crossover(sweep: MatmulSweep) -> HeadlineCrossover | None:
    """From the newest fields a file has: the headline comparison (with the verdicts' call), else the
    crossover interval alone, else (files older than the verdicts) `crossover_n`, which was GPU vs CPU."""
    c, interval = pick_headline(sweep.crossovers), sweep.crossover
    if c is not None and (c.call is not None or interval is None):
        call = c.call or ("found" if c.n is not None else "none")
        return HeadlineCrossover(challenger=c.challenger, baseline=c.baseline, gpu_vs_cpu=c.gpu_vs_cpu, call=call,
                                 n=c.n if call == "found" else None, n_low=c.n_low, n_high=c.n_high)
    if interval is not None:
        gpu = _is_gpu_label(interval.a) and not _is_gpu_label(interval.b)
        n = round(sweep.crossover_n) if interval.call == "found" and sweep.crossover_n else None
        return HeadlineCrossover(challenger=interval.a, baseline=interval.b, gpu_vs_cpu=gpu, call=interval.call,
                                 n=n, n_low=interval.n_low, n_high=interval.n_high)
    if sweep.crossover_n:
        return HeadlineCrossover(challenger="GPU", baseline="CPU", gpu_vs_cpu=True, call="found",
                                 n=round(sweep.crossover_n))
    return None
