"""An upload with a million columns, or one endless first line, is refused from its first bytes: fast and small."""

from __future__ import annotations

import threading
import time
import tracemalloc

import pytest

from core.classifier import loaders
from core.errors import DashboardError


def _wide(columns: int) -> bytes:
    """A header of `columns` names and one row (~10 MB for a million), built without a million-item join."""
    return b"col0000," * (columns - 1) + b"col0000\n" + b"1," * (columns - 1) + b"1\n"


def test_a_million_columns_is_refused_in_under_a_second_without_building_a_table():
    data = _wide(1_000_000)  # ~9 MB, as the hostile-student pass sent
    tracemalloc.start()
    started = time.perf_counter()
    with pytest.raises(DashboardError, match="first line of wide.csv is longer than 64 KiB"):
        loaders.load_upload(data, "wide.csv")
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 1.0 and peak < 50 * 2**20, (elapsed, peak)


def test_two_tabs_at_once_are_refused_as_fast():
    data, errors = _wide(1_000_000), []

    def upload() -> None:
        try:
            loaders.load_upload(data, "wide.csv")
        except DashboardError as exc:
            errors.append(str(exc))

    started = time.perf_counter()
    tabs = [threading.Thread(target=upload) for _ in range(2)]
    for tab in tabs:
        tab.start()
    for tab in tabs:
        tab.join()
    assert len(errors) == 2 and time.perf_counter() - started < 2.0


def test_an_endless_first_line_is_refused():
    with pytest.raises(DashboardError, match="first line of long.csv is longer than 64 KiB"):
        loaders.load_upload(b"x" * (loaders.MAX_HEADER_BYTES + 10), "long.csv")


def test_too_many_columns_within_a_short_header_are_refused():
    with pytest.raises(DashboardError, match="wide.csv has 5,000 columns, more than the 1,000 this dashboard reads"):
        loaders.load_upload(b"c," * 4999 + b"c\n", "wide.csv")


def test_a_tsv_counts_tabs_and_a_normal_table_still_reads():
    with pytest.raises(DashboardError, match="2,000 columns"):
        loaders.load_upload(("\t".join(f"c{i}" for i in range(2000)) + "\n").encode(), "wide.tsv")
    rows = "text,label\n" + "".join(f"review {i},{i % 2}\n" for i in range(20))
    assert len(loaders.load_upload(rows.encode(), "ok.csv").texts) == 20
