"""Printing for the CLI: a plain aligned table for people, one JSON object for scripts."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

from core.results.jsonio import dumps
from core.platform.units import cell


def print_json(obj: Any) -> None:
    """Exactly one JSON object on stdout, through core.results' one JSON writer (NaN/inf -> null)."""
    print(dumps(obj, indent=2))


TABLE_WIDTH = 100  # columns a table keeps to by default: a terminal's usual 80-120, and the 100
ELLIPSIS = "…"
MIN_ELIDED = 8  # an elided column keeps at least this many characters (or its header's)


def wrap(lines: str | Iterable[str], width: int = TABLE_WIDTH) -> str:
    """Prose for a terminal: every line longer than `width` broken at spaces, continuation lines indented by two;
    shorter lines (and blank ones) kept as they are. For sentences only: a table is fitted by format_table."""
    text = [lines] if isinstance(lines, str) else list(lines)
    out: list[str] = []
    for line in (part for block in text for part in block.split("\n")):
        out += textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False) if len(line) > width \
            else [line]
    return "\n".join(out)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, max_width: int | None = None,
                 elide: Sequence[str] = ()) -> str:
    """Left-aligned text, right-aligned numbers, two spaces between columns.

    With `max_width`, the columns named in `elide` (free text: labels, names, results) give up characters, the
    first named first (each down to its header's width or MIN_ELIDED), until the table fits; a cut cell ends in
    an ellipsis. Other columns are never cut.
    """
    cells = [[_cell(v) for v in row] for row in rows]
    widths = fitted_widths(headers, rows, max_width=max_width, elide=elide)
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(_cut(v, w).rjust(w) if num else _cut(v, w).ljust(w)
                         for v, w, num in zip(values, widths, numeric)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def split_tables(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, keep: int = 1,
                 max_width: int = TABLE_WIDTH) -> str:
    """A table too wide for `max_width` as several, one under another: each repeats the first `keep` columns
    (what names a row) and takes the next columns while they fit, so no column is cut and no line is too long."""
    widths = fitted_widths(headers, rows)
    base = sum(widths[:keep]) + 2 * keep
    groups: list[list[int]] = [[]]
    for i in range(keep, len(headers)):
        used = base + sum(widths[j] + 2 for j in groups[-1])
        if groups[-1] and used + widths[i] > max_width:
            groups.append([])
        groups[-1].append(i)
    tables = [[*range(keep), *group] for group in groups if group] or [list(range(len(headers)))]
    return "\n\n".join(format_table([headers[i] for i in cols], [[row[i] for i in cols] for row in rows])
                       for cols in tables)


def fitted_widths(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, max_width: int | None = None,
                  elide: Sequence[str] = ()) -> list[int]:
    """Each column's width in format_table's output: a caller can tell which cells were cut and show them whole."""
    widths = [max([len(h)] + [len(_cell(r[i])) for r in rows]) for i, h in enumerate(headers)]
    return widths if max_width is None else _fit(headers, widths, max_width, elide)


def cut_cells(headers: Sequence[str], rows: Sequence[Sequence[Any]], column: str, *, max_width: int | None = None,
              elide: Sequence[str] = ()) -> list[int]:
    """Indexes of the rows whose `column` format_table cuts (ends in an ellipsis) at these settings."""
    if column not in headers:
        return []
    i = list(headers).index(column)
    width = fitted_widths(headers, rows, max_width=max_width, elide=elide)[i]
    return [k for k, row in enumerate(rows) if len(_cell(row[i])) > width]


def _fit(headers: Sequence[str], widths: list[int], max_width: int, elide: Sequence[str]) -> list[int]:
    """Narrow the elidable columns in `elide`'s order until the row fits `max_width` (or none can give more)."""
    widths = list(widths)
    over = sum(widths) + 2 * (len(widths) - 1) - max_width
    for name in elide:
        if over <= 0 or name not in headers:
            continue
        i = list(headers).index(name)
        give = min(over, widths[i] - min(widths[i], max(MIN_ELIDED, len(name))))
        widths[i] -= give
        over -= give
    return widths


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + ELLIPSIS


def _cell(value: Any) -> str:
    """As every table shows it (core.tables): significant figures, nothing as blank."""
    return cell(value)
