"""Exports written a batch of runs at a time (issue 30 item 7): the same files as before, in bounded memory; the
page's download bounded; an export too big to re-import says so; an oversized import names its real size."""

from __future__ import annotations

import io
import json
import sys

import pytest

from core.cli import main
from core.results import files
from core.results.csvio import csv_text
from core.results.files import MAX_IMPORT_BYTES
from core.store import board, database, export
from core.store.database import open_store
from core.store.frames import tidy_frame
from core.store.records import RunFilter
from tests.result_samples import LAB, LAPTOP, as_saved, matmul_payload, save_payload, train_payload


@pytest.fixture
def mixed(monkeypatch):
    """Matmul and training runs, one imported with an old date (it sorts first), read two at a time."""
    monkeypatch.setattr(export, "EXPORT_BATCH", 2)
    store = open_store()
    ids = [save_payload(store, "matmul", matmul_payload(LAB), {}, label="Ana"),
           save_payload(store, "train", train_payload("cpu"), {}, machine=LAB),
           save_payload(store, "matmul", matmul_payload(LAPTOP), {}),
           save_payload(store, "train", train_payload("cuda:0", seconds=0.5), {}, machine=LAB, label="Ben"),
           save_payload(store, "matmul", matmul_payload(LAB, sizes=(64, 128)), {})]
    old = {"uid": "old", "kind": "matmul", "created_at": "2020-01-01T00:00:00Z", "label": "", "machine": LAPTOP,
           "settings": {}, "versions": {}, "payload": as_saved("matmul", matmul_payload(LAPTOP))}
    ids += store.import_json(json.dumps(old).encode()).run_ids
    return store, ids


def _oldest_first(store):
    return sorted(store.list_runs(), key=lambda r: (r.created_at, r.run_id))


def test_the_streamed_json_is_the_whole_board_writers_file(mixed):
    store, _ = mixed
    out = io.BytesIO()
    written = export.write_export(store, out, "json", exported_at="2026-01-01T00:00:00Z")
    expected = files.export_text([r.record for r in _oldest_first(store)], "2026-01-01T00:00:00Z").encode()
    assert out.getvalue() == expected and (written.runs, written.bytes) == (6, len(expected))
    assert [r.uid for r in files.read_import(out.getvalue())][0] == "old"
    empty = io.BytesIO()
    export.write_export(store, empty, "json", [], exported_at="x")
    assert json.loads(empty.getvalue())["runs"] == []


def test_the_streamed_csv_is_the_tidy_table(mixed):
    store, ids = mixed
    assert store.export_csv() == csv_text(tidy_frame(_oldest_first(store))).encode()
    some = [ids[1], ids[4], ids[5]]
    chosen = sorted(store.list_runs(run_ids=some), key=lambda r: (r.created_at, r.run_id))
    assert store.export_csv(some) == csv_text(tidy_frame(chosen)).encode()
    only = store.export_csv(export_order_kind(store, "train"))
    assert only == csv_text(tidy_frame([r for r in _oldest_first(store) if r.kind == "train"])).encode()
    assert store.export_csv([]) == csv_text(tidy_frame([])).encode()


def export_order_kind(store, kind):
    return [run_id for run_id, _, k in store.export_order(None, RunFilter.of(kinds=[kind]))]


def test_an_export_reads_a_batch_of_runs_at_a_time(mixed, monkeypatch):
    """Before: every run of the board read at once (10,000 runs: 1.6 GB for JSON, 1.0 GB for CSV)."""
    store, ids = mixed
    sizes = []
    real = database.Store.list_runs

    def counted(self, **kwargs):
        runs = real(self, **kwargs)
        sizes.append(len(runs))
        return runs

    monkeypatch.setattr(database.Store, "list_runs", counted)
    for fmt in ("json", "csv"):
        sizes.clear()
        out = io.BytesIO()
        export.write_export(store, out, fmt)
        assert sizes and max(sizes) <= 2 and sum(sizes) == len(ids), fmt


def test_the_pages_download_is_bounded_and_says_what_to_do_past_it(mixed, monkeypatch):
    store, ids = mixed
    whole = board.exports(None, ids)[0].data()
    assert whole.startswith(b'{"format": "gpu-vs-cpu results"')
    monkeypatch.setattr(board, "PAGE_EXPORT_BYTES", 500)  # both files are larger
    for got in (f.data().decode() for f in board.exports(None, ids)):
        assert "more than this page builds" in got and "python -m core results export" in got
        assert len(got) < 1000
    assert 500 < store.payload_chars(ids) < len(whole)
    monkeypatch.setattr(database.Store, "list_runs", lambda *a, **k: pytest.fail("read a run"))
    assert "more than this page builds" in board.exports(None, ids)[0].data().decode(), "known before reading"


def test_an_export_too_big_to_import_again_says_so(mixed, tmp_path, capsys, monkeypatch):
    store, _ = mixed
    out = tmp_path / "all.json"
    assert main(["results", "export", "--output", str(out)]) == 0
    assert "note:" not in capsys.readouterr().err
    monkeypatch.setenv(database.MAX_IMPORT_ENV, "4")
    assert main(["results", "export", "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "wrote 6 run(s)" in err and "note: this export is 6 runs, over the 4 an import adds" in err
    assert export.reimport_note(export.Written("json", 1, MAX_IMPORT_BYTES + 2**20), 10) == (
        "this export is 21 MiB, over the 20 MiB an import reads: to move it to another board, export it in "
        "parts (--kind, --machine, --device or run ids) and import each part")
    assert export.reimport_note(export.Written("csv", 99, 2**30), 10) is None
    assert not list(tmp_path.glob(".*.part")), "the file was written beside, then moved into place"


def test_the_cli_export_with_filters_streams_what_matches(mixed, capsysbinary):
    store, _ = mixed
    assert main(["results", "export", "--kind", "train"]) == 0
    runs = json.loads(capsysbinary.readouterr().out)["runs"]
    assert [r["kind"] for r in runs] == ["train", "train"]


def test_an_oversized_import_names_its_real_size(tmp_path, capsys, monkeypatch):
    """Before: "the file is 20.0 MiB" of a 60 MiB file (the reader stopped one byte past the limit)."""
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(MAX_IMPORT_BYTES * 3)
    assert main(["results", "import", str(path)]) == 2
    assert "the file is 60 MiB, over the 20 MiB limit" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b" " * (MAX_IMPORT_BYTES * 2))))
    assert main(["results", "import", "-"]) == 2
    err = capsys.readouterr().err
    assert "the file is over the 20 MiB limit" in err and "20.0 MiB" not in err
