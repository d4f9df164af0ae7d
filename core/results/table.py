"""The one table of a declared result's rows, for people and for files, from the declaration alone.

A row type (a `MatmulPoint`) declares each field once, with its type and, for a column a person reads, its
`fields.Shown` label and unit. From that:

- `columns(cls)`: every scalar field as a CSV column, named by its JSON key and kept in its stored unit
  (seconds), a nested record's fields in its place (a point's `clock`), lists (raw samples) and fields the
  JSON leaves out skipped: what every CSV of such rows has, after the run's own columns;
- `human_table(rows)`: the `Shown` columns, headed "median ms", scaled to their unit, for the race page
  (through `units.readable`) and the CLI (through `units.cell`): three significant figures, blank for not
  measured; a column blank in every row is left out.

So a field added to the type reaches the page, the CLI and every CSV with no edit here.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core.results.fields import Shown
from core.results.schema import Declared

if TYPE_CHECKING:
    import pandas as pd


@dataclasses.dataclass(frozen=True)
class Column:
    """One column: where its value sits in a row (`path`), its CSV name (`key`) and how a person reads it."""

    key: str
    path: tuple[str, ...]
    shown: Shown | None

    def value(self, row: Any) -> Any:
        """The stored value (seconds, flags, text): a CSV cell."""
        for name in self.path:
            row = getattr(row, name)
        return row

    def human(self, row: Any) -> Any:
        """The value in the column's unit ('median ms' in milliseconds), or what `Shown.read` names."""
        assert self.shown is not None
        if self.shown.read is not None:
            return getattr(row, self.shown.read)
        value = self.value(row)
        if self.shown.scale != 1.0 and isinstance(value, (int, float)) and not isinstance(value, bool):
            return value * self.shown.scale
        return value


def _is_list(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_list(typing.get_args(annotation)[0])
    return origin in (tuple, list)


def _is_record(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Declared) and dataclasses.is_dataclass(annotation)


def columns(cls: type[Any], prefix: tuple[str, ...] = ()) -> list[Column]:
    """Every scalar field of a declared row type, in declaration order; nested records' fields in their place."""
    out: list[Column] = []
    for name, info in cls.__pydantic_fields__.items():
        if info.exclude or _is_list(info.annotation):
            continue
        if _is_record(info.annotation):
            out += columns(info.annotation, (*prefix, name))
            continue
        shown = next((m for m in info.metadata if isinstance(m, Shown)), None)
        out.append(Column(name, (*prefix, name), shown))
    return out


def shown_columns(cls: type[Any]) -> list[Column]:
    """The columns a person reads: those declared with a `Shown`."""
    return [c for c in columns(cls) if c.shown is not None]


def flat_row(row: Any) -> dict[str, Any]:
    """A row as CSV cells: {JSON key: stored value}, nested records flattened."""
    return {c.key: c.value(row) for c in columns(type(row))}


def human_rows(rows: Sequence[Any]) -> tuple[list[str], list[list[Any]]]:
    """(headers, rows) of the shown columns, values in their units; columns blank in every row left out."""
    if not rows:
        return [], []
    shown = shown_columns(type(rows[0]))
    cells = [[c.human(r) for c in shown] for r in rows]
    keep = [i for i in range(len(shown)) if any(row[i] is not None and row[i] != "" for row in cells)]
    headers = [_header(shown[i]) for i in keep]
    return headers, [[row[i] for i in keep] for row in cells]


def _header(column: Column) -> str:
    return column.shown.header if column.shown is not None else column.key


def human_table(rows: Sequence[Any]) -> pd.DataFrame:
    """The shown columns as a data frame (the page passes it through `units.readable`)."""
    import pandas as pd

    headers, cells = human_rows(rows)
    return pd.DataFrame(cells, columns=headers)
