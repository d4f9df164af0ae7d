"""A saved run as the store hands it back, and the facts recorded with every run."""

from __future__ import annotations

import platform
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from core.errors import DashboardError
from core.store.payloads import payload_devices

UNKNOWN_MACHINE = "unknown machine"
VERSIONED_PACKAGES = ("torch", "numpy", "pandas", "scikit-learn", "streamlit", "plotly")


@dataclass(frozen=True)
class StoredRun:
    """One saved sweep or training run: the CLI JSON payload plus where, how and when it ran."""

    run_id: int
    uid: str  # stable across stores: an import of an export never duplicates a run
    kind: str  # 'matmul' | 'train'
    created_at: str  # ISO 8601, UTC
    label: str  # optional name given by the user, e.g. "Ana's laptop"
    machine: dict[str, Any]  # core.platform.hardware.inspect_machine().to_dict(); {} when unknown
    settings: dict[str, Any]  # the options the run was started with
    versions: dict[str, Any]  # python, torch, ... at the time of the run
    payload: dict[str, Any]  # the CLI JSON object

    @property
    def machine_label(self) -> str:
        return machine_label(self.machine)

    @property
    def devices(self) -> list[str]:
        return payload_devices(self.kind, self.payload)

    @property
    def title(self) -> str:
        """How a chart legend or a select box names this run."""
        who = self.label or self.machine_label
        return f"#{self.run_id} {self.kind} · {who} · {self.created_at[:16].replace('T', ' ')}"

    @property
    def headline(self) -> str:
        """The run's result in a few words, for the listing."""
        p = self.payload
        if self.kind == "matmul":
            sizes = [r["n"] for r in p["results"]]
            cross = p.get("crossover_n")
            crossing = f"GPU wins from n≈{cross:.0f}" if cross else "no crossover"
            return f"n {min(sizes)}–{max(sizes)}, {crossing}"
        acc = p.get("test_accuracy")
        accuracy = f"accuracy {acc:.3f}" if acc is not None else "no accuracy"
        return f"{accuracy} in {p.get('train_seconds') or 0:.1f} s, {len(p['epochs'])} epochs"

    def to_record(self) -> dict[str, Any]:
        """The run as one entry of an export file (no store-local id)."""
        return {"uid": self.uid, "kind": self.kind, "created_at": self.created_at, "label": self.label,
                "machine": self.machine, "settings": self.settings, "versions": self.versions,
                "payload": self.payload}


def pick_runs(runs: Sequence[StoredRun], *, machines: Collection[str] = (), devices: Collection[str] = (),
              kinds: Collection[str] = ()) -> list[StoredRun]:
    """The runs matching every non-empty filter: any of the machines, any of the devices, any of the kinds."""
    return [r for r in runs
            if (not machines or r.machine_label in machines)
            and (not devices or set(r.devices) & set(devices))
            and (not kinds or r.kind in kinds)]


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
        index = int(device.split(":")[1]) if ":" in device and device.split(":")[1].isdigit() else 0
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


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(value: Any, path: str) -> str:
    """An imported timestamp, normalised to the store's UTC form, or a DashboardError."""
    if isinstance(value, str):
        try:
            stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            stamp = None
        if stamp is not None:
            if stamp.tzinfo is None:
                stamp = stamp.replace(tzinfo=timezone.utc)
            return stamp.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    raise DashboardError(f"{path}: expected an ISO 8601 time such as 2025-01-31T14:05:00Z, got {value!r}")
