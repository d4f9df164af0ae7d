"""The one CSV writer: whole numbers stay whole.

pandas stores an integer column that has a gap (a size a series skipped, an epoch without a
threads figure) as float, and `to_csv` then writes "64.0" where the table means 64. Every CSV
download and export goes through `csv_text`, which writes such columns as integers with empty
cells for the gaps.
"""

from __future__ import annotations

import pandas as pd


def _whole(column: pd.Series) -> bool:
    """A float column whose every present value is a whole number (NaN: a gap)."""
    if not pd.api.types.is_float_dtype(column):
        return False
    values = column.dropna()
    return not values.empty and bool((values == values.round()).all()) and bool((values.abs() < 2**53).all())


def integer_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """The same table with whole-number float columns as nullable integers."""
    out = frame.copy()
    for name in out.columns:
        if _whole(out[name]):
            out[name] = out[name].astype("Int64")
    return out


def csv_text(frame: pd.DataFrame, *, header: bool = True) -> str:
    """The table as CSV, without the index, whole numbers written as integers; `header=False` for the rows
    only (an export written a batch at a time, core.store.export)."""
    return integer_columns(frame).to_csv(index=False, header=header)
