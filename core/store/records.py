"""A saved run as the store hands it back, and the facts recorded with every run."""

from __future__ import annotations

import functools

import platform
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from core.results.kinds import Result
from core.results.machine import Machine
from core.results.runs import RunRecord
from core.results.runs import IMPORTED, Provenance, provenance_of

UNKNOWN_MACHINE = "unknown machine"
BUSY_MARK, QUIET_MARK, UNKNOWN_MARK = "busy: noisy", "quiet", ""  # the load column: runs saved before it say nothing
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
    def machine(self) -> Machine:
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
        return run_title(self.run_id, self.kind, self.label or self.machine_label, self.imported, self.created_at)

    @property
    def headline(self) -> str:
        """The run's result in a few words, for the listing."""
        return self.result.headline

    @property
    def summary(self) -> RunSummary:
        """What the listing shows of this run (the store keeps it beside the run, so a listing reads no payload)."""
        facts = summary_facts(self.record)
        return RunSummary(self.run_id, self.kind, self.created_at, self.label, self.machine_label,
                          tuple(facts["devices"]), facts["headline"], facts["load"], self.provenance.source,
                          facts["shown"], self.owner)


def run_title(run_id: int, kind: str, who: str, imported: bool, created_at: str) -> str:
    mark = " (imported)" if imported else ""
    return f"#{run_id} {kind}{mark} · {who} · {created_at[:16].replace('T', ' ')}"


def load_mark(result: Result) -> str:
    """'busy: noisy' for a run timed while other programs kept the machine busy, 'quiet', or '' if not recorded."""
    load = getattr(result, "load", None)  # a kind that records no machine load (not every kind does) says nothing
    return UNKNOWN_MARK if load is None else BUSY_MARK if load.busy else QUIET_MARK


# Bump when a kind's `headline`, `load_mark` or `Provenance.shown` changes what it says: a stored summary of
# another version is read again from its run (and rewritten), so the listing never shows yesterday's wording.
# 3: a roofline's "predicted cannot tell"; 4: a matmul sweep's headline names its skipped sizes
SUMMARY_VERSION = 4


def summary_facts(record: RunRecord) -> dict[str, Any]:
    """The listing's facts that need the payload read: stored as the row's `summary_json` when it is written."""
    return {"v": SUMMARY_VERSION, "headline": record.result.headline, "devices": list(record.devices),
            "load": load_mark(record.result), "shown": provenance_of(record).shown}


@dataclass(frozen=True)
class RunSummary:
    """One row of the Results page's listing, read from the store's columns without the run's payload.

    Reading and checking a payload costs about a millisecond (more on a busy server); a page of 500
    summaries costs a few. The payload is read only for the runs charted, compared or exported.
    """

    run_id: int
    kind: str
    created_at: str
    label: str
    machine_label: str
    devices: tuple[str, ...]
    headline: str
    load: str  # load_mark's text
    origin: str  # Provenance.source: measured, imported, notebook (what the filter matches)
    source: str  # Provenance.shown: the listing's column ('imported (notebook)')
    owner: str | None = field(default=None, repr=False)
    # when the run reached the store, by the server's clock ('' where a board stored before schema 5 did not
    # record it); created_at is what the run, or its imported file, claims. StoredRun.summary does not know it.
    stored_at: str = field(default="", compare=False)

    @property
    def imported(self) -> bool:
        return self.origin == IMPORTED

    @property
    def title(self) -> str:
        """How a select box names this run (as StoredRun.title does)."""
        return run_title(self.run_id, self.kind, self.label or self.machine_label, self.imported, self.created_at)


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


@dataclass(frozen=True)
class SummaryListing:
    """A listing page: the runs' summaries, and the rows that could not be read."""

    runs: list[RunSummary]
    unreadable: list[UnreadableRun]


@dataclass(frozen=True)
class RunFilter:
    """The Results page's filters, each empty tuple matching all: applied in SQL, so only what is shown is read."""

    machines: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # Provenance.source values

    @classmethod
    def of(cls, machines: Collection[str] | None = None, devices: Collection[str] | None = None,
           kinds: Collection[str] | None = None, sources: Collection[str] | None = None) -> RunFilter:
        """From widget values (lists, or None before the widget exists): sorted, so equal filters cache alike."""
        return cls(*(tuple(sorted({str(v) for v in values or ()})) for values in (machines, devices, kinds, sources)))


def pick_runs(runs: Sequence[StoredRun], *, machines: Collection[str] = (), devices: Collection[str] = (),
              kinds: Collection[str] = (), sources: Collection[str] = ()) -> list[StoredRun]:
    """The runs matching every non-empty filter: any of the machines, devices, kinds, and sources
    (measured, imported, notebook: where the run came from, `Provenance.source`)."""
    return [r for r in runs
            if (not machines or r.machine_label in machines)
            and (not devices or set(r.devices) & set(devices))
            and (not kinds or r.kind in kinds)
            and (not sources or r.provenance.source in sources)]


def machine_label(machine: Machine) -> str:
    """CPU name plus GPU names: what a teacher recognises in a filter ('Xeon ... + NVIDIA H200')."""
    cpu = machine.cpu.name if machine.cpu is not None else None
    gpus = [g.name or "GPU" for g in machine.gpus]
    parts = [cpu] if cpu else []
    if gpus:
        parts.append(" + ".join(dict.fromkeys(gpus)))
    elif machine.mps_available:
        parts.append("Apple GPU (MPS)")
    return " + ".join(parts) if parts else UNKNOWN_MACHINE


def device_title(machine: Machine, device: str) -> str:
    """'cuda:0 (NVIDIA H200)', 'cpu (AMD EPYC ...)': a device key named by its hardware."""
    name = None
    if device.startswith("cuda"):
        index = int(device.split(":")[1]) if ":" in device and device.split(":")[1].isdecimal() else 0
        gpu = machine.gpu(index)
        name = gpu.name if gpu is not None else None
    elif device == "cpu" and machine.cpu is not None:
        name = machine.cpu.name
    elif device == "mps":
        name = "Apple GPU"
    return f"{device} ({name})" if name else device


def software_versions() -> dict[str, Any]:
    """Versions that change timings: Python, the platform and the numeric packages (this process's: the
    packages it imported do not change while it runs, so they are looked up once)."""
    return dict(_versions())


@functools.cache
def _versions() -> tuple[tuple[str, Any], ...]:
    """Looked up once per process: sixty saves after a shared race read the packages' metadata sixty times
    (about a tenth of each save's CPU, bench/classroom_server.py)."""
    versions: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform()}
    for package in VERSIONED_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return tuple(versions.items())
