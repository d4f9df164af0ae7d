"""One crossover record (issue 29, item 1): older files of every generation read as it and show the same
crossover; its sentence is made when shown, never read from a file; the headline is a property of the list."""

from __future__ import annotations

import json

import pytest

from core.results.kinds import read_result
from core.results.crossover import Crossover, pick_headline, sentence, short
from tests.result_samples import matmul_payload

GPU, CPU = "cuda:0 float32", "cpu float32"


def _v2(crossovers: list[dict], **more) -> dict:
    return {**matmul_payload(), "schema_version": 2, "crossovers": crossovers, **more}


def _old(time: str, status: str, n: int | None, lower: int | None, upper: int | None, **more) -> dict:
    """A version 2 `SweepCrossover` as it was written, with its sentence."""
    return {"challenger": GPU, "baseline": CPU, "time": time, "gpu_vs_cpu": True, "status": status, "n": n,
            "lower_n": lower, "upper_n": upper, "text": "the GPU wins from n = 1 (a sentence saved long ago)", **more}


def test_a_comparison_with_its_call_reads_as_the_record_and_its_saved_sentence_is_ignored():
    sweep = read_result("matmul", _v2([_old("median_s", "interpolated", 300, 256, 1024, call="found", n_low=256,
                                            n_high=1024)], crossover_n=300.0))
    (c,) = sweep.crossovers
    assert (c.call, c.n_low, c.n_high, c.n) == ("found", 256, 1024, 300)
    assert sweep.headline == "n 256–4096, GPU wins from n≈300"
    assert "a sentence saved long ago" not in sentence(c) and "a sentence saved long ago" not in json.dumps(
        sweep.to_json())
    assert sweep.crossover_lines == [f"crossover: {GPU} beats {CPU} from n ≈ 300 on (between the measured sizes "
                                     "256 and 1,024)"]  # no verdicts in this file: the medians' words


@pytest.mark.parametrize("entry, expected", [
    (_old("median_s", "interpolated", 724, 512, 1024), ("found", 512, 1024, 724)),  # before the verdicts
    (_old("median_s", "below_range", 256, None, 256), ("found", None, 256, 256)),
    (_old("median_s", "none", None, None, None), ("none", None, None, None)),
    (_old("end_to_end_s", "interpolated", 900, 512, 1024), ("found", 512, 1024, 900)),
    (_old("end_to_end_s", "interpolated", None, 512, 1024), ("unclear", None, None, None)),  # busy: no size
    (_old("end_to_end_s", "none", None, None, None), ("none", None, None, None)),
    (_old("end_to_end_s", "no_data", None, None, None), ("unclear", None, None, None)),
])
def test_every_older_comparison_reads_as_the_call_the_views_gave_it(entry, expected):
    (c,) = read_result("matmul", _v2([entry])).crossovers
    assert (c.call, c.n_low, c.n_high, c.n) == expected


def test_the_same_headline_as_before_for_each_generation():
    older = read_result("matmul", _v2([_old("median_s", "interpolated", 724, 512, 1024),
                                       _old("end_to_end_s", "interpolated", 900, 512, 1024)], crossover_n=724.0))
    assert older.headline.endswith("GPU wins from n≈724") and older.headline_crossover.time == "median_s"
    assert older.crossover_lines[1] == (f"crossover with copies: {GPU} beats {CPU} from n ≈ 900 on (between the "
                                        "measured sizes 512 and 1,024)")
    oldest = read_result("matmul", matmul_payload())  # crossover_n alone: it was GPU vs CPU
    assert oldest.headline.endswith("GPU wins from n≈300") and oldest.headline_crossover.gpu_vs_cpu


def test_an_upgraded_file_writes_the_current_version_and_reads_back_the_same():
    sweep = read_result("matmul", _v2([_old("median_s", "interpolated", 724, 512, 1024)], crossover_n=724.0,
                                      crossover_end_to_end_n=None))
    written = json.loads(json.dumps(sweep.to_json()))
    assert written["schema_version"] == 3 and "extra" not in written
    assert {"crossover_n", "crossover_end_to_end_n", "crossover"}.isdisjoint(written)
    assert all(set(c) == {"challenger", "baseline", "time", "call", "n_low", "n_high", "n"}
               for c in written["crossovers"])
    assert read_result("matmul", written) == sweep


def test_the_headline_is_the_first_gpu_comparison_of_compute_time():
    def c(challenger: str, time: str = "median_s") -> Crossover:
        return Crossover(challenger=challenger, baseline="cpu float32 2 threads", time=time, call="none")
    copies, threads, gpu = c("cuda:0 float32", "end_to_end_s"), c("cpu float32 1 thread"), c("cuda:0 float32")
    assert pick_headline([copies, threads, gpu]) is gpu
    assert pick_headline([copies, threads]) is threads and pick_headline([copies]) is None
    assert short(None) == "no crossover" and not threads.gpu_vs_cpu and gpu.winner == "GPU"
