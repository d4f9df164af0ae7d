"""Verdicts per size (faster / same / unclear, the busy flag), the crossover interval, and their JSON."""

from __future__ import annotations

import dataclasses
import json

import pytest

from core.matmul import verdict
from core.matmul.engine import measured_point
from core.matmul.series import Series
from core.platform.timing import Measurement
from core.matmul.crossover import crossover_interval, crossover_of
from core.matmul.verdict import judge
from core.results.kinds import read_result
from core.results.crossover import Crossover, Verdict, sentence
from core.results.matmul import MatmulPoint, MatmulSweep
from tests.result_samples import matmul_payload

QUIET_NOISE = (1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.03, 0.97)  # +-3 %: a quiet machine


def samples(seconds: float, noise=QUIET_NOISE) -> list[float]:
    return [seconds * k for k in noise]


def test_a_clearly_faster_series_is_called_faster_and_named_first():
    v = judge(512, "2 threads", "1 thread", samples(0.5), samples(1.0))
    assert v.call == "faster" and (v.a, v.b) == ("2 threads", "1 thread") and v.n == 512
    assert v.ratio == pytest.approx(2.0) and 1.0 < v.low <= v.ratio <= v.high and not v.busy


def test_when_the_baseline_wins_it_is_named_first_and_the_ratio_turned_over():
    v = judge(64, "2 threads", "1 thread", samples(2e-5), samples(1e-5))
    assert v.call == "faster" and (v.a, v.b) == ("1 thread", "2 threads")
    assert v.ratio == pytest.approx(2.0) and 1.0 < v.low <= v.high


def test_two_series_within_the_margin_are_the_same():
    v = judge(256, "a", "b", samples(1.0, [1.0, 1.005, 0.995] * 4), samples(1.01, [1.0, 1.005, 0.995] * 4))
    assert v.call == "same" and 1 / (1 + verdict.SAME_MARGIN) <= v.low <= v.high <= 1 + verdict.SAME_MARGIN


def test_overlapping_samples_are_unclear_with_the_reason():
    v = judge(256, "a", "b", [1.0, 2.0, 1.5, 1.2, 1.9], [1.2, 1.8, 1.4, 1.0, 2.1])
    assert v.call == "unclear" and v.low < 1 < v.high and "overlap" in v.why and not v.busy


def test_a_busy_machine_makes_even_a_clear_difference_unclear():
    v = judge(1024, "2 threads", "1 thread", samples(0.5), samples(1.0), others_cores=1.0)
    assert v.call == "unclear" and v.busy and "busy" in v.why and "1.0 cores" in v.why
    assert v.ratio == pytest.approx(2.0)  # the figure is kept, only the call withheld
    assert judge(1024, "a", "b", samples(0.5), samples(1.0), others_cores=0.1).call == "faster"  # a little is fine


def test_a_difference_inside_the_margin_is_not_called_faster():
    """Quiet runs moved between 'x1.04 faster' (interval 1.02-1.05) and 'x1.5 slower' at n=64: within-run
    noise is not between-run noise, so a call needs its interval clear of the 5 % margin."""
    tight = [1.0, 1.002, 0.998] * 4
    v = judge(64, "2 threads", "1 thread", samples(1.0, tight), samples(1.05, tight))
    assert v.call == "unclear" and 1.0 < v.low and v.high > 1 + verdict.SAME_MARGIN and "5%" in v.why
    assert judge(64, "2 threads", "1 thread", samples(1.0, tight), samples(1.08, tight)).call == "faster"
    assert judge(64, "2 threads", "1 thread", samples(1.08, tight), samples(1.0, tight)).a == "1 thread"


def test_what_others_used_below_the_busy_line_widens_the_interval():
    """A quarter of a core taken (under the half-core line) can make one series up to 1.33x slower: a 1.28x
    difference it could have made is unclear, a 1.6x one stands; the idle cores were the stranger's."""
    small = judge(256, "1 thread", "2 threads", samples(1.0), samples(1.28), others_cores=0.25)
    assert small.call == "unclear" and small.busy and "up to 1.33x slower" in small.why and small.low > 1
    assert judge(256, "1 thread", "2 threads", samples(1.0), samples(1.28)).call == "faster"  # alone: called
    big = judge(256, "2 threads", "1 thread", samples(1.0), samples(1.6), others_cores=0.25)
    assert big.call == "faster" and not big.busy
    spare = judge(256, "a", "b", samples(1.0), samples(1.28), others_cores=1.25, spare_cores=1)
    assert spare.call == "unclear" and "beyond the 1 the compared series left idle" in spare.why
    assert judge(256, "a", "b", samples(1.0), samples(1.28), others_cores=0.9, spare_cores=1).call == "faster"
    same = judge(256, "a", "b", samples(1.0, [1.0, 1.005, 0.995] * 4), samples(1.0, [1.0, 1.005, 0.995] * 4),
                 others_cores=0.2)
    assert same.call == "unclear" and same.busy  # 1.25x either way: "the same" is not known either
    tight = [1.0, 1.002, 0.998] * 4
    edge = judge(512, "a", "b", samples(1.0, tight), samples(1.07, tight), others_cores=0.03)
    assert edge.call == "unclear" and not edge.busy and "up to 1.03x" in edge.why  # tipped at the edge: not "busy"


def _point(series, n: int, seconds: float, **late) -> MatmulPoint:
    p = measured_point(series, n, Measurement(tuple(samples(seconds)), 1, seconds), None, None, None, None,
                       series.threads, None)
    return dataclasses.replace(p, **late)


GPU, CPU1, CPU2 = Series("cuda:0", "float32", tf32=False), Series("cpu", "float32", threads=1), \
    Series("cpu", "float32", threads=2)


def test_a_size_the_gpu_was_slowed_during_is_unclear_with_its_reasons_unless_the_gpu_won_anyway():
    """Issue 20: nvbench drops throttled samples; here the size is unclear, the figures kept. Issue 33: only a
    slowdown withholds the call (a power cap alone is the GPU's speed under load), and never one the slowed GPU
    still wins: at its full clock it would win the more."""
    hot = _point(GPU, 1024, 5e-3, throttled=True, throttle="sw_power_cap, hw_thermal")
    v = verdict.judge_points(hot, _point(CPU2, 1024, 1e-3), cores=2)
    assert v.call == "unclear" and not v.busy and v.ratio == pytest.approx(0.2)
    assert "the GPU throttled (hw_thermal)" in v.why
    unsaid = verdict.judge_points(_point(GPU, 1024, 5e-3, throttled=True), _point(CPU2, 1024, 1e-3), cores=2)
    assert unsaid.call == "unclear" and "reason not given" in unsaid.why
    won = verdict.judge_points(_point(GPU, 1024, 1e-3, throttled=True, throttle="hw_thermal"),
                               _point(CPU2, 1024, 5e-3), cores=2)
    assert won.call == "faster" and won.a == GPU.label  # won while slowed: the call stands
    both = verdict.judge(1024, "a", "b", samples(1e-3), samples(5e-3), throttle="sw_thermal", slowed=["a", "b"])
    assert both.call == "unclear"  # two series of one slowed GPU: neither won against a full clock
    capped = _point(GPU, 1024, 5e-3, throttled=True, throttle="sw_power_cap")  # an older file marked the cap
    assert capped.clock.power_limited and not capped.clock.slowed
    lost = verdict.judge_points(capped, _point(CPU2, 1024, 1e-3), cores=2)
    assert lost.call == "faster" and lost.a == CPU2.label  # the T4's speed at its power limit is its speed
    cool = verdict.judge_points(_point(GPU, 1024, 1e-3, throttled=False), _point(CPU2, 1024, 5e-3), cores=2)
    assert cool.call == "faster" and cool.a == GPU.label
    older = verdict.judge_points(_point(GPU, 1024, 1e-3), _point(CPU2, 1024, 5e-3), cores=2)  # not read: None
    assert older.call == "faster"
    points = [_point(GPU, 512, 5e-3, throttled=True), _point(CPU2, 512, 1e-3), hot, _point(CPU2, 1024, 1e-3)]
    verdicts = verdict.pair_verdicts(points, GPU.label, CPU2.label, cores=2)
    c = crossover_of(points, GPU.label, CPU2.label, verdicts=verdicts)
    assert c.call == "unclear" and not any(x.busy for x in verdicts)
    said = sentence(c, verdicts)
    assert "the GPU throttled while sizes were timed" in said and "too noisy" not in said


@pytest.mark.parametrize("cores, pair, others, busy", [
    (2, (CPU1, CPU2), 0.5, True),  # this machine: 1 against 2 threads needs both cores, half a core is busy
    (2, (CPU1, CPU2), 0.4, False),
    (2, (GPU, CPU1), 1.4, False),  # the GPU and a 1-thread CPU series leave a core idle: others may use it
    (2, (GPU, CPU1), 1.5, True),
    (64, (CPU1, Series("cpu", "float32", threads=8)), 50.0, False),  # a many-core server, 8 threads needed
    (64, (CPU1, Series("cpu", "float32", threads=8)), 56.5, True),
    (64, (CPU1, Series("cpu", "float32", threads=64)), 0.5, True),  # every core needed: the strict rule
    (64, (GPU, Series("cpu", "float32", threads=60)), 4.4, False),  # free cores: others already had 4
])
def test_the_busy_rule_scales_with_the_cores_the_pair_needs(cores, pair, others, busy):
    a, b = (_point(s, 512, t, others_cores=others) for s, t in zip(pair, (1e-3, 4e-3)))
    v = verdict.judge_points(a, b, cores=cores)
    assert v.busy is busy and (v.call == "unclear") is busy
    spare = cores - max(1 if s.is_gpu else s.threads for s in pair)
    assert (f"more than the {spare} the compared series left idle" in v.why) is (busy and spare > 0)


def test_pair_verdicts_judge_every_size_both_series_measured():
    points = [_point(CPU2, 64, 2e-5), _point(CPU1, 64, 1e-5), _point(CPU2, 128, 1e-4), _point(CPU1, 128, 2e-4),
              _point(CPU1, 256, 1e-3)]
    found = verdict.pair_verdicts(points, CPU2.label, CPU1.label, cores=2)
    assert [(x.n, x.call, x.a) for x in found] == [(64, "faster", CPU1.label), (128, "faster", CPU2.label)]


def test_too_few_samples_are_unclear():
    v = judge(2048, "a", "b", [0.5, 0.5], [1.0, 1.0, 1.0])
    assert v.call == "unclear" and "fewer than 3 samples" in v.why and v.low is None and v.ratio == pytest.approx(2.0)


def test_the_interval_is_reproducible():
    a, b = [1.0, 1.3, 0.9, 1.1, 1.6], [1.4, 1.2, 1.9, 1.5, 1.3]
    assert verdict.ratio_interval(a, b) == verdict.ratio_interval(a, b)


# ---------------------------------------------------------------- the crossover interval

CH, BASE = "gpu", "cpu"


def v(n: int, call: str, winner: str = CH) -> Verdict:
    """A verdict of the pair at n: 'win' (challenger faster), 'lose', 'same' or 'unclear'."""
    if call == "win":
        return Verdict(n=n, a=CH, b=BASE, ratio=2.0, low=1.5, high=2.5, call="faster")
    if call == "lose":
        return Verdict(n=n, a=BASE, b=CH, ratio=2.0, low=1.5, high=2.5, call="faster")
    return Verdict(n=n, a=CH, b=BASE, ratio=1.0, low=0.98 if call == "same" else 0.5,
                   high=1.02 if call == "same" else 2.0, call=call)


def calls(*pattern: str, busy: bool = False) -> list[Verdict]:
    return [v(64 * 2**i, c) for i, c in enumerate(pattern)]


@pytest.mark.parametrize("pattern, expected", [
    (("lose", "lose", "win", "win"), ("found", 128, 256)),
    (("lose", "unclear", "win", "win"), ("found", 64, 256)),  # an unclear size widens the interval
    (("same", "win", "win"), ("found", 64, 128)),
    (("win", "lose", "win", "win"), ("found", 128, 256)),  # "for good": from the last loss on
    (("win", "win", "win"), ("found", None, 64)),  # at or below the first size
    (("lose", "lose", "lose"), ("none", None, None)),
    (("win", "win", "same"), ("none", None, None)),
    (("win", "win", "unclear"), ("unclear", None, None)),  # the largest size cannot be called
    (("unclear", "unclear", "win"), ("unclear", None, 256)),  # wins from 256, below cannot tell
    (("unclear",) * 4, ("unclear", None, None)),
    # a win below an unclear size is not where it was "not faster": the bench's quiet run (512 unclear)
    (("lose", "win", "win", "unclear", "win", "win"), ("found", 64, 1024)),
    (("win", "unclear", "win"), ("unclear", None, 256)),
])
def test_crossover_interval(pattern, expected):
    c = crossover_interval(calls(*pattern), CH, BASE)
    assert (c.call, c.n_low, c.n_high) == expected


def test_crossover_ignores_other_pairs_and_order():
    other = Verdict(n=64, a="x", b="y", ratio=2, low=1.5, high=2.5, call="faster")
    c = crossover_interval([*reversed(calls("lose", "win")), other], CH, BASE)
    assert (c.call, c.n_low, c.n_high) == ("found", 64, 128)
    assert crossover_interval([], CH, BASE).call == "unclear"


def _record(call: str, n_low: int | None = None, n_high: int | None = None) -> Crossover:
    return Crossover(challenger=CH, baseline=BASE, time="median_s", call=call, n_low=n_low, n_high=n_high)


def test_sentences_say_cannot_tell_and_only_found_says_wins_from():
    found = sentence(_record("found", 128, 256))
    assert "between n = 128 and n = 256" in found
    assert "at or below n = 64" in sentence(_record("found", None, 64))
    assert sentence(_record("none")).startswith("no crossover in this range")
    busy_verdict = dataclasses.replace(v(64, "unclear"), busy=True)
    busy = sentence(_record("unclear"), [busy_verdict])
    assert busy.startswith("cannot tell on a machine this busy") and "beats" not in busy
    assert sentence(_record("unclear")).startswith("cannot tell")
    other_pair = Verdict(n=64, a="x", b="y", ratio=1.0, low=0.5, high=2.0, call="unclear", busy=True)
    assert not sentence(_record("unclear"), [other_pair]).startswith("cannot tell on a machine this busy")


# ---------------------------------------------------------------- JSON and older files


def test_older_files_import_without_verdicts_and_write_no_old_keys():
    old = matmul_payload()
    result = read_result("matmul", old)
    assert result.verdicts is None
    written = result.to_json()
    assert {"verdicts", "crossover", "crossover_n", "crossover_end_to_end_n"}.isdisjoint(written)
    assert "others_cores" not in written["results"][0]
    assert written["crossovers"] == [{"challenger": "cuda:0 float32", "baseline": "cpu float32", "time": "median_s",
                                      "call": "found", "n_low": None, "n_high": None, "n": 300}]  # crossover_n


def test_the_json_contract_round_trips():
    payload = {**matmul_payload(), "verdicts": [v(64, "lose").to_json(), v(128, "win").to_json()],
               "crossover": {"a": CH, "b": BASE, "n_low": 64, "n_high": 128, "call": "found"}}
    result = read_result("matmul", payload)
    assert isinstance(result, MatmulSweep) and [x.call for x in result.verdicts] == ["faster", "faster"]
    written = result.to_json()
    assert set(written["verdicts"][0]) >= {"n", "a", "b", "ratio", "low", "high", "call"}
    assert written["schema_version"] == 3 and "crossover" not in written
    assert written["crossovers"] == [{"challenger": CH, "baseline": BASE, "time": "median_s", "call": "found",
                                      "n_low": 64, "n_high": 128, "n": 128}]  # crossover_n 300, kept inside
    assert read_result("matmul", json.loads(json.dumps(written))) == result


@pytest.mark.parametrize("bad, where", [
    ({"verdicts": [{**v(64, "win").to_json(), "call": "maybe"}]}, "verdicts[0].call"),
    ({"crossover": {"a": CH, "b": BASE, "call": "sure"}}, "crossovers[0].call"),
    ({"schema_version": 3, "crossovers": [{"challenger": CH, "baseline": BASE, "time": "median_s"}]},
     "crossovers[0]: missing .call"),
    ({"schema_version": 3, "crossovers": [{"challenger": CH, "baseline": BASE, "time": "median_s", "call": "found",
                                           "n_low": 2048, "n_high": 64}]}, "crossovers[0]"),
    ({"schema_version": 3, "crossovers": [{"challenger": CH, "baseline": BASE, "time": "median_s", "call": "none",
                                           "n": 100}]},
     "crossovers[0]"),
])
def test_a_bad_crossover_in_a_file_is_refused_by_name(bad, where):
    from core.errors import DashboardError
    with pytest.raises(DashboardError, match=where.replace("[", r"\[").replace("]", r"\]")):
        read_result("matmul", {**matmul_payload(), **bad})


def test_the_results_headline_says_cannot_tell_or_no_crossover():
    base = matmul_payload()
    assert read_result("matmul", base).headline == "n 256–4096, GPU wins from n≈300"  # an older file: as before
    unclear = read_result("matmul", {**base, "crossover_n": None,
                                     "crossover": {"a": CH, "b": BASE, "call": "unclear"}})
    assert "cannot tell" in unclear.headline and "no crossover" not in unclear.headline
    none = read_result("matmul", {**base, "crossover_n": None, "crossover": {"a": CH, "b": BASE, "call": "none"}})
    assert none.headline.endswith("no crossover")
