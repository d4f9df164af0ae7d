"""The matmul sweep's result: what `python -m core matmul --json` prints and the store keeps (kind "matmul").

Version 2 (this one) names the kind "matmul", as the store always did; version 1 files said
`"kind": "matmul_race"` (or had no kind: the store's own rows and hand-made files) and may lack
the optional columns, which read as null. `MatmulSweep.from_json` reads both; `to_json` writes 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.results import fields as f
from core.results.load import MachineLoad, read_load
from core.results.machine import read_machine

KIND = "matmul"
VERSION = 2
OLD_KIND_NAMES = ("matmul_race",)  # version 1's name for the same object
MAX_MESSAGE_CHARS = 2000
TIME_COLUMNS = ("median_s", "end_to_end_s")  # what a crossover may compare
NUMBER_COLUMNS = ("median_s", "iqr_s", "q1_s", "q3_s", "min_s", "max_s", "first_call_s", "gflops", "unsynced_s",
                  "h2d_s", "d2h_s", "end_to_end_s", "rel_error")


@dataclass(frozen=True)
class MatmulPoint:
    """One timed size of one series: a row of the results table and of the JSON `results` list."""

    device: str
    n: int
    dtype: str
    median_s: float | None
    iqr_s: float | None
    samples: int
    gflops: float | None
    unsynced_s: float | None
    rel_error: float | None
    series: str | None = None
    tf32: bool | None = None
    threads: int | None = None
    q1_s: float | None = None
    q3_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    calls_per_block: int | None = None
    first_call_s: float | None = None
    h2d_s: float | None = None
    d2h_s: float | None = None
    end_to_end_s: float | None = None
    times_s: tuple[float | None, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The row, keys in the table's column order (POINT_COLUMNS)."""
        return {name: list(self.times_s) if name == "times_s" else getattr(self, name) for name in POINT_COLUMNS}

    @classmethod
    def from_json(cls, value: Any, path: str) -> MatmulPoint:
        row = f.obj(value, path)
        for key in ("device", "n", "dtype", "median_s", "iqr_s", "samples", "gflops", "unsynced_s", "rel_error"):
            f.field(row, key, path)
        numbers = {key: f.number(row.get(key), f"{path}.{key}") for key in NUMBER_COLUMNS}
        return cls(
            device=f.device(row["device"], f"{path}.device"), n=f.count(row["n"], f"{path}.n", 1),
            dtype=f.text(row["dtype"], f"{path}.dtype", max_chars=40), samples=f.count(row["samples"], f"{path}.samples"),
            series=f.optional_text(row.get("series"), f"{path}.series"),
            tf32=f.optional_flag(row.get("tf32"), f"{path}.tf32"),
            threads=f.optional_count(row.get("threads"), f"{path}.threads", 1),
            calls_per_block=f.optional_count(row.get("calls_per_block"), f"{path}.calls_per_block", 1),
            times_s=f.list_of(row.get("times_s", []), f"{path}.times_s", f.number), **numbers,
        )


POINT_COLUMNS = ("device", "n", "dtype", "series", "tf32", "threads", "median_s", "iqr_s", "q1_s", "q3_s", "min_s",
                 "max_s", "samples", "calls_per_block", "first_call_s", "gflops", "unsynced_s", "h2d_s", "d2h_s",
                 "end_to_end_s", "rel_error", "times_s")  # MatmulPoint.to_json's keys, in the table's order


@dataclass(frozen=True)
class SweepCrossover:
    """One comparison of a sweep: from which n the challenger series beats the baseline for good."""

    challenger: str  # series label, e.g. 'cuda:0 float32 TF32 off'
    baseline: str  # series label, e.g. 'cpu float32 2 threads'
    time: str  # the compared column: 'median_s' (compute) or 'end_to_end_s' (with copies)
    gpu_vs_cpu: bool  # a GPU series against a CPU one (the headline), else e.g. 1 vs 2 threads
    status: str  # core.matmul.crossover's INTERPOLATED, BELOW_RANGE, NONE_IN_RANGE or NO_DATA
    n: int | None  # the crossover size, rounded; None when there is none in range
    lower_n: int | None
    upper_n: int | None
    text: str  # the sentence the page and the CLI show

    @property
    def with_copies(self) -> bool:
        return self.time == "end_to_end_s"

    def to_json(self) -> dict[str, Any]:
        return {"challenger": self.challenger, "baseline": self.baseline, "time": self.time,
                "gpu_vs_cpu": self.gpu_vs_cpu, "status": self.status, "n": self.n, "lower_n": self.lower_n,
                "upper_n": self.upper_n, "text": self.text}

    @classmethod
    def from_json(cls, value: Any, path: str) -> SweepCrossover:
        c = f.obj(value, path)
        time = f.text(f.field(c, "time", path), f"{path}.time")
        if time not in TIME_COLUMNS:
            raise f.fail(f"{path}.time", f"one of {', '.join(TIME_COLUMNS)}", time)
        return cls(challenger=f.text(f.field(c, "challenger", path), f"{path}.challenger"),
                   baseline=f.text(f.field(c, "baseline", path), f"{path}.baseline"), time=time,
                   gpu_vs_cpu=f.flag(f.field(c, "gpu_vs_cpu", path), f"{path}.gpu_vs_cpu"),
                   status=f.text(f.field(c, "status", path), f"{path}.status", max_chars=40),
                   n=f.optional_count(c.get("n"), f"{path}.n", 1),
                   lower_n=f.optional_count(c.get("lower_n"), f"{path}.lower_n", 1),
                   upper_n=f.optional_count(c.get("upper_n"), f"{path}.upper_n", 1),
                   text=f.text(f.field(c, "text", path), f"{path}.text", max_chars=MAX_MESSAGE_CHARS))


@dataclass(frozen=True)
class SkippedSize:
    """A size of a series the sweep did not time, and why."""

    device: str
    n: int
    dtype: str
    series: str
    reason: str  # "memory", "out_of_memory" or "time"
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "n": self.n, "dtype": self.dtype, "series": self.series, "reason": self.reason,
                "message": self.message}

    @classmethod
    def from_json(cls, value: Any, path: str) -> SkippedSize:
        s = f.obj(value, path)
        return cls(device=f.device(f.field(s, "device", path), f"{path}.device"),
                   n=f.count(f.field(s, "n", path), f"{path}.n", 1),
                   dtype=f.text(f.field(s, "dtype", path), f"{path}.dtype", max_chars=40),
                   series=f.text(f.field(s, "series", path), f"{path}.series"),
                   reason=f.text(f.field(s, "reason", path), f"{path}.reason", max_chars=40),
                   message=f.text(f.field(s, "message", path), f"{path}.message", max_chars=MAX_MESSAGE_CHARS))


@dataclass(frozen=True)
class MatmulSweep:
    """A whole sweep as saved: its points, crossovers, skips and the machine it ran on."""

    results: tuple[MatmulPoint, ...]
    crossover_n: float | None = None  # the headline (first GPU vs its CPU) crossover, compute only
    crossover_end_to_end_n: float | None = None
    crossovers: tuple[SweepCrossover, ...] = ()
    skipped: tuple[SkippedSize, ...] = ()
    notes: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)
    stopped: bool = False
    wall_s: float | None = None
    timed_s: float | None = None
    finished_at: str | None = None
    machine: dict[str, Any] | None = None
    load: MachineLoad | None = None  # how busy the machine was as it started; None in files older than the field
    extra: dict[str, Any] = field(default_factory=dict)  # keys a newer version added, kept as they came

    kind = KIND

    @property
    def devices(self) -> list[str]:
        return list(dict.fromkeys(p.device for p in self.results))

    @property
    def headline(self) -> str:
        sizes = [p.n for p in self.results]
        crossing = f"GPU wins from n≈{self.crossover_n:.0f}" if self.crossover_n else "no crossover"
        return f"n {min(sizes)}–{max(sizes)}, {crossing}"

    def to_json(self) -> dict[str, Any]:
        return {**self.extra, "kind": KIND, "schema_version": VERSION,
                "results": [p.to_json() for p in self.results], "crossover_n": self.crossover_n,
                "crossover_end_to_end_n": self.crossover_end_to_end_n,
                "crossovers": [c.to_json() for c in self.crossovers], "skipped": [s.to_json() for s in self.skipped],
                "notes": list(self.notes), "settings": self.settings, "stopped": self.stopped, "wall_s": self.wall_s,
                "timed_s": self.timed_s, "finished_at": self.finished_at, "machine": self.machine,
                **({"load": self.load.to_json()} if self.load is not None else {})}

    @classmethod
    def from_json(cls, value: dict[str, Any], path: str) -> MatmulSweep:
        """Read a version 1 or 2 object (the caller checked kind and version)."""
        v = value
        known = {"kind", "schema_version", "results", "crossover_n", "crossover_end_to_end_n", "crossovers",
                 "skipped", "notes", "settings", "stopped", "wall_s", "timed_s", "finished_at", "machine", "load"}
        finished = v.get("finished_at")
        return cls(
            results=f.list_of(f.field(v, "results", path), f"{path}.results", MatmulPoint.from_json, minimum=1),
            crossover_n=f.number(v.get("crossover_n"), f"{path}.crossover_n", 1.0),
            crossover_end_to_end_n=f.number(v.get("crossover_end_to_end_n"), f"{path}.crossover_end_to_end_n", 1.0),
            crossovers=f.list_of(v.get("crossovers") or [], f"{path}.crossovers", SweepCrossover.from_json),
            skipped=f.list_of(v.get("skipped") or [], f"{path}.skipped", SkippedSize.from_json),
            notes=f.list_of(v.get("notes") or [], f"{path}.notes",
                            lambda x, p: f.text(x, p, max_chars=MAX_MESSAGE_CHARS)),
            settings=f.optional_object(v.get("settings"), f"{path}.settings"),
            stopped=f.flag(v.get("stopped", False), f"{path}.stopped"),
            wall_s=f.number(v.get("wall_s"), f"{path}.wall_s"), timed_s=f.number(v.get("timed_s"), f"{path}.timed_s"),
            finished_at=None if finished is None else f.timestamp(finished, f"{path}.finished_at"),
            machine=None if v.get("machine") is None else read_machine(v["machine"], f"{path}.machine"),
            load=read_load(v.get("load"), f"{path}.load"),
            extra={k: x for k, x in v.items() if k not in known},
        )
