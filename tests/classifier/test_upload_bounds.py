"""An upload with a million columns, or one endless first line, is refused from its first bytes, before any table.

The time it takes is bench/upload_bounds.py's to measure (a timed assert fails on a busy machine, not a slow
parser); here the traced memory shows that no table was built.
"""

from __future__ import annotations

import threading
import tracemalloc

import pytest

from core.classifier import loaders
from core.errors import DashboardError


def _wide(columns: int) -> bytes:
    """A header of `columns` names and one row (~10 MB for a million), built without a million-item join."""
    return b"col0000," * (columns - 1) + b"col0000\n" + b"1," * (columns - 1) + b"1\n"


def test_a_million_columns_is_refused_without_building_a_table():
    data = _wide(1_000_000)  # ~9 MB, as the hostile-student pass sent
    tracemalloc.start()
    with pytest.raises(DashboardError, match="first line of wide.csv is longer than 64 KiB"):
        loaders.load_upload(data, "wide.csv")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 50 * 2**20, peak


def test_two_tabs_at_once_are_both_refused_within_the_memory_bound():
    data, errors = _wide(1_000_000), []

    def upload() -> None:
        try:
            loaders.load_upload(data, "wide.csv")
        except DashboardError as exc:
            errors.append(str(exc))

    tracemalloc.start()
    tabs = [threading.Thread(target=upload) for _ in range(2)]
    for tab in tabs:
        tab.start()
    for tab in tabs:
        tab.join()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(errors) == 2 and peak < 50 * 2**20, (errors, peak)


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


MB_100 = 100 * 2**20  # Streamlit's upload limit in .streamlit/config.toml


def _hundred_mb(kind: str) -> bytes:
    """100 MB uploads built to make a parser build a huge table (see bench/upload_bounds.py for their times)."""
    row = b"a," * 999 + b"1\n"
    good = b"text,label\n" + b"fine review,1\nbad review,0\n" * 5000  # past the rows sampled before parsing
    return {"endless second line": b"text,label\n" + b"x," * (MB_100 // 2) + b"1\n",
            "wide rows": b"text,label\n" + row * (MB_100 // len(row)),
            "wide rows after good ones": good + row * ((MB_100 - len(good)) // len(row))}[kind]


@pytest.mark.slow  # builds 100 MB inputs
@pytest.mark.parametrize("kind, message", [
    ("endless second line", "has a line longer than 1 MiB"),
    ("wide rows", r"not a valid CSV file \(line 2 has 1,000 fields, the header names 2\)"),
    ("wide rows after good ones", "Expected 2 fields in line 10002, saw 1000"),
])
def test_a_100_mb_bomb_is_refused_without_building_a_table(kind, message):
    data = _hundred_mb(kind)
    tracemalloc.start()
    with pytest.raises(DashboardError, match=message):
        loaders.load_upload(data, "big.csv")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 50 * 2**20, peak


def test_a_long_line_anywhere_is_refused():
    with pytest.raises(DashboardError, match="big.csv has a line longer than 1 MiB"):
        loaders.load_upload(b"text,label\n" + b"a review,1\n" * 100 + b"x" * (loaders.MAX_LINE_BYTES + 1) + b",1\n",
                            "big.csv")
    assert loaders.load_upload(b"text,label\n" + b"x" * 1000 + b",1\ny,0\nz,1\nw,0\n", "ok.csv").n == 4


def test_first_rows_with_more_fields_than_the_header_are_refused_before_parsing(monkeypatch):
    monkeypatch.setattr(loaders, "_parse_table", lambda data, name: pytest.fail("parsed"))
    with pytest.raises(DashboardError,
                       match=r"wide.tsv is not a valid TSV file \(line 3 has 5 fields, the header names 2\)"):
        loaders.load_upload(b"text\tlabel\nok\t1\na\tb\tc\td\t1\n", "wide.tsv")


def test_a_table_is_parsed_from_its_bytes_in_any_of_the_encodings():
    rows = "text,label\n" + "".join(f"caf\u00e9 \u2019{i}\u2019,{i % 2}\n" for i in range(6))
    for encoding in ("utf-8", "utf-8-sig", "cp1252"):
        assert loaders.load_upload(rows.encode(encoding), "r.csv").texts[0] == "caf\u00e9 \u20190\u2019"
    assert loaders.load_upload(rows.replace("\u2019", "").encode("latin-1") + b"\x81,1\n", "r.csv").n == 7
