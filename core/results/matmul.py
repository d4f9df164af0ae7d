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
from collections.abc import Callable, Iterator
from typing import Annotated, Any, ClassVar

from pydantic import Field, PlainValidator
from pydantic.dataclasses import dataclass

from core.results import fields as f
from core.results.guess import Guess
from core.results.load import MachineLoad
from core.results.machine import MachineInfo
from core.results.result_kind import Frame, ResultKind
from core.results.schema import Declared, Kind, columns

KIND = "matmul"
VERSION = 2
OLD_KIND_NAMES = ("matmul_race",)  # version 1's name for the same object
TIME_COLUMNS = ("median_s", "end_to_end_s")  # what a crossover may compare
VERDICT_CALLS = ("faster", "same", "unclear")  # core.matmul.verdict's calls for one size
CROSSOVER_CALLS = ("found", "none", "unclear")  # and for a comparison's crossover
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
    machine: MachineInfo | None = None
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


# ---- the kind's record (core/results/result_kind.py): what the store's tables, the import and the pages read

# Every column of the saved row except its raw samples (a list) and its own series name (the frame's
# `series` names the run too); a field added to MatmulPoint appears here by itself.
MATMUL_FIELDS = [c for c in POINT_COLUMNS if c not in ("series", "times_s")]


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
        yield f"{title} {_variant(point)}", {"device_title": title, **{name: getattr(point, name) for name in MATMUL_FIELDS}}


RESULT_KIND = ResultKind(name=KIND, schema=MatmulSweep, title="matmul sweep", detect=("results",),
                         frame=Frame(("device_title", *MATMUL_FIELDS), _rows, order=("run_id", "series", "n")),
                         old_names=OLD_KIND_NAMES, board=True)
