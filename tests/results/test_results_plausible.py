"""Imported runs checked for plausibility (core.results.plausible), marked imported, sorted by arrival."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone

import pytest

from core.errors import DashboardError
from core.results import files
from core.results.plausible import known_peak
from core.store.database import open_store
from core.store.records import pick_runs
from tests.result_samples import LAB, LAPTOP, matmul_payload, save_payload

H100 = {**copy.deepcopy(LAB), "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "total_memory_bytes": 80 * 2**30}]}


def _export(payload: dict, created_at: str = "2025-01-31T14:05:00Z", provenance: dict | None = None) -> bytes:
    run = {"uid": "u1", "kind": "matmul", "created_at": created_at, "label": "", "machine": payload["machine"],
           "settings": {}, "versions": {}, "payload": payload}
    if provenance is not None:
        run["provenance"] = provenance
    return json.dumps({"format": files.EXPORT_FORMAT, "format_version": 2, "runs": [run]}).encode()


def _forged_speed(gflops: float, fix_time: bool = True) -> dict:
    payload = matmul_payload(H100)
    point = payload["results"][-1]  # cuda:0, n = 4096, float32
    point["gflops"] = gflops
    if fix_time:
        point["median_s"] = 2 * point["n"] ** 3 / gflops / 1e9
    return payload


def test_the_forged_h100_is_refused_in_one_line():
    with pytest.raises(DashboardError) as refused:
        files.read_import(_export(_forged_speed(999_999)))
    message = str(refused.value)
    assert "runs[0].payload.results[5].gflops" in message and "H100" in message and "peak" in message
    assert "\n" not in message and "nothing from the file was imported" in message


def test_gflops_is_the_time_s_own():
    """GFLOP/s is derived from the median (a file's own figure is not read), so the two cannot disagree."""
    run = files.read_import(_export(_forged_speed(500, fix_time=False)))[0]
    point = run.result.results[-1]
    assert point.gflops == pytest.approx(2 * point.n**3 / point.median_s / 1e9) and point.gflops != 500


def test_quartiles_in_order():
    payload = matmul_payload(LAPTOP)
    point = payload["results"][0]
    point.update(min_s=point["median_s"] * 2, q1_s=point["median_s"] * 0.9)
    with pytest.raises(DashboardError, match=r"results\[0\]: expected min_s <= q1_s \(min_s = .* is above"):
        files.read_import(_export(payload))


def test_a_date_more_than_a_day_ahead_is_refused_and_a_few_hours_are_not():
    with pytest.raises(DashboardError, match="runs\\[0\\].created_at: 2099-01-01T00:00:00Z is in the future"):
        files.read_import(_export(matmul_payload(LAPTOP), "2099-01-01T00:00:00Z"))
    soon = (datetime.now(timezone.utc) + timedelta(hours=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert files.read_import(_export(matmul_payload(LAPTOP), soon))[0].created_at == soon


def test_a_real_run_near_the_peak_is_kept():
    near = 495_000 * 1.05  # TF32 on an H100: 5 % over the table's peak is within the margin
    assert files.read_import(_export(_forged_speed(near)))[0].result.results[-1].gflops == pytest.approx(near)
    with pytest.raises(DashboardError, match="peak of 67,000 GFLOP/s"):  # TF32 off: the fp32 peak
        payload = _forged_speed(near)
        payload["results"][-1]["tf32"] = False
        files.read_import(_export(payload))


@pytest.mark.parametrize("name, table", [("NVIDIA H200", "H200"), ("Tesla T4", "T4"), ("NVIDIA A100-SXM4-80GB", "A100"),
                                         ("NVIDIA L4", "L4"), ("NVIDIA GeForce RTX 4090", "RTX 4090"),
                                         ("NVIDIA GeForce RTX 3060 Laptop GPU", "RTX 3060 (Ti)")])
def test_known_gpus(name, table):
    assert known_peak(name)[0] == table


def test_unknown_gpu_and_l40_are_not_checked_against_another_gpu():
    assert known_peak("NVIDIA L40S") is None and known_peak("Radeon RX 7900") is None


def test_older_exports_import_and_every_import_is_marked_imported():
    [claimed] = files.read_import(_export(matmul_payload(LAPTOP), provenance={"source": "measured"}), file="x.json",
                                  session="browser session 1")
    provenance = claimed.provenance
    assert (provenance.source, provenance.origin, provenance.file) == ("imported", "measured", "x.json")
    [old] = files.read_import(_export(matmul_payload(LAPTOP)))  # written before provenance existed
    assert (old.provenance.source, old.provenance.origin) == ("imported", None)
    [colab] = files.read_import(_export(matmul_payload(LAPTOP), provenance={"source": "notebook"}))
    assert colab.provenance.shown == "imported (notebook)"
    with pytest.raises(DashboardError, match=r"runs\[0\].provenance.source: expected one of measured"):
        files.read_import(_export(matmul_payload(LAPTOP), provenance={"source": "trusted"}))


def test_an_old_date_sorts_by_it_and_no_date_lifts_an_import_above_newer_measurements():
    store = open_store()
    store.import_json(_export(matmul_payload(LAPTOP), "2024-01-01T00:00:00Z"), file="old.json")
    measured = save_payload(store, "matmul", matmul_payload(LAB), {})
    tomorrow = (datetime.now(timezone.utc) + timedelta(hours=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    raw = json.loads(_export(matmul_payload(LAPTOP), tomorrow))
    raw["runs"][0]["uid"] = "u2"
    [late] = store.import_json(json.dumps(raw).encode(), file="late.json").run_ids
    runs = store.list_runs()
    assert runs[0].run_id == late and runs[1].run_id == measured, "the dated-ahead import sorts by its arrival"
    assert runs[-1].created_at == "2024-01-01T00:00:00Z"
    assert [r.source for r in runs] == ["imported", "measured", "imported"]
    assert [r.run_id for r in pick_runs(runs, sources=["measured"])] == [measured]
    assert [r.run_id for r in store.list_runs(source=None)] == [r.run_id for r in runs]
    assert [r.run_id for r in store.read_runs(source="measured").runs] == [measured]
