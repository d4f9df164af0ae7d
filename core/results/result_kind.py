"""What a kind of result is: one `ResultKind` record, declared at the end of the kind's own module, that
the JSON reader, the import, the store's tidy tables, the Results page's filter and the Class board read
everything from (its name, type, title, the keys that mark its bare CLI object, its rows in a table).

Like a Why-parallel section (core/parallel/section.py), a kind is one module and one line in the list
(`core/results/kinds.py`'s `RESULT_KINDS`). How the Results page draws it is the one thing declared
elsewhere, in `core/charts/results.py`'s `VIEWS`: a figure is drawn by the charts layer, which this
bottom layer may not import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# (result, device title) -> (series name, row): one row of the kind's tidy table. The device title turns a
# device ("cuda:0") into what its machine calls it ("NVIDIA T4 (cuda:0)"); the series name is what a chart's
# legend shows after the run's id ("#7 NVIDIA T4 (cuda:0) float32").
Rows = Callable[[Any, Callable[[str], str]], Iterable[tuple[str, Mapping[str, object]]]]


@dataclass(frozen=True)
class Frame:
    """A kind's tidy table: its own columns (after the run's and `series`) and its rows."""

    columns: tuple[str, ...]
    rows: Rows
    order: tuple[str, ...] = ()  # columns the table is sorted by (stably), if any


@dataclass(frozen=True)
class ResultKind:
    """One kind of result, as every caller sees it.

    The headline (the one line the Results listing, the CLI and the Class board show) and the devices are
    properties of the type itself (`schema.headline`, `schema.devices`), declared in the same module.
    """

    name: str  # the one name: the JSON's "kind", the store's column, the CLI's `--kind`
    schema: type[Any]  # the declared type (a `schema.Kind` subclass with `settings`): JSON form, checks, headline
    title: str  # "matmul sweep": the Results page's filter, messages
    detect: tuple[str, ...]  # keys that all mark a bare CLI object of this kind when it has no "kind"
    frame: Frame | None = None  # its rows in the store's tidy tables and the CSV export; None: not tabulated
    old_names: tuple[str, ...] = ()  # names older files gave the kind ("matmul_race")
    board: bool = False  # the Class board charts it (and its guesses): it reads these runs in full

    @property
    def version(self) -> int:
        """The newest schema version this dashboard writes and reads."""
        return int(self.schema.schema_version)

    def marks(self, obj: Mapping[str, Any]) -> bool:
        """Does a bare JSON object without "kind" look like this kind's?"""
        return all(key in obj for key in self.detect)

    def headline(self, result: Any) -> str:
        """The one line a listing shows for a result of this kind."""
        return str(result.headline)
