"""The roofline run's result: what `python -m core roofline --json` prints and the store keeps (kind "roofline").

Version 1. Each measured series (a device, a dtype, and on the CPU a thread count) has its roofs
in `devices`; every timed product of the sweep is a row of `points`, with its arithmetic
intensity, its rate and the model's prediction for it. A field the machine could not give (no
GPU: the copy rates; no clock: the theoretical peak) is null, never a made-up number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.results import fields as f
from core.results.machine import read_machine
from core.results.load import MachineLoad, read_load

KIND = "roofline"
VERSION = 1
MAX_NOTE_CHARS = 2000
ROOF_NUMBERS = ("peak_gflops", "theoretical_gflops", "bandwidth_gbs", "launch_s", "wake_s", "h2d_gbs", "d2h_gbs",
                "h2d_pinned_gbs", "d2h_pinned_gbs")
POINT_NUMBERS = ("median_s", "gflops", "intensity", "predicted_s", "end_to_end_s", "predicted_end_to_end_s")


@dataclass(frozen=True)
class DeviceRoofs:
    """One series' measured constants: the two roofs, the fixed cost of one operation, the copy rates."""

    device: str
    dtype: str
    series: str  # "cpu float32 2 threads": the key points refer to
    threads: int | None
    peak_gflops: float | None  # best rate of a few large products
    theoretical_gflops: float | None  # cores x clock x flops/cycle, or SMs x clock x ops/cycle; None if unknown
    theoretical_note: str  # how it was derived, and whether it is a guess
    bandwidth_gbs: float | None  # large on-device copy, bytes read + written
    launch_s: float | None  # median time of one tiny product, synced
    wake_s: float | None = None  # CPU, 2+ threads: the cost of splitting one operation across them; else None
    h2d_gbs: float | None = None  # pageable host -> device; None off a GPU
    d2h_gbs: float | None = None
    h2d_pinned_gbs: float | None = None
    d2h_pinned_gbs: float | None = None

    @property
    def overhead_s(self) -> float | None:
        """The model's fixed cost of one product big enough to split: starting it, plus waking the threads."""
        return None if self.launch_s is None else self.launch_s + (self.wake_s or 0.0)

    @property
    def ridge_intensity(self) -> float | None:
        """Operations per byte where the two roofs meet: below it memory limits, above it arithmetic."""
        if not self.peak_gflops or not self.bandwidth_gbs:
            return None
        return self.peak_gflops / self.bandwidth_gbs

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "dtype": self.dtype, "series": self.series, "threads": self.threads,
                **{k: getattr(self, k) for k in ROOF_NUMBERS}, "theoretical_note": self.theoretical_note,
                "ridge_intensity": self.ridge_intensity}

    @classmethod
    def from_json(cls, value: Any, path: str) -> DeviceRoofs:
        d = f.obj(value, path)
        for key in ("device", "dtype", "peak_gflops", "theoretical_gflops", "bandwidth_gbs", "launch_s", "h2d_gbs",
                    "d2h_gbs"):
            f.field(d, key, path)
        return cls(device=f.device(d["device"], f"{path}.device"), dtype=f.text(d["dtype"], f"{path}.dtype", max_chars=40),
                   series=f.text(d.get("series") or d["device"], f"{path}.series"),
                   threads=f.optional_count(d.get("threads"), f"{path}.threads", 1),
                   theoretical_note=f.text(d.get("theoretical_note", ""), f"{path}.theoretical_note",
                                           max_chars=MAX_NOTE_CHARS, empty=True),
                   **{k: f.number(d.get(k), f"{path}.{k}") for k in ROOF_NUMBERS})


@dataclass(frozen=True)
class RooflinePoint:
    """One timed product placed on the roofline: its intensity (x), its rate (y), and the model's time."""

    device: str
    dtype: str
    n: int
    gflops: float | None
    intensity: float | None  # 2n^3 / (3 * bytes per element * n^2): operations per byte moved at least once
    series: str | None = None
    median_s: float | None = None
    predicted_s: float | None = None
    end_to_end_s: float | None = None
    predicted_end_to_end_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "dtype": self.dtype, "n": self.n, "series": self.series,
                **{k: getattr(self, k) for k in POINT_NUMBERS}}

    @classmethod
    def from_json(cls, value: Any, path: str) -> RooflinePoint:
        p = f.obj(value, path)
        for key in ("device", "dtype", "n", "gflops", "intensity"):
            f.field(p, key, path)
        return cls(device=f.device(p["device"], f"{path}.device"), dtype=f.text(p["dtype"], f"{path}.dtype", max_chars=40),
                   n=f.count(p["n"], f"{path}.n", 1), series=f.optional_text(p.get("series"), f"{path}.series"),
                   **{k: f.number(p.get(k), f"{path}.{k}") for k in POINT_NUMBERS})


@dataclass(frozen=True)
class RooflineRun:
    """Roofs per series, the sweep on them, and the crossover the model predicts beside the measured one."""

    devices_roofs: tuple[DeviceRoofs, ...]
    points: tuple[RooflinePoint, ...]
    predicted_crossover_n: int | None
    measured_crossover_n: int | None
    challenger: str | None = None  # the two series compared: "cuda:0 float32" vs "cpu float32 2 threads"
    baseline: str | None = None
    notes: tuple[str, ...] = ()
    stopped: bool = False
    wall_s: float | None = None
    finished_at: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    load: MachineLoad | None = None  # how busy the machine was as it started; None in files older than the field
    extra: dict[str, Any] = field(default_factory=dict)  # keys a newer version added, kept as they came

    kind = KIND

    @property
    def devices(self) -> list[str]:
        return list(dict.fromkeys(d.device for d in self.devices_roofs))

    @property
    def headline(self) -> str:
        peaks = ", ".join(f"{d.series} {d.peak_gflops or 0:.0f} GFLOP/s, {d.bandwidth_gbs or 0:.0f} GB/s"
                          for d in self.devices_roofs)
        cross = ("" if self.predicted_crossover_n is None and self.measured_crossover_n is None else
                 f"; crossover predicted {self.predicted_crossover_n or '-'}, measured {self.measured_crossover_n or '-'}")
        return peaks + cross

    def to_json(self) -> dict[str, Any]:
        return {**self.extra, "kind": KIND, "schema_version": VERSION,
                "devices": [d.to_json() for d in self.devices_roofs], "points": [p.to_json() for p in self.points],
                "predicted_crossover_n": self.predicted_crossover_n, "measured_crossover_n": self.measured_crossover_n,
                "challenger": self.challenger, "baseline": self.baseline, "notes": list(self.notes),
                "stopped": self.stopped, "wall_s": self.wall_s, "finished_at": self.finished_at,
                "settings": self.settings, "machine": self.machine,
                **({"load": self.load.to_json()} if self.load is not None else {})}

    @classmethod
    def from_json(cls, value: dict[str, Any], path: str) -> RooflineRun:
        """Read a version 1 object (the caller checked kind and version)."""
        v = value
        for key in ("devices", "points", "predicted_crossover_n", "measured_crossover_n"):
            f.field(v, key, path)
        known = {"kind", "schema_version", "devices", "points", "predicted_crossover_n", "measured_crossover_n",
                 "challenger", "baseline", "notes", "stopped", "wall_s", "finished_at", "settings", "machine", "load"}
        machine = v.get("machine")
        return cls(
            devices_roofs=f.list_of(v["devices"], f"{path}.devices", DeviceRoofs.from_json, minimum=1),
            points=f.list_of(v["points"], f"{path}.points", RooflinePoint.from_json),
            predicted_crossover_n=f.optional_count(v["predicted_crossover_n"], f"{path}.predicted_crossover_n", 1),
            measured_crossover_n=f.optional_count(v["measured_crossover_n"], f"{path}.measured_crossover_n", 1),
            challenger=f.optional_text(v.get("challenger"), f"{path}.challenger"),
            baseline=f.optional_text(v.get("baseline"), f"{path}.baseline"),
            notes=f.list_of(v.get("notes") or [], f"{path}.notes",
                            lambda x, p: f.text(x, p, max_chars=MAX_NOTE_CHARS, empty=True)),
            stopped=f.flag(v.get("stopped", False), f"{path}.stopped"),
            wall_s=f.number(v.get("wall_s"), f"{path}.wall_s"),
            finished_at=None if v.get("finished_at") is None else f.timestamp(v["finished_at"], f"{path}.finished_at"),
            settings=f.optional_object(v.get("settings"), f"{path}.settings"),
            machine={} if machine is None else read_machine(machine, f"{path}.machine"),
            load=read_load(v.get("load"), f"{path}.load"),
            extra={k: x for k, x in v.items() if k not in known},
        )
