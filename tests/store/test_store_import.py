"""Bad files through the store's import: each gets a message a student can act on, and nothing is saved."""

from __future__ import annotations

import codecs
import json

import pytest

from core.errors import DashboardError
from core.store.database import open_store
from core.results import files as payloads
from core.results.kinds import read_result
from tests.result_samples import LAB, LAPTOP, as_saved, matmul_payload, train_payload, save_payload


@pytest.fixture
def store():
    return open_store()


def _refused(store, data: bytes, match: str) -> str:
    with pytest.raises(DashboardError, match=match) as err:
        store.import_json(data)
    assert store.list_runs() == [], "a refused file saves nothing"
    return str(err.value)


@pytest.mark.parametrize("data", [b"", b"   \n\t ", b"\n"])
def test_empty_file(store, data):
    message = _refused(store, data, "the file is empty")
    assert "python -m core matmul --json" in message, "the message says what file to choose"


def test_binary_file(store):
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
    message = _refused(store, png, "not text")
    assert message.count("choose a JSON file") == 1, "said once"


def test_latin1_bytes_are_not_utf8(store):
    _refused(store, '{"label": "café"}'.encode("latin-1"), "not text")


def test_utf16_without_bom_is_refused(store):
    _refused(store, json.dumps(matmul_payload(LAB)).encode("utf-16-le"), "not text")


@pytest.mark.parametrize("bom_encoding", ["utf-16", "utf-16-be", "utf-8-sig"])
def test_utf16_and_utf8_with_bom_are_read(store, bom_encoding):
    """Windows PowerShell's `>` writes UTF-16 with a byte-order mark; such a file is fine."""
    text = json.dumps(matmul_payload(LAPTOP))
    data = text.encode(bom_encoding)
    if bom_encoding == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    result = store.import_json(data)
    assert len(result.run_ids) == 1
    assert store.get(result.run_ids[0]).payload == as_saved("matmul", matmul_payload(LAPTOP))


def test_utf16_garbage(store):
    _refused(store, "not json at all".encode("utf-16"), "not valid JSON")


@pytest.mark.parametrize("text, where", [
    ("{'results': []}", "line 1, column 2"),
    ('{"results": [}', "line 1"),
    ('{"a": 1}\n{"b": 2}', "line 2"),
    ("name,median_s\ncpu,1.0\n", "line 1"),
])
def test_garbage_json(store, text, where):
    assert where in _refused(store, text.encode(), "not valid JSON")


def test_deeply_nested_json(store):
    _refused(store, b"[" * 100_000 + b"]" * 100_000, "nested too deeply")


def test_oversized_file(store):
    big = b" " * (payloads.MAX_IMPORT_BYTES + 1)
    _refused(store, big, r"over the 20 MiB limit")


@pytest.mark.parametrize("obj, match", [
    ([1, 2, 3], "JSON list, not an object"),
    ("hello", "JSON str, not an object"),
    ({"name": "x", "size": 3}, "not a result file.*'name', 'size'"),
    ({}, "not a result file.*none"),
])
def test_json_that_is_not_a_result_file(store, obj, match):
    _refused(store, json.dumps(obj).encode(), match)


def _mutated(payload, mutate):
    mutate(payload)
    return json.dumps(payload).encode()


@pytest.mark.parametrize("mutate, match", [
    (lambda p: p.update(results=[]), r"matmul.results: expected a list of at least 1"),
    (lambda p: p.update(results="fast"), r"matmul.results: expected a list"),
    (lambda p: p["results"][0].pop("median_s"), r"matmul.results\[0\]: missing 'median_s'"),
    (lambda p: p["results"][2].update(n="abc"), r"matmul.results\[2\].n: expected a whole number >= 1, got 'abc'"),
    (lambda p: p["results"][0].update(n=0), r"results\[0\].n: expected a whole number >= 1, got 0"),
    (lambda p: p["results"][0].update(n=True), r"results\[0\].n: expected a whole number"),
    (lambda p: p["results"][0].update(median_s=-1.0), r"results\[0\].median_s: expected a number >= 0"),
    (lambda p: p["results"][0].update(iqr_s="1e3"), r"results\[0\].iqr_s: expected a number"),
    (lambda p: p["results"][0].update(device=""), r"results\[0\].device: expected a device: cpu, mps, cuda or cuda:N"),
    (lambda p: p.update(crossover_n="big"), r"matmul.crossovers\[0\].n: expected a whole number"),  # read as its record
    (lambda p: p.update(machine=[1]), r"matmul.machine: expected a JSON object"),
])
def test_matmul_file_with_a_wrong_schema(store, mutate, match):
    _refused(store, _mutated(matmul_payload(LAB), mutate), match)


@pytest.mark.parametrize("mutate, match", [
    (lambda p: p.pop("n_train"), r"train: missing 'n_train'"),
    (lambda p: p.update(epochs=[]), r"train.epochs: expected a list of at least 1"),
    (lambda p: p["epochs"][1].update(test_accuracy=1.5),
     r"epochs\[1\].test_accuracy: expected a number between 0 and 1"),
    (lambda p: p["epochs"][0].update(seconds=None, epoch=-1), r"epochs\[0\].epoch: expected a whole number >= 0"),
    (lambda p: p.update(vocab_size=0), r"train.vocab_size: expected a whole number >= 1"),
    (lambda p: p.update(predictions=[{"text": 3, "p_positive": 0.5}]), r"predictions\[0\].text: expected a string"),
    (lambda p: p.update(baseline_accuracy=77), r"baseline_accuracy: expected a number between 0 and 1"),
])
def test_train_file_with_a_wrong_schema(store, mutate, match):
    _refused(store, _mutated(train_payload(), mutate), match)


def test_nan_and_missing_optionals_are_accepted(store):
    payload = train_payload()
    del payload["predictions"], payload["baseline_accuracy"]
    text = json.dumps(payload).replace('"test_loss": 0.62', '"test_loss": NaN')
    assert "NaN" in text
    run = store.get(store.import_json(text.encode()).run_ids[0])
    assert run.payload["epochs"][0]["test_loss"] is None


def test_an_export_with_one_bad_run_imports_nothing(store, tmp_path):
    source = open_store(f"sqlite:///{tmp_path / 'src.sqlite3'}")
    save_payload(source, "matmul", matmul_payload(LAB))
    save_payload(source, "train", train_payload(), machine=LAPTOP)
    bundle = json.loads(source.export_json())
    bundle["runs"][1]["payload"]["epochs"][0]["seconds"] = "slow"
    _refused(store, json.dumps(bundle).encode(), r"runs\[1\].payload.epochs\[0\].seconds: expected a number")


@pytest.mark.parametrize("mutate, match", [
    (lambda b: b.update(format="someone else's"), "unknown file format"),
    (lambda b: b.update(format_version=99), "format version 99, newer"),
    (lambda b: b.update(runs={"a": 1}), "runs: expected a list"),
    (lambda b: b["runs"][0].update(kind="race"), r"runs\[0\].kind: expected one of matmul, train"),
    (lambda b: b["runs"][0].update(created_at="yesterday"), r"runs\[0\].created_at: expected an ISO 8601 time"),
    (lambda b: b["runs"][0].update(machine="laptop"), r"runs\[0\].machine: expected a JSON object"),
    (lambda b: b["runs"][0].update(uid=""), r"runs\[0\].uid: expected a non-empty string of at most 200"),
    (lambda b: b["runs"].__setitem__(0, "run"), r"runs\[0\]: expected a JSON object"),
])
def test_a_damaged_export(store, tmp_path, mutate, match):
    source = open_store(f"sqlite:///{tmp_path / 'src.sqlite3'}")
    save_payload(source, "matmul", matmul_payload(LAB))
    bundle = json.loads(source.export_json())
    mutate(bundle)
    _refused(store, json.dumps(bundle).encode(), match)


def test_too_many_runs_in_one_export(store, monkeypatch, tmp_path):
    source = open_store(f"sqlite:///{tmp_path / 'src.sqlite3'}")
    for _ in range(3):
        save_payload(source, "train", train_payload(), machine=LAPTOP)
    monkeypatch.setattr(payloads, "MAX_IMPORT_RUNS", 2)
    _refused(store, source.export_json(), "holds 3 runs, over the limit of 2")


def test_imported_timestamps_become_utc(store, tmp_path):
    source = open_store(f"sqlite:///{tmp_path / 'src.sqlite3'}")
    save_payload(source, "train", train_payload(), machine=LAPTOP)
    bundle = json.loads(source.export_json())
    bundle["runs"][0]["created_at"] = "2025-03-01T10:00:00+02:00"
    run = store.get(store.import_json(json.dumps(bundle).encode()).run_ids[0])
    assert run.created_at == "2025-03-01T08:00:00Z"


def test_read_result_reads_what_it_writes():
    for kind, payload in (("matmul", matmul_payload(LAB)), ("train", train_payload())):
        result = read_result(kind, payload)
        assert result.kind == kind and read_result(kind, result.to_json()) == result


def test_an_explicit_import_label_names_the_runs_even_when_the_export_has_one():
    store = open_store()
    run_id = save_payload(store, "matmul", matmul_payload(LAPTOP), label="Ana")
    exported = store.export_json([run_id])
    store.delete(run_id)
    (renamed,) = store.import_json(exported, label="Ana's laptop, lab 2").run_ids
    assert store.get(renamed).label == "Ana's laptop, lab 2"
    store.delete(renamed)
    (kept,) = store.import_json(exported).run_ids
    assert store.get(kept).label == "Ana"  # without a label the export's own stays
