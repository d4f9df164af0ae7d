"""Human-readable figures shared by the pages, the notebook and the CLI: sizes, shares, and whole tables.

Every table a person reads goes through `readable` (pages' st.dataframe, the notebook's display) or
`cell` (the CLI's plain-text tables), so a cell reads `114` or `127,000` rather than `114.2115` or
`127307.8684`, and a value that was not measured is an empty cell, never Python's `None` or pandas'
`nan`. Units belong in the column's name ("median ms", "peak GFLOP/s"), so a column reads in one unit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

GIB = 2**30
BINARY_UNITS = (("B", 1), ("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30), ("TiB", 2**40))  # what `free -h` shows


def size_unit(n_bytes: float) -> tuple[str, int]:
    """The binary unit a person would write `n_bytes` in, and its bytes: the largest whose figure, at three
    significant figures, is 1 or more ('MiB' for 67 MiB, 'GiB' for 1,023.9 MiB, which reads '1 GiB'). A table
    column picks it once, for its largest value, so the column reads in one unit."""
    chosen = BINARY_UNITS[0]
    for unit in BINARY_UNITS:
        if abs(float(f"{n_bytes / unit[1]:.{SIGNIFICANT}g}")) >= 1:
            chosen = unit
    return chosen


def byte_size(n_bytes: float | None, unit: str | None = None) -> str:
    """An amount of memory or a file's size as a person writes it: '67 MiB' (not '0.0654 GiB'), '12.3 GiB',
    '126 GiB', '512 B' (three figures, binary units, the unit from `size_unit`; `unit` forces one, for a sentence
    that compares two sizes in the same unit); past a million TiB (a mistyped size) '1.68e+20 TiB', not a 21-digit
    number; 'unknown' where a query failed."""
    if n_bytes is None or is_blank(n_bytes):
        return "unknown"
    name, scale = next(u for u in BINARY_UNITS if u[0] == unit) if unit else size_unit(n_bytes)
    value = n_bytes / scale
    return f"{number(value)} {name}" if abs(value) < 1e6 else f"{value:.{SIGNIFICANT}g} {name}"


SIGNIFICANT = 3  # figures a timing on a shared machine can back: its noise is rarely below 1 %
WHOLE_FROM = 1000.0  # from here on a number is shown whole, with thousands separators (127,000)

Format = Callable[[Any], str]
EMPTY = "—"  # a figure not measured (yet), where a widget needs some text (st.metric); a table cell stays blank


def is_blank(value: Any) -> bool:
    """None, NaN (float or pandas' NA) or an empty string: a cell with nothing to show."""
    if value is None or (isinstance(value, str) and value.strip() in ("", EMPTY)):
        return True
    if type(value).__name__ == "NAType":  # pandas' NA, without importing pandas here
        return True
    return isinstance(value, float) and math.isnan(value)


def number(value: Any, digits: int = SIGNIFICANT) -> str:
    """'0.178', '114', '127,000' (`digits` significant figures, whole from 1,000 on, with separators); '' for
    nothing; infinity as '∞'."""
    if is_blank(value):
        return ""
    x = float(value)
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    x = float(f"{x:.{digits}g}")  # rounded first, so 999.6 reads '1,000', not '1e+03'
    if abs(x) >= WHOLE_FROM:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def quantity(value: Any, unit: str, digits: int = SIGNIFICANT) -> str:
    """'114 ms', '2.5 GB/s'; '' for nothing (a blank never carries a unit)."""
    shown = number(value, digits)
    return f"{shown} {unit}" if shown else ""


def seconds(value: Any, digits: int = SIGNIFICANT) -> str:
    """A duration in the unit that puts it between 1 and 1000: '1.5 s', '345 ms', '12.5 µs'."""
    if is_blank(value):
        return ""
    x = float(f"{float(value):.{digits}g}")  # rounded first, so 0.9996 s reads '1 s', not '1e+03 ms'
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(x) >= scale:
            return quantity(x / scale, unit, digits)
    return quantity(x / 1e-9, "ns", digits)


def percent(share: float | None) -> str:
    """An accuracy or other share as '78.2%' (EMPTY where there is none): the one format the classifier page,
    Results and the tables use (one decimal: accuracies differ in the tenths; a whole share is '100%', three
    figures like the rest, never '100.0%')."""
    if share is None or is_blank(share):
        return EMPTY
    return f"{share:.1%}" if abs(share) < 0.9995 else f"{number(share * 100)}%"


def times(ratio: float | None) -> str:
    """A ratio as '3.9×' or '793×': two figures say enough for a ratio measured on a busy machine (whole from 10 on,
    '1,230×', never '792.8×'); EMPTY where there is none."""
    if ratio is None or is_blank(ratio):
        return EMPTY
    return f"{ratio:.2g}×" if abs(ratio) < 10 else f"{number(float(round(ratio)))}×"


def points(difference: float | None) -> str:
    """A difference of two shares in percentage points, '+0.6 points' (78.0% against 77.4%): never '+0.6%',
    which would mean 0.6 % of 77.4 %. EMPTY where there is none."""
    return EMPTY if difference is None or is_blank(difference) else f"{difference * 100:+.1f} points"


def cell(value: Any) -> str:
    """Any value as a table shows it: numbers to SIGNIFICANT figures, whole numbers with separators from 10,000
    (so years, ids and sizes up to 9,999 read as typed), flags as yes/no, nothing as ''."""
    if is_blank(value):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        return number(value)
    return str(value)


def _whole(column: pd.Series) -> bool:
    """A column of whole numbers with nothing missing."""
    import pandas as pd

    return pd.api.types.is_integer_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column.dtype)


def _small(column: pd.Series) -> bool:
    """Whole numbers all under 10,000: kept as numbers (they sort and need no rounding). From 10,000 on a table
    grid would draw them bare ('104903 terms' beside '18,550 reviews/s'): the column gets separators instead."""
    return column.empty or int(column.abs().max()) < 10_000


def readable(table: pd.DataFrame | Sequence[Mapping[str, Any]],
             formats: Mapping[str, Format] | None = None) -> pd.DataFrame:
    """The table as it is shown: each column in `formats` through its format, every other cell through `cell`,
    except columns of whole numbers under 10,000 with nothing missing, kept as numbers. Only for showing: exports keep
    every digit."""
    import pandas as pd  # here, not at the top: the CLI's quick commands never draw a data frame

    frame = table if isinstance(table, pd.DataFrame) else pd.DataFrame(list(table))
    formats = formats or {}
    out = {}
    for name in frame.columns:
        column = frame[name]
        if name in formats:
            out[name] = [formats[name](v) for v in column.tolist()]
        elif _whole(column):
            out[name] = column.tolist() if _small(column) else [f"{int(v):,}" for v in column.tolist()]
        else:
            out[name] = [cell(v) for v in column.tolist()]
    return pd.DataFrame(out, columns=list(frame.columns), index=frame.index)
