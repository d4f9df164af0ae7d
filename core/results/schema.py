"""What every declared result shares: its JSON form, its reader, and (for a kind) version and extra keys.

A result type is declared once, as a frozen pydantic dataclass of `core.results.fields` types; core
returns it, the store saves it, the export writes it, the import reads it and the charts draw it,
all as the same object. Nothing spells its field names a second time: `to_json` and `from_json`
derive from the declaration.

Why pydantic rather than hand-written readers: its validation walks nested dataclasses, tuples and
optional fields from the type hints in one pass (in Rust), and a field added to a class is read,
written and checked with no other edit. The plain `dataclasses` module would need that walker
written here (it was: a `to_json` and a `from_json` per class, and field lists kept again beside them).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, TypeVar

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator
from pydantic.dataclasses import dataclass

from core.results import fields as f

S = TypeVar("S", bound="Declared")


class Declared:
    """A result type's JSON form and reader, from its declaration."""

    def to_json(self) -> dict[str, Any]:
        """The object as JSON values, in declaration order; optional late keys only when set."""
        return f.write(self)

    @classmethod
    def from_json(cls: type[S], value: Any, path: str) -> S:
        """Read and check a parsed JSON object, or raise a DashboardError naming the bad field."""
        return f.read(cls, value, path)


def field_names(cls: type[Any]) -> list[str]:
    """A declared type's stored fields, in order."""
    return [field.name for field in dataclasses.fields(cls)]


def columns(cls: type[Any]) -> list[str]:
    """A declared type's JSON keys, in order: its fields, then what it derives (`computed_field`s).
    What a table of such rows has as columns."""
    derived = getattr(cls, "__pydantic_decorators__", None)
    declared = getattr(cls, "__pydantic_fields__", {})
    kept = [name for name in field_names(cls) if name not in declared or not declared[name].exclude]
    return kept + (list(derived.computed_fields) if derived is not None else [])


@dataclass(frozen=True, kw_only=True)
class Kind(Declared):
    """A whole result of one kind (a sweep, a training run, a roofline), as saved and exported.

    Its JSON starts with `"kind"` and `"schema_version"`; keys a newer version added (unknown
    here) are kept in `extra` and written back, so a round trip through an older dashboard loses
    nothing.
    """

    kind: ClassVar[str]
    schema_version: ClassVar[int]
    json_names: ClassVar[dict[str, str]] = {}  # a field whose JSON key differs: {field name: key}
    extra: dict[str, Any] = Field(default_factory=dict, kw_only=True)  # keys a newer version added, kept as they came

    @model_validator(mode="before")
    @classmethod
    def _keep_unknown_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        names = {key: name for name, key in cls.json_names.items()}
        data = {names.get(k, k): v for k, v in data.items()}
        known = set(field_names(cls)) - {"extra"}
        derived = set(cls.__pydantic_decorators__.computed_fields)  # type: ignore[attr-defined]
        header = {"kind", "schema_version"}
        return {**{k: v for k, v in data.items() if k in known},
                "extra": {k: v for k, v in data.items() if k not in known | derived | header}}

    @model_serializer(mode="wrap")
    def _write_header(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        extra = data.pop("extra", {})
        named = {self.json_names.get(k, k): v for k, v in data.items()}
        return {**extra, "kind": self.kind, "schema_version": self.schema_version, **named}
