"""A saved run as it travels between stores: the result plus who, where and when.

This is one entry of an export file's `runs` list and one row of the store. Every field is
required in an export (the exporter always writes them all), so a hand-edited file that lost
one is refused with the field's name. `provenance` (where the run came from) is the one later key:
an export written before it existed still reads, and its runs are marked imported on arrival.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Annotated, Any, cast

from pydantic import (Field, PlainSerializer, PlainValidator, SerializerFunctionWrapHandler, ValidationInfo,
                      model_serializer, model_validator)
from pydantic.dataclasses import dataclass

from core.errors import DashboardError
from core.results import fields as f
from core.results import kinds
from core.results.kinds import Result, kind_name, read_result
from core.results.machine import Machine
from core.results.schema import Declared

MAX_LABEL_CHARS = 200
MAX_VERSION_CHARS = 200
# measured on this server (a page or the CLI), imported, Colab notebook
MEASURED, IMPORTED, NOTEBOOK = "measured", "imported", "notebook"
BROWSER = "reported by a browser"  # measured by a student's browser (core.browser): an untrusted client, checked
SOURCES = (MEASURED, IMPORTED, NOTEBOOK, BROWSER)
_UNSET = Field(default=None, exclude_if=f.omitted_when_none)  # an optional key, written only when set


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise f.Expected("a JSON object")
    return value


def _kind(value: Any) -> str:
    try:
        return kind_name(value, "kind")
    except DashboardError:
        raise f.Expected(f"one of {', '.join(kinds.KINDS)}") from None


def _source(value: Any) -> str:
    if value not in SOURCES:
        raise f.Expected(f"one of {', '.join(SOURCES)}")
    return str(value)


def _result(value: Any) -> Result:
    if not isinstance(value, tuple(kinds.SCHEMAS.values())):
        raise f.Expected("a JSON object")  # the payload was not an object, so it was not read
    return cast(Result, value)  # one of the registered kinds' types (the list is read when called)


@dataclass(frozen=True, kw_only=True)
class Provenance(Declared):
    """Where a run came from: measured by this server, imported from a file, or measured by the notebook.

    An import always sets `source` to imported, whatever the file claimed (kept in `origin`), so an
    edited export can never pass for a run measured here.
    """

    source: Annotated[str, PlainValidator(_source)]
    file: f.OptionalText = _UNSET  # the imported file's name
    imported_at: f.OptionalTimestamp = _UNSET  # when it was imported (UTC)
    session: f.OptionalText = _UNSET  # which browser session or "command line" imported it (never its owner token)
    origin: Annotated[str | None, PlainValidator(f.one_of(SOURCES))] = _UNSET  # what the file said the run was

    @property
    def shown(self) -> str:
        """The listing's column and the legends' suffix: 'measured', 'imported', 'imported (notebook)'."""
        return f"{self.source} ({self.origin})" if self.source == IMPORTED and self.origin not in (None, IMPORTED) \
            else self.source


def provenance_of(record: RunRecord) -> Provenance:
    """A record's provenance; a run stored before provenance existed was measured where it is stored."""
    return record.provenance if record.provenance is not None else Provenance(source=MEASURED)


@dataclass(frozen=True, kw_only=True)
class RunRecord(Declared):
    uid: f.Text  # stable across stores: an import of an export never duplicates a run
    kind: Annotated[str, PlainValidator(_kind)]  # the result's kind ("matmul_race" files read as "matmul")
    created_at: f.Timestamp  # ISO 8601, UTC, "2025-01-31T14:05:00Z"
    label: f.AnyText  # optional name given by the user, e.g. "Ana's laptop"
    machine: Machine  # inspect_machine().record(); {} when unknown
    settings: Annotated[dict[str, Any], PlainValidator(_object)]  # the options the run was started with
    versions: dict[str, f.OptionalText]  # python, torch, ... at the time of the run
    result: Annotated[Result, PlainValidator(_result), PlainSerializer(lambda r: r.to_json())]  # "payload" in JSON
    provenance: Provenance | None = _UNSET  # a later key

    @model_validator(mode="before")
    @classmethod
    def _read_payload(cls, data: Any, info: ValidationInfo) -> Any:
        """The payload, read by its kind's declaration, which names a bad field from the run's own path."""
        if not isinstance(data, dict) or "result" in data:
            return data  # not an object (the reader says so), or built here with result=
        context = info.context if isinstance(info.context, dict) else {}
        path = context.get(f.PATH, "run")
        if "payload" not in data:
            raise DashboardError(f"{path}: missing 'payload'")
        data = {("result" if k == "payload" else k): v for k, v in data.items() if k != "result"}
        if not isinstance(data["result"], dict) or "kind" not in data:
            return data
        kind = kind_name(data["kind"], f"{path}.kind")
        return {**data, "result": read_result(kind, data["result"], f"{path}.payload")}

    @model_serializer(mode="wrap")
    def _payload_key(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {("payload" if k == "result" else k): v for k, v in data.items()}

    @property
    def devices(self) -> list[str]:
        return self.result.devices

    def relabelled(self, label: str) -> RunRecord:
        return replace(self, label=label) if label else self

    def imported(self, file: str, at: str, session: str) -> RunRecord:
        """This record as it lands on a board by an import: marked imported, what the file claimed kept as origin."""
        claimed = self.provenance.source if self.provenance is not None else None
        return replace(self, provenance=Provenance(source=IMPORTED, file=file[:200] or None, imported_at=at,
                                                   session=session[:200] or None, origin=claimed))


def content_uid(obj: Any) -> str:
    """A CLI JSON file has no id: its content hash makes importing it twice a no-op."""
    return "sha256:" + hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()
