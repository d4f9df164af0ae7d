"""The result schema (core.results): versions and the upgrade of old files, strict field checks, the JSON writer.

Every refusal is a one-line DashboardError naming the field; nothing a file holds may surface as
TypeError, OverflowError or RecursionError, and a refused file saves nothing.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math

import numpy as np
import pytest

from core.errors import DashboardError
from core.results import files, jsonio
from core.results.matmul import MatmulSweep
from core.results.train import TrainRun
from core.results.kinds import read_result
from core.results.kinds import detect_kind
from core.store.database import open_store
from tests.result_samples import LAB, LAPTOP, matmul_payload, train_payload, save_payload


@pytest.fixture
def store():
    return open_store()


def _export(store, *payloads) -> dict:
    for kind, payload in payloads:
        save_payload(store, kind, payload, {"sizes": [256]}, machine=LAB if kind == "train" else None, label="Ana")
    bundle = json.loads(store.export_json())
    for run in store.list_runs():
        store.delete(run.run_id)
    return bundle


def _refused(store, obj, match: str) -> str:
    data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    with pytest.raises(DashboardError, match=match) as err:
        store.import_json(data)
    message = str(err.value)
    assert "\n" not in message, "one line"
    assert store.list_runs() == [], "a refused file saves nothing"
    return message


# -- versions and kind names -------------------------------------------------------------------------


def test_current_json_names_its_kind_and_version():
    sweep = read_result("matmul", matmul_payload(LAB)).to_json()
    trained = read_result("train", train_payload()).to_json()
    assert (sweep["kind"], sweep["schema_version"]) == ("matmul", 3)
    assert (trained["kind"], trained["schema_version"]) == ("train", 2)
    assert json.loads(json.dumps(sweep)) == sweep, "plain JSON already"


def test_a_version_1_matmul_race_file_is_upgraded_on_import(store):
    old = matmul_payload(LAPTOP) | {"kind": "matmul_race", "schema_version": 1}
    run = store.get(store.import_json(json.dumps(old).encode()).run_ids[0])
    assert run.kind == "matmul" and isinstance(run.result, MatmulSweep)
    assert run.payload["kind"] == "matmul" and run.payload["schema_version"] == 3
    assert run.payload["results"][0]["median_s"] == old["results"][0]["median_s"]
    assert run.payload["results"][0]["q1_s"] is None, "columns version 1 lacked read as not measured"


def test_a_version_1_export_of_old_payloads_is_read(store):
    bundle = {"format": "gpu-vs-cpu results", "format_version": 1, "exported_at": "2025-01-01T00:00:00Z",
              "runs": [{"uid": "old-1", "kind": "matmul", "created_at": "2025-01-01T00:00:00Z", "label": "",
                        "machine": LAB, "settings": {}, "versions": {"torch": "2.3.0"},
                        "payload": matmul_payload(LAB) | {"kind": "matmul_race", "schema_version": 1}},
                       {"uid": "old-2", "kind": "train", "created_at": "2025-01-01T00:00:00Z", "label": "",
                        "machine": LAPTOP, "settings": {}, "versions": {}, "payload": train_payload()}]}
    assert len(store.import_json(json.dumps(bundle).encode()).run_ids) == 2
    assert sorted(r.kind for r in store.list_runs()) == ["matmul", "train"]


def test_export_writes_the_current_versions(store):
    bundle = _export(store, ("matmul", matmul_payload(LAB)))
    assert bundle["format_version"] == files.EXPORT_VERSION == 2
    assert bundle["runs"][0]["payload"]["kind"] == "matmul" and bundle["runs"][0]["payload"]["schema_version"] == 3


@pytest.mark.parametrize("payload, match", [
    (matmul_payload(LAB) | {"schema_version": 4}, "schema version 4, newer than this dashboard reads"),
    (matmul_payload(LAB) | {"kind": "train"}, "train: missing 'device'"),
    (matmul_payload(LAB) | {"kind": "race"}, "kind: expected one of matmul, train"),
    (matmul_payload(LAB) | {"schema_version": "2"}, "schema_version: expected a whole number"),
])
def test_versions_and_kinds_that_cannot_be_read(store, payload, match):
    _refused(store, payload, match)


def test_detect_kind():
    assert detect_kind({"kind": "matmul_race"}) == "matmul"
    assert detect_kind({"epochs": []}) == "train" and detect_kind({"x": 1}) is None


# -- strict fields --------------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["cuda:²", "cuda:0\n", "gpu", "CUDA", "cuda:", "cuda:1:2", " cpu", 3, None])
def test_device_grammar(store, device):
    payload = matmul_payload(LAB)
    payload["results"][0]["device"] = device
    _refused(store, payload, r"results\[0\].device: expected a device: cpu, mps, cuda or cuda:N")


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:0", "cuda:7", "mps"])
def test_good_devices(device):
    assert read_result("train", train_payload(device)).device == device


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+01:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59-01:00",
                                   "9999-01-01T00:00:00Z", "1999-12-31T23:00:00Z", "2100-01-01T00:00:00Z", "yesterday",
                                   12, "2025-13-01T00:00:00Z"])
def test_dates_outside_2000_to_2099_are_refused(store, stamp):
    bundle = _export(store, ("train", train_payload()))
    bundle["runs"][0]["created_at"] = stamp
    message = _refused(store, bundle, r"runs\[0\].created_at: expected an ISO 8601 time between 2000 and 2099")
    assert "Overflow" not in message


def test_a_date_near_the_edge_still_converts_to_utc(store):
    bundle = _export(store, ("train", train_payload()))
    bundle["runs"][0]["created_at"] = "2000-01-01T00:30:00+01:00"
    with pytest.raises(DashboardError, match="between 2000 and 2099"):  # 1999 in UTC
        store.import_json(json.dumps(bundle).encode())
    bundle["runs"][0]["created_at"] = "2099-12-31T23:30:00-01:00"  # 2100 in UTC
    with pytest.raises(DashboardError, match="between 2000 and 2099"):
        store.import_json(json.dumps(bundle).encode())


@pytest.mark.parametrize("key", ["uid", "kind", "created_at", "label", "machine", "settings", "versions", "payload"])
def test_an_export_run_missing_a_field(store, key):
    bundle = _export(store, ("matmul", matmul_payload(LAB)))
    del bundle["runs"][0][key]
    _refused(store, bundle, rf"runs\[0\]: missing '{key}'")


@pytest.mark.parametrize("machine, match", [
    ({"gpus": 5}, r"machine.gpus: expected a list"),
    ({"gpus": [{"name": "H200"}]}, r"machine.gpus\[0\]: missing 'index'"),
    ({"gpus": [{"index": "0"}]}, r"machine.gpus\[0\].index: expected a whole number"),
    ({"cpu": "fast"}, r"machine.cpu: expected a JSON object"),
    ({"cpu": {"logical_cores": 10**400}}, r"machine.cpu.logical_cores: expected a whole number"),
    ({"mps_available": "yes"}, r"machine.mps_available: expected true or false"),
])
def test_a_machine_with_wrong_types(store, machine, match):
    bundle = _export(store, ("matmul", matmul_payload(LAB)))
    bundle["runs"][0]["machine"] = machine
    _refused(store, bundle, r"runs\[0\]\." + match)


@pytest.mark.parametrize("mutate, match", [
    (lambda p: p["results"][0].update(median_s=10**400), r"results\[0\].median_s: expected a number"),
    (lambda p: p["results"][0].update(n=10**30), r"results\[0\].n: expected a whole number"),
    (lambda p: p.update(stopped="no"), r"matmul.stopped: expected true or false"),
    (lambda p: p.update(crossovers=[{"challenger": "cuda:0 float32"}]), r"crossovers\[0\]: missing 'baseline'"),
    (lambda p: p.update(notes=[3]), r"notes\[0\]: expected a non-empty string"),
    (lambda p: p["results"][0].update(times_s=[0.1, "x"]), r"times_s\[1\]: expected a number"),
    (lambda p: p.update(finished_at="0001-01-01T00:00:00+01:00"), r"finished_at: expected an ISO 8601 time"),
])
def test_every_matmul_field_is_typed(store, mutate, match):
    payload = matmul_payload(LAB)
    mutate(payload)
    _refused(store, payload, match)


def test_nul_characters_are_refused_anywhere(store):
    payload = matmul_payload(LAB)
    payload["settings"] = {"note": "a\x00b"}
    _refused(store, payload, r"matmul.settings.note: contains a NUL character")
    payload = matmul_payload(LAB)
    payload["extra\x00"] = 1
    _refused(store, payload, "a key contains a NUL character")
    bundle = _export(store, ("train", train_payload()))
    bundle["runs"][0]["label"] = "Ana\x00"
    _refused(store, bundle, r"runs\[0\].label: contains a NUL character")
    with pytest.raises(DashboardError, match="NUL"):
        store.import_json(json.dumps(train_payload()).encode(), label="x\x00")


def test_a_run_padded_with_10_mb_is_refused(store):
    payload = matmul_payload(LAB)
    payload["padding"] = "x" * 10_000_000
    message = _refused(store, payload, r"matmul: 9.54 MiB of JSON, over the 8 MiB limit for one run")
    bundle = _export(store, ("train", train_payload()))
    bundle["runs"][0]["settings"]["padding"] = "x" * 10_000_000
    _refused(store, bundle, r"runs\[0\]: 9.54 MiB of JSON, over the 8 MiB limit")
    assert message


def test_saving_an_oversized_run_is_refused_too(store):
    with pytest.raises(DashboardError, match="over the 8 MiB limit"):
        save_payload(store, "train", train_payload() | {"padding": "x" * 10_000_000})


@pytest.mark.parametrize("depth", [30, 500, 700, 900])
def test_an_extra_key_nested_hundreds_deep_is_one_line(store, depth):
    nested = "[" * depth + "]" * depth
    text = json.dumps(matmul_payload(LAB))[:-1] + f', "extra": {nested}}}'
    message = _refused(store, text.encode(), r"nested (more than 24 levels deep|too deeply)")
    objects = '{"a": ' * depth + "1" + "}" * depth
    bundle = _export(store, ("train", train_payload()))
    text = json.dumps(bundle).replace('"settings": {', f'"settings": {{"deep": {objects}, ', 1)
    _refused(store, text.encode(), "nested (more than 24 levels deep|too deeply)")
    assert message.count("[") < 200, "the message does not echo the nesting"


def test_saving_a_deeply_nested_run_is_one_line(store):
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(DashboardError, match="nested more than 24 levels deep"):
        save_payload(store, "train", train_payload() | {"extra": deep})


# -- import policy --------------------------------------------------------------------------------


def test_one_bad_run_refuses_the_whole_file_and_names_it(store):
    bundle = _export(store, ("matmul", matmul_payload(LAB)), ("train", train_payload()),
                     ("matmul", matmul_payload(LAPTOP)))
    bundle["runs"][2]["payload"]["results"][0]["device"] = "cuda:²"
    _refused(store, bundle, r"runs\[2\].payload.results\[0\].device")
    bundle["runs"][2]["payload"]["results"][0]["device"] = "cpu"
    assert len(store.import_json(json.dumps(bundle).encode()).run_ids) == 3, "fixed, the whole file goes in"


def test_a_run_listed_twice_in_one_file_is_imported_once(store):
    bundle = _export(store, ("train", train_payload()))
    bundle["runs"].append(copy.deepcopy(bundle["runs"][0]))
    result = store.import_json(json.dumps(bundle).encode())
    assert len(result.run_ids) == 1 and result.skipped == 1


# -- the one JSON writer --------------------------------------------------------------------------


@dataclasses.dataclass
class _Point:
    x: float
    where: tuple[str, ...]


def test_the_json_writer_handles_nan_numpy_dataclasses_and_tuples():
    obj = {"nan": math.nan, "inf": -math.inf, "i": np.int64(3), "f": np.float32(0.5), "nf": np.float64("nan"),
           "arr": np.array([[1, 2], [3, 4]]), "b": np.bool_(True), "t": (1, 2), "dc": _Point(math.inf, ("a",)),
           "sweep": read_result("train", train_payload())}
    back = json.loads(jsonio.dumps(obj))
    assert back["nan"] is None and back["inf"] is None and back["nf"] is None
    assert back["i"] == 3 and back["f"] == 0.5 and back["arr"] == [[1, 2], [3, 4]] and back["b"] is True
    assert back["t"] == [1, 2] and back["dc"] == {"x": None, "where": ["a"]}
    assert back["sweep"]["kind"] == "train", "a result is written through its own to_json"
    assert "NaN" not in jsonio.dumps(obj)


def test_cli_print_json_uses_the_writer(capsys):
    from core.cli.output import print_json

    print_json({"a": np.float64("inf"), "b": np.int32(2), "c": (1,)})
    assert json.loads(capsys.readouterr().out) == {"a": None, "b": 2, "c": [1]}


def test_train_and_matmul_records_round_trip():
    for kind, payload in (("matmul", matmul_payload(LAB)), ("train", train_payload())):
        result = read_result(kind, payload)
        assert read_result(kind, json.loads(jsonio.dumps(result))) == result
    assert isinstance(read_result("train", train_payload()), TrainRun)
