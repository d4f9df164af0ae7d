"""A saved run as the store hands it back, and the facts recorded with every run."""

from __future__ import annotations

import platform
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from core.results import Result, RunRecord
from core.results.runs import IMPORTED, Provenance, provenance_of

UNKNOWN_MACHINE = "unknown machine"
VERSIONED_PACKAGES = ("torch", "numpy", "pandas", "scikit-learn", "streamlit", "plotly")


@dataclass(frozen=True)
class StoredRun:
    """One saved sweep or training run: its typed record plus the store's id for it."""

    run_id: int
    record: RunRecord
    owner: str | None = field(default=None, repr=False)  # the saving session's token hash (core.store.access)

    @property
    def provenance(self) -> Provenance:
        return provenance_of(self.record)

    @property
    def source(self) -> str:
        """'measured', 'imported', 'imported (notebook)' or 'notebook': the listing's column."""
        return self.provenance.shown

    @property
    def imported(self) -> bool:
        return self.provenance.source == IMPORTED

    @property
    def uid(self) -> str:
        return self.record.uid

    @property
    def kind(self) -> str:
        return self.record.kind

    @property
    def created_at(self) -> str:
        return self.record.created_at

    @property
    def label(self) -> str:
        return self.record.label

    @property
    def machine(self) -> dict[str, Any]:
        return self.record.machine

    @property
    def settings(self) -> dict[str, Any]:
        return self.record.settings

    @property
    def versions(self) -> dict[str, str | None]:
        return self.record.versions

    @property
    def result(self) -> Result:
        return self.record.result

    @property
    def payload(self) -> dict[str, Any]:
        """The result's JSON form (what `matmul --json` or `train --json` prints)."""
        return self.record.result.to_json()

    @property
    def machine_label(self) -> str:
        return machine_label(self.machine)

    @property
    def devices(self) -> list[str]:
        return self.record.devices

    @property
    def title(self) -> str:
        """How a chart legend or a select box names this run."""
        who = self.label or self.machine_label
        mark = " (imported)" if self.imported else ""
        return f"#{self.run_id} {self.kind}{mark} · {who} · {self.created_at[:16].replace('T', ' ')}"

    @property
    def headline(self) -> str:
        """The run's result in a few words, for the listing."""
        return self.result.headline


@dataclass(frozen=True)
class UnreadableRun:
    """A stored row this version cannot read (written by hand, or by an older, laxer version).

    Listed so it can be deleted; never drawn, and never the reason a whole listing fails.
    """

    run_id: int
    kind: str
    created_at: str
    reason: str
    owner: str | None = field(default=None, repr=False)

    @property
    def title(self) -> str:
        return f"#{self.run_id} {self.kind} · unreadable: {self.reason}"


@dataclass(frozen=True)
class RunListing:
    """What a read of the store found: the runs, and the rows that could not be read."""

    runs: list[StoredRun]
    unreadable: list[UnreadableRun]


def pick_runs(runs: Sequence[StoredRun], *, machines: Collection[str] = (), devices: Collection[str] = (),
              kinds: Collection[str] = (), sources: Collection[str] = ()) -> list[StoredRun]:
    """The runs matching every non-empty filter: any of the machines, devices, kinds, and sources
    (measured, imported, notebook: where the run came from, `Provenance.source`)."""
    return [r for r in runs
            if (not machines or r.machine_label in machines)
            and (not devices or set(r.devices) & set(devices))
            and (not kinds or r.kind in kinds)
            and (not sources or r.provenance.source in sources)]


def machine_label(machine: dict[str, Any]) -> str:
    """CPU name plus GPU names: what a teacher recognises in a filter ('Xeon ... + NVIDIA H200')."""
    cpu = (machine.get("cpu") or {}).get("name") if isinstance(machine.get("cpu"), dict) else None
    gpus = [g.get("name") or "GPU" for g in machine.get("gpus") or [] if isinstance(g, dict)]
    parts = [cpu] if cpu else []
    if gpus:
        parts.append(" + ".join(dict.fromkeys(gpus)))
    elif machine.get("mps_available"):
        parts.append("Apple GPU (MPS)")
    return " + ".join(parts) if parts else UNKNOWN_MACHINE


def device_title(machine: dict[str, Any], device: str) -> str:
    """'cuda:0 (NVIDIA H200)', 'cpu (AMD EPYC ...)': a device key named by its hardware."""
    name = None
    if device.startswith("cuda"):
        index = int(device.split(":")[1]) if ":" in device and device.split(":")[1].isdecimal() else 0
        gpus = [g for g in machine.get("gpus") or [] if isinstance(g, dict)]
        name = next((g.get("name") for g in gpus if g.get("index") == index), None)
    elif device == "cpu" and isinstance(machine.get("cpu"), dict):
        name = machine["cpu"].get("name")
    elif device == "mps":
        name = "Apple GPU"
    return f"{device} ({name})" if name else device


def software_versions() -> dict[str, Any]:
    """Versions that change timings: Python, the platform and the numeric packages."""
    versions: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    for package in VERSIONED_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions
