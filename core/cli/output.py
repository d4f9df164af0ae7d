"""Printing for the CLI: a plain aligned table for people, one JSON object for scripts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.results.jsonio import dumps


def print_json(obj: Any) -> None:
    """Exactly one JSON object on stdout, through core.results' one JSON writer (NaN/inf -> null)."""
    print(dumps(obj, indent=2))


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned text, right-aligned numbers, two spaces between columns."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
