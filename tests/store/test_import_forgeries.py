"""Forged verdicts and crossovers never reach the board (issue 30, item 3): an import computes them again from
the file's points, or refuses the file where what it says cannot be (an interval that runs backwards, a
roofline verdict its points contradict).

The honest run is a CPU-only race of 1 thread against 2 on sizes 64-2048 (2 threads win from n ≈ 93, between
64 and 128), written as version 2 wrote it, sentences and all; each forgery edits that file the way a student
would. Whatever the forgery, what the store keeps and the Class board plots is what the honest file gives.
"""

from __future__ import annotations

import copy
import json
import statistics
from typing import Any

import pytest

from core.errors import DashboardError
from core.matmul import verdict
from core.results.kinds import read_result
from core.store.database import open_store
from core.store.class_board import crossover_spread, refresh
from tests.result_samples import LAPTOP

ONE, TWO = "cpu float32 1 thread", "cpu float32 2 threads"
GPU = "cuda:0 float32 TF32 off"
SIZES = (64, 128, 256, 512, 1024, 2048)
NOISE = (1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.03, 0.97)


def _point(label: str, threads: int, n: int) -> dict[str, Any]:
    seconds = n**3 / 1e9 if threads == 1 else 4e-4 + n**3 / 2e9
    times = [seconds * k for k in NOISE]
    median = statistics.median(times)
    return {"device": "cpu", "n": n, "dtype": "float32", "series": label, "threads": threads, "median_s": median,
            "iqr_s": None, "samples": len(times), "gflops": 2 * n**3 / median / 1e9, "unsynced_s": None,
            "rel_error": None, "times_s": times, "others_cores": 0.0}


def honest() -> dict[str, Any]:
    """The race as a version 2 file: its verdicts from its samples, its crossover as the race found it."""
    obj: dict[str, Any] = {
        "kind": "matmul", "schema_version": 2,
        "results": [_point(label, t, n) for n in SIZES for label, t in ((ONE, 1), (TWO, 2))],
        "settings": {"sizes": list(SIZES), "devices": ["cpu"], "threads": [1, 2], "end_to_end": False,
                     "series": [ONE, TWO]},
        "machine": copy.deepcopy(LAPTOP), "load": {"cores": 2, "free_cores": 2, "busy": False},
        "crossover_n": None, "crossover_end_to_end_n": None,
    }
    sweep = read_result("matmul", obj)
    obj["verdicts"] = [v.to_json() for v in verdict.pair_verdicts(sweep.results, TWO, ONE, cores=2)]
    obj["crossovers"] = [{"challenger": TWO, "baseline": ONE, "time": "median_s", "gpu_vs_cpu": False,
                          "status": "interpolated", "n": 93, "lower_n": 64, "upper_n": 128,
                          "text": f"{TWO} beats {ONE} from a size between n = 64 and n = 128 on",
                          "call": "found", "n_low": 64, "n_high": 128}]
    obj["crossover"] = {"a": TWO, "b": ONE, "n_low": 64, "n_high": 128, "call": "found"}
    return obj


def _gpu_wins(o: dict[str, Any]) -> None:
    """'GPU wins from n≈100' on a CPU-only run: the headline comparison and the old float say so."""
    o["crossover_n"] = 100.0
    o["crossovers"].insert(0, {**o["crossovers"][0], "challenger": GPU, "gpu_vs_cpu": True, "n": 100,
                               "text": "the GPU beats the CPU from n ≈ 100 on"})


def _gpu_interval(o: dict[str, Any]) -> None:
    """The same claim as the interval of a file older than the comparisons' calls."""
    o["crossover_n"] = 100.0
    o["crossover"] = {"a": GPU, "b": TWO, "n_low": 64, "n_high": 128, "call": "found"}
    for c in o["crossovers"]:
        c.pop("call"), c.pop("n_low"), c.pop("n_high")


def _backwards(o: dict[str, Any]) -> None:
    """The interval (2048, 64] of a 64-2048 sweep."""
    o["crossovers"][0].update(n_low=2048, n_high=64, n=64)
    o["crossover"].update(n_low=2048, n_high=64)


def _low_above_high(o: dict[str, Any]) -> None:
    o["crossovers"][0].update(n_low=512, n_high=256, n=300)
    o["crossover"].update(n_low=512, n_high=256)


def _outside_the_sweep(o: dict[str, Any]) -> None:
    """An interval in order, but beyond every size measured."""
    o["crossovers"][0].update(n_low=4096, n_high=8192, n=5000)
    o["crossover"].update(n_low=4096, n_high=8192)


def _unmeasured_verdict(o: dict[str, Any]) -> None:
    """A verdict at n = 4096, a size nobody timed."""
    o["verdicts"].append({"n": 4096, "a": TWO, "b": ONE, "ratio": 2.0, "low": 1.9, "high": 2.1, "call": "faster"})


def _huge_ratio(o: dict[str, Any]) -> None:
    o["verdicts"][-1].update(ratio=1e300, high=1e300)


def _every_size_won(o: dict[str, Any]) -> None:
    """Every verdict turned into a win for 2 threads, and the crossover at or below the first size."""
    for v in o["verdicts"]:
        v.update(a=TWO, b=ONE, call="faster", busy=False, why="")
    o["crossovers"][0].update(n_low=None, n_high=64, n=64)
    o["crossover"].update(n_low=None, n_high=64)


FORGERIES = [_gpu_wins, _gpu_interval, _backwards, _low_above_high, _outside_the_sweep, _unmeasured_verdict,
             _huge_ratio, _every_size_won]


def _kept(store, obj: dict[str, Any]) -> tuple[str, list[Any], list[Any], list[float]]:
    """What the store keeps of an imported file and what the Class board plots from it."""
    run = store.get(store.import_json(json.dumps(obj).encode(), label="Ana").run_ids[0])
    payload = run.result.to_json()
    spread = crossover_spread(refresh(store))
    return run.result.headline, payload.get("verdicts"), payload.get("crossovers"), spread.measured


@pytest.mark.parametrize("forge", FORGERIES, ids=[f.__name__.strip("_") for f in FORGERIES])
def test_a_forged_verdict_or_crossover_is_computed_again_or_refused(forge, tmp_path):
    expected = _kept(open_store(f"sqlite:///{tmp_path / 'honest.sqlite3'}"), honest())
    assert "2 threads wins from n≈" in expected[0] and expected[3] and 64 < expected[3][0] <= 128
    forged = honest()
    forge(forged)
    store = open_store(f"sqlite:///{tmp_path / 'forged.sqlite3'}")
    try:
        kept = _kept(store, forged)
    except DashboardError as exc:  # refused whole: nothing of it stored
        assert "crossover" in str(exc) and store.list_runs() == []
        return
    assert kept == expected, "the store and the board keep what the points say, not what the file claimed"
    assert "GPU" not in kept[0] and all(v["n"] in SIZES and v["ratio"] < 1e3 for v in kept[1])


def test_an_honest_file_imports_with_the_crossover_it_was_saved_with(tmp_path):
    headline, verdicts, crossovers, measured = _kept(open_store(f"sqlite:///{tmp_path / 'r.sqlite3'}"), honest())
    assert verdicts == honest()["verdicts"], "the same samples, the same seed, the same cores: the same calls"
    assert [(c["call"], c["n_low"], c["n_high"]) for c in crossovers] == [("found", 64, 128)]
    assert headline.endswith(f"2 threads wins from n≈{crossovers[0]['n']:,}")


def test_a_sweep_the_race_saved_reads_back_unchanged_through_an_import(tmp_path):
    """The rule the race applies and the rule an import applies are one function: a round trip changes nothing."""
    from core.matmul.crossover import recomputed

    sweep = recomputed(read_result("matmul", honest()))
    again = read_result("matmul", json.loads(json.dumps(sweep.to_json())))
    assert recomputed(again) == again == sweep


# ---------------------------------------------------------------- the roofline: medians only, so checked


def _roofline() -> dict[str, Any]:
    from tests.roofline.test_roofline_spread import _run

    return _run((20e-6,) * 3).to_json()


@pytest.mark.parametrize("edit, words", [
    (lambda o: o["verdicts"].append({**o["verdicts"][-1], "n": 4096}), "a size the points do not have"),
    (lambda o: o["verdicts"][0].update(ratio=1e300), "ratio: 1e+300, but the points' medians give"),
    (lambda o: o["verdicts"][0].update(low=3.0, high=2.0), "runs backwards"),
    (lambda o: o["verdicts"][0].update(call="same"), "is not what its interval allows"),
    (lambda o: o["verdicts"].pop(), "no verdict at n = 512"),
])
def test_a_roofline_whose_verdicts_disagree_with_its_points_is_refused(edit, words):
    obj = _roofline()
    edit(obj)
    store = open_store()
    with pytest.raises(DashboardError, match=words.replace("(", r"\(").replace("+", r"\+")):
        store.import_json(json.dumps(obj).encode())
    assert store.list_runs() == []


def test_a_roofline_measured_crossover_is_computed_again_from_its_verdicts():
    obj, honest_run = _roofline(), read_result("roofline", _roofline())
    obj["measured_crossover"] = {**obj["measured_crossover"], "n_low": None, "n_high": 64, "n": 64}
    store = open_store()
    kept = store.get(store.import_json(json.dumps(obj).encode()).run_ids[0]).result
    assert kept.measured_crossover == honest_run.measured_crossover and kept.headline == honest_run.headline


# ---------------------------------------------------------------- judging again is bounded


def test_more_samples_than_a_sweep_takes_are_refused_before_any_is_judged():
    from core.matmul import paired
    from core.matmul.crossover import MAX_SAMPLES_PER_POINT

    assert MAX_SAMPLES_PER_POINT == paired.MAX_ROUNDS
    obj = honest()
    obj["results"][0].update(times_s=obj["results"][0]["times_s"] * 30, samples=240)  # a bootstrap of millions
    store = open_store()
    with pytest.raises(DashboardError, match=r"run.payload.results\[0\].times_s: 240 samples, more than a sweep"):
        store.import_json(json.dumps(obj).encode())
    assert store.list_runs() == []


def test_a_file_with_more_samples_to_judge_than_an_import_allows_is_refused(monkeypatch):
    from core.matmul import crossover

    monkeypatch.setattr(crossover, "MAX_IMPORT_SAMPLES", 2 * len(SIZES) * len(NOISE) - 1)
    store = open_store()
    with pytest.raises(DashboardError, match="96 samples to judge again, over the limit of 95 per import"):
        store.import_json(json.dumps(honest()).encode())
    monkeypatch.setattr(crossover, "MAX_IMPORT_SAMPLES", 2 * len(SIZES) * len(NOISE))
    assert store.import_json(json.dumps(honest()).encode()).run_ids
