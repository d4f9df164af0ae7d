"""The roofline run's result: what `python -m core roofline --json` prints and the store keeps (kind "roofline").

Version 2 (this one; version 1 read too). Each measured series (a device, a dtype, and on the CPU a thread count)
has its roofs in `devices`; every timed product of the sweep is a row of `points`, with its arithmetic
intensity, its rate and the model's prediction for it. A field the machine could not give (no
GPU: the copy rates; no clock: the theoretical peak) is null, never a made-up number.

Later keys: each series' `spreads` (the lowest and highest repeat of each constant), `noisy` (the
constants whose repeats disagreed, or that were measured while the machine was busy) and `notes`,
written only when set, so an older file (no key: not known) reads and writes as before; the run's
`predicted_crossover_low`/`_high` (the crossover the constants' spread allows), null when unknown; the
run's `verdicts` and `measured_crossover` (the Matmul race's call per size and its crossover record, written
only when set). Version 2 keeps the measured size in that record (`n`, inside a found interval); version 1
had it beside the record as `measured_crossover_n` (and, before the verdicts, alone), which
core.results.crossover.upgrade_roofline moves into the record as a file is read.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, computed_field, model_validator
from pydantic.dataclasses import dataclass

from core.platform.units import number
from core.results import fields as f
from core.results.load import MachineLoad
from core.results.machine import Machine, unknown_machine
from core.results.crossover import FOUND, ROOFLINE_VERSION, UNCLEAR, Crossover, Verdict, upgrade_roofline
from core.results.result_kind import ResultKind
from core.results.schema import Declared, Kind

KIND = "roofline"
VERSION = ROOFLINE_VERSION  # 2
LATE = Field(default=None, exclude_if=f.omitted_when_none)  # a key a later release added: written only when set


@dataclass(frozen=True, kw_only=True)
class Spread(Declared):
    """One constant's repeats (core.roofline.spread): the lowest and highest figure, and how busy the machine was."""

    name: f.Name  # the DeviceRoofs field it spreads: "bandwidth_gbs", "launch_s", "wake_s", "peak_gflops"
    low: f.Number
    high: f.Number
    repeats: f.Count  # how many figures the range is over (for the peak: the best product's samples)
    others_cores: f.Number = None  # CPU other programs used while the repeats ran, in cores


@dataclass(frozen=True, kw_only=True)
class DeviceRoofs(Declared):
    """One series' measured constants: the two roofs, the fixed cost of one operation, the copy rates."""

    device: f.Device
    dtype: f.Name
    series: f.Text  # "cpu float32 2 threads": the key points refer to (files without it: the device)
    threads: f.OptionalSize = None
    peak_gflops: f.Number  # best rate of a few large products
    theoretical_gflops: f.Number  # cores x clock x flops/cycle, or SMs x clock x ops/cycle; None if unknown
    bandwidth_gbs: f.Number  # large on-device copy, bytes read + written
    launch_s: f.Number  # median time of one tiny product, synced
    wake_s: f.Number = None  # CPU, 2+ threads: the cost of splitting one operation across them; else None
    h2d_gbs: f.Number = None  # pageable host -> device; None off a GPU
    d2h_gbs: f.Number = None
    h2d_pinned_gbs: f.Number = None
    d2h_pinned_gbs: f.Number = None
    theoretical_note: f.Note = ""  # how the theoretical peak was derived, and whether it is a guess
    spreads: tuple[Spread, ...] | None = LATE  # each constant's range over its repeats; None in older files
    noisy: tuple[f.Name, ...] | None = LATE  # names of the constants too noisy to state as facts
    notes: tuple[f.Note, ...] | None = LATE  # why they are noisy; "theory underestimates this machine"

    def spread(self, name: str) -> tuple[float, float] | None:
        """(low, high) of a constant over its repeats; None where not measured or from an older file."""
        found = next((s for s in self.spreads or () if s.name == name), None)
        return None if found is None or found.low is None or found.high is None else (found.low, found.high)

    def is_noisy(self, name: str) -> bool:
        return name in (self.noisy or ())

    @model_validator(mode="before")
    @classmethod
    def _series_defaults_to_device(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("series") and "device" in data:
            return {**data, "series": data["device"]}
        return data

    @property
    def overhead_s(self) -> float | None:
        """The model's fixed cost of one product big enough to split: starting it, plus waking the threads."""
        return None if self.launch_s is None else self.launch_s + (self.wake_s or 0.0)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ridge_intensity(self) -> float | None:
        """Operations per byte where the two roofs meet: below it memory limits, above it arithmetic."""
        if not self.peak_gflops or not self.bandwidth_gbs:
            return None
        return self.peak_gflops / self.bandwidth_gbs


@dataclass(frozen=True, kw_only=True)
class RooflinePoint(Declared):
    """One timed product placed on the roofline: its intensity (x), its rate (y), and the model's time."""

    device: f.Device
    dtype: f.Name
    n: f.Size
    series: f.OptionalText = None
    median_s: f.Number = None
    gflops: f.Number
    intensity: f.Number  # 2n^3 / (3 * bytes per element * n^2): operations per byte moved at least once
    predicted_s: f.Number = None
    end_to_end_s: f.Number = None
    predicted_end_to_end_s: f.Number = None

    @property
    def label(self) -> str:
        """The series this point belongs to (files without `series` name it by its device)."""
        return self.series or self.device


@dataclass(frozen=True, kw_only=True)
class RooflineRun(Kind):
    """Roofs per series, the sweep on them, and the crossover the model predicts beside the measured one."""

    kind: ClassVar[str] = KIND
    schema_version: ClassVar[int] = VERSION
    json_names: ClassVar[dict[str, str]] = {"devices_roofs": "devices"}  # `devices` is every kind's device list

    devices_roofs: f.Measured[DeviceRoofs]
    points: tuple[RooflinePoint, ...]
    predicted_crossover_n: f.OptionalSize
    challenger: f.OptionalText = None  # the two series compared: "cuda:0 float32" vs "cpu float32 2 threads"
    baseline: f.OptionalText = None
    notes: f.Items[f.Note] = ()
    stopped: f.Flag = False
    wall_s: f.Number = None
    finished_at: f.OptionalTimestamp = None
    settings: f.Settings = Field(default_factory=dict)
    machine: Machine = Field(default_factory=unknown_machine)
    load: MachineLoad | None = LATE  # how busy the machine was as it started; None in files older than the field
    predicted_crossover_low: f.OptionalSize = None  # the crossover the constants' spread allows, from ... (always
    predicted_crossover_high: f.OptionalSize = None  # written; null in older files) ... to (null with a low: beyond
    # the model's search range)
    verdicts: tuple[Verdict, ...] | None = LATE  # the pair's call per size, the Matmul race's rule
    # (core.matmul.verdict)
    measured_crossover: Crossover | None = LATE  # the measured crossover (core.results.crossover); older files
    # without verdicts: the medians' size, found or none

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Version 1's `measured_crossover_n` into the record (core.results.crossover, the one place)."""
        return upgrade_roofline(data)

    @property
    def measured_crossover_n(self) -> int | None:
        """The measured crossover size: only where it was found."""
        c = self.measured_crossover
        return c.n if c is not None and c.call == FOUND else None

    @property
    def prediction_flips(self) -> bool:
        """Does the constants' spread allow both a crossover (from predicted_crossover_low) and none (no high)? Then
        the predicted figure is one draw of the noise, never stated as the model's prediction."""
        return self.predicted_crossover_low is not None and self.predicted_crossover_high is None

    @property
    def noisy_series(self) -> list[str]:
        """Series with at least one constant flagged noisy."""
        return [d.series for d in self.devices_roofs if d.noisy]

    @property
    def devices(self) -> list[str]:
        return list(dict.fromkeys(d.device for d in self.devices_roofs))

    @property
    def headline(self) -> str:
        peaks = ", ".join(f"{d.series} {number(d.peak_gflops or 0)} GFLOP/s, {number(d.bandwidth_gbs or 0)} GB/s"
                          for d in self.devices_roofs)
        unclear = self.measured_crossover is not None and self.measured_crossover.call == UNCLEAR
        measured = "cannot tell" if unclear else self.measured_crossover_n or "-"
        flips = self.prediction_flips
        predicted = "cannot tell" if flips else self.predicted_crossover_n or "-"
        cross = ("" if self.predicted_crossover_n is None and self.measured_crossover_n is None and not unclear
                 and not flips else f"; crossover predicted {predicted}, measured {measured}")
        return peaks + cross


# ---- the kind's record (core/results/result_kind.py); the Results page overlays its roofs, it has no tidy table
RESULT_KIND = ResultKind(name=KIND, schema=RooflineRun, title="roofline", detect=("points", "devices"))
