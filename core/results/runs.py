"""A saved run as it travels between stores: the result plus who, where and when.

This is one entry of an export file's `runs` list and one row of the store. Every field is
required in an export (the exporter always writes them all), so a hand-edited file that lost
one is refused with the field's name.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

from core.results import fields as f
from core.results.kinds import Result, kind_name, read_result
from core.results.machine import read_machine

MAX_LABEL_CHARS = 200
MAX_VERSION_CHARS = 200


@dataclass(frozen=True)
class RunRecord:
    uid: str  # stable across stores: an import of an export never duplicates a run
    created_at: str  # ISO 8601, UTC, "2025-01-31T14:05:00Z"
    label: str  # optional name given by the user, e.g. "Ana's laptop"
    machine: dict[str, Any]  # inspect_machine().to_dict(), checked by read_machine; {} when unknown
    settings: dict[str, Any]  # the options the run was started with
    versions: dict[str, str | None]  # python, torch, ... at the time of the run
    result: Result

    @property
    def kind(self) -> str:
        return self.result.kind

    @property
    def devices(self) -> list[str]:
        return self.result.devices

    def relabelled(self, label: str) -> RunRecord:
        return replace(self, label=label) if label else self

    def to_json(self) -> dict[str, Any]:
        return {"uid": self.uid, "kind": self.kind, "created_at": self.created_at, "label": self.label,
                "machine": self.machine, "settings": self.settings, "versions": self.versions,
                "payload": self.result.to_json()}

    @classmethod
    def from_json(cls, value: Any, path: str) -> RunRecord:
        run = f.obj(value, path)
        for key in ("uid", "kind", "created_at", "label", "machine", "settings", "versions", "payload"):
            f.field(run, key, path)
        kind = kind_name(run["kind"], f"{path}.kind")
        versions = f.obj(run["versions"], f"{path}.versions")
        for name, version in versions.items():
            f.optional_text(version, f"{path}.versions.{name}", max_chars=MAX_VERSION_CHARS)
        return cls(uid=f.text(run["uid"], f"{path}.uid"), created_at=f.timestamp(run["created_at"], f"{path}.created_at"),
                   label=f.text(run["label"], f"{path}.label", max_chars=MAX_LABEL_CHARS, empty=True),
                   machine=read_machine(run["machine"], f"{path}.machine"),
                   settings=f.obj(run["settings"], f"{path}.settings"), versions=versions,
                   result=read_result(kind, run["payload"], f"{path}.payload"))


def content_uid(obj: Any) -> str:
    """A CLI JSON file has no id: its content hash makes importing it twice a no-op."""
    return "sha256:" + hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()
