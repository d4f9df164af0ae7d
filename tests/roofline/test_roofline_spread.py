"""The roofline's constants with their uncertainty: repeats made a constant and a spread, the noisy flag
(disagreeing repeats, a busy machine), the probes' alternation, the theory label, the model's error
without noisy series, the predicted crossover as an interval, and the JSON with and without the new keys."""

import pytest

from core.errors import DashboardError
from core.cli.roofline import render
from core.matmul import verdict
from core.matmul.series import Series
from core.platform.machine_load import CpuReading
from core.results.kinds import read_result
from core.results.matmul import MatmulPoint
from core.results.roofline import DeviceRoofs, Spread
from core.roofline import run as roofline_run
from core.roofline import spread
from core.roofline.explain import cannot_tell, crossover_sentence, model_error_text, model_errors
from core.roofline.run import RooflineConfig, assemble, crossover_bounds, model_of, probe_rounds
from core.charts.roofline import model_figure, roofline_figure, roofs_table
from tests.roofline.test_roofline import _roofs, _synthetic_run

ONE, TWO = Series("cpu", "float32", threads=1), Series("cpu", "float32", threads=2)


# ---------------------------------------------------------------- the rules


def test_a_roof_is_the_best_repeat_and_a_cost_the_median():
    assert spread.constant("bandwidth_gbs", [8.0, 12.0, 3.0]) == 12.0  # a neighbour only slows a copy down
    assert spread.constant("peak_gflops", [80.0, 90.0]) == 90.0
    assert spread.constant("launch_s", [5e-6, 6e-6, 9e-4]) == 6e-6  # one repeat beside a neighbour is ignored
    assert spread.constant("wake_s", [0.0, 1e-5, 2e-5]) == 1e-5
    with pytest.raises(ValueError):
        spread.constant("launch_s", [])


@pytest.mark.parametrize("name, values, noisy", [
    ("bandwidth_gbs", [10.0, 11.0, 14.9], False),  # 1.49x apart: within the factor
    ("bandwidth_gbs", [10.0, 11.0, 15.1], True),
    ("launch_s", [5e-6, 5.5e-6, 7e-6], False),
    ("launch_s", [5e-6, 5e-6, 8e-6], True),
    ("wake_s", [0.0, 1e-6, 2.9e-6], False),  # below the 2 µs floor zero and 1 µs are alike: 2.9 / 2 < 1.5
    ("wake_s", [0.0, 1e-6, 3.1e-6], True),
    ("wake_s", [0.0, 5e-5, 1.27e-1], True),  # the busy machine's 1.27e+05 µs
    ("launch_s", [5e-6], False),  # one repeat cannot disagree with itself
])
def test_repeats_that_disagree_beyond_the_factor_are_noisy(name, values, noisy):
    s = spread.spread_of(name, values)
    assert (s.low, s.high, s.repeats) == (min(values), max(values), len(values))
    assert spread.disagree(s) is noisy
    assert (name in spread.flags([s])[0]) is noisy


def test_a_busy_machine_flags_even_repeats_that_agree():
    quiet = spread.spread_of("launch_s", [5e-6, 5e-6, 5e-6], others_cores=0.2)
    busy = spread.spread_of("launch_s", [5e-6, 5e-6, 5e-6], others_cores=0.8)
    assert spread.flags([quiet]) == ((), ())
    names, notes = spread.flags([busy])
    assert names == ("launch_s",) and "other programs used 0.8 cores" in notes[0]
    names, notes = spread.flags([spread.spread_of("wake_s", [1e-5, 9e-5], others_cores=0.9)])
    assert "ranged from 10 µs to 90 µs" in notes[0] and " and other programs used 0.9 cores" in notes[0]


def test_others_over_several_windows_is_their_time_weighted_mean():
    assert spread.others_over([(1.0, 1.0), (0.0, 3.0), (None, 5.0)]) == pytest.approx(0.25)
    assert spread.others_over([(None, 1.0)]) is None


# ---------------------------------------------------------------- the rounds


class FakeReadings:
    """cpu_reading() under test: others use `others` cores in each window between two readings."""

    def __init__(self, others: float) -> None:
        self.t, self.others = 0.0, others

    def __call__(self) -> CpuReading:
        self.t += 1.0
        return CpuReading(busy_s=self.t * self.others, own_s=0.0, at_s=self.t)


def test_the_series_probes_take_turns_and_each_constant_keeps_its_repeats(monkeypatch):
    calls = []

    def fake(series_label: str, name: str, value: float):
        def probe() -> float:
            calls.append((series_label, name))
            return value
        return probe

    monkeypatch.setattr(roofline_run, "_probes", lambda s, budget_s: {
        "bandwidth_gbs": fake(s.label, "bandwidth_gbs", 10.0 * (s.threads or 1)),
        "launch_s": fake(s.label, "launch_s", 5e-6)})
    monkeypatch.setattr(roofline_run, "cpu_reading", FakeReadings(0.8))
    monkeypatch.setattr(roofline_run, "usable_cores", lambda: 2)
    found, stopped = probe_rounds([ONE, TWO], 0.3)
    assert not stopped
    order = [label for label, name in calls if name == "launch_s"]
    assert order == [ONE.label, TWO.label, TWO.label, ONE.label, ONE.label, TWO.label]  # A, B, B, A, A, B
    assert found[TWO.label]["bandwidth_gbs"].values == [20.0] * 3
    roofs = roofline_run.roofs_of(TWO, found[TWO.label])
    assert roofs.bandwidth_gbs == 20.0 and roofs.launch_s == 5e-6 and roofs.wake_s is None
    assert roofs.spread("bandwidth_gbs") == (20.0, 20.0)
    assert set(roofs.noisy or ()) == {"bandwidth_gbs", "launch_s"}  # agreeing repeats, but others took 0.8 cores
    assert not roofline_run.roofs_of(ONE, found[ONE.label]).noisy  # one thread left them a core: not busy for it
    monkeypatch.setattr(roofline_run, "usable_cores", lambda: 16)  # a bigger machine: 14 cores spare for 2 threads
    assert not roofline_run.roofs_of(TWO, found[TWO.label]).noisy


@pytest.mark.parametrize("others, spare, busy", [(0.5, 0, True), (0.4, 0, False), (1.4, 1, False), (1.5, 1, True),
                                                 (13.0, 14, False), (None, 0, False)])
def test_the_busy_flag_scales_with_the_cores_the_series_left_idle(others, spare, busy):
    s = spread.spread_of("launch_s", [5e-6] * 3, others_cores=others)
    assert spread.busy(s, spare) is busy and bool(spread.flags([s], spare)[0]) is busy
    assert spread.spare_cores(2, 2) == 0 and spread.spare_cores(2, None) == 1 and spread.spare_cores(64, 8) == 56


# ---------------------------------------------------------------- the record


def _point(s: Series, n: int, times: tuple[float, ...], others: float | None = None) -> MatmulPoint:
    ordered = sorted(times)
    med = ordered[len(ordered) // 2]
    return MatmulPoint(device="cpu", n=n, dtype="float32", series=s.label, threads=s.threads, median_s=med, iqr_s=0.0,
                       q1_s=ordered[len(ordered) // 4], q3_s=ordered[(3 * len(ordered)) // 4], samples=len(times),
                       gflops=2 * n**3 / med / 1e9, unsynced_s=None, rel_error=None, times_s=times, others_cores=others)


def _probed(s: Series, launch: tuple[float, ...], bandwidth: tuple[float, ...], wake: tuple[float, ...] = (),
            theory: float | None = None) -> DeviceRoofs:
    spreads = [spread.spread_of("launch_s", launch), spread.spread_of("bandwidth_gbs", bandwidth)]
    if wake:
        spreads.append(spread.spread_of("wake_s", wake))
    noisy, notes = spread.flags(spreads)
    return DeviceRoofs(device="cpu", dtype="float32", series=s.label, threads=s.threads, peak_gflops=None,
                       theoretical_gflops=theory, theoretical_note="a guess", bandwidth_gbs=max(bandwidth),
                       launch_s=spread.constant("launch_s", launch),
                       wake_s=spread.constant("wake_s", wake) if wake else None,
                       spreads=tuple(spreads), noisy=noisy, notes=notes)


def _run(wake: tuple[float, ...], *, theory: float | None = None, others: float | None = None):
    roofs = [_probed(ONE, (1e-6,) * 3, (20.0,) * 3, theory=theory), _probed(TWO, (1e-6,) * 3, (20.0,) * 3, wake)]
    results = []
    for n in (64, 128, 256, 512):
        one_s, two_s = 2 * n**3 / 50e9 + 1e-6, 2 * n**3 / 100e9 + 21e-6
        results += [_point(ONE, n, (one_s,) * 5, others), _point(TWO, n, (two_s,) * 5, others)]
    return assemble(RooflineConfig(), [ONE, TWO], (TWO, ONE), roofs, results)


def test_the_peak_is_the_best_product_with_its_quartiles_as_spread():
    run = _run((20e-6,) * 3)
    one = run.devices_roofs[0]
    assert one.peak_gflops == pytest.approx(2 * 512**3 / (2 * 512**3 / 50e9 + 1e-6) / 1e9)
    low, high = one.spread("peak_gflops") or (0, 0)
    assert low == pytest.approx(high) == pytest.approx(one.peak_gflops)
    assert not run.noisy_series


def test_a_stalled_peak_or_a_busy_product_is_noisy(monkeypatch):
    monkeypatch.setattr(roofline_run, "usable_cores", lambda: 2)
    roofs = _probed(ONE, (1e-6,) * 3, (20.0,) * 3)
    stalled = roofline_run.peak_of(ONE, [_point(ONE, 256, (1e-3, 1e-3, 1e-3, 5e-3, 5e-3))], roofs)
    assert "peak_gflops" in (stalled.noisy or ())
    busy = roofline_run.peak_of(TWO, [_point(TWO, 256, (1e-3,) * 5, others=0.7)],
                                _probed(TWO, (1e-6,) * 3, (20.0,) * 3))
    assert "peak_gflops" in (busy.noisy or ())  # 2 threads on 2 cores: 0.7 of a core taken from them
    beside = roofline_run.peak_of(ONE, [_point(ONE, 256, (1e-3,) * 5, others=0.7)], roofs)
    assert "peak_gflops" not in (beside.noisy or ())  # 1 thread: the other core was theirs to use


def test_a_measured_peak_above_the_theory_says_the_theory_underestimates():
    run = _run((20e-6,) * 3, theory=10.0)
    one = run.devices_roofs[0]
    assert any(n.startswith("theory underestimates this machine (boost clock?)") for n in one.notes or ())
    names = [t.name for t in roofline_figure(run).data]
    assert "cpu float32 1 thread theoretical peak (theory underestimates this machine (boost clock?))" in names
    assert "peak_gflops" not in (one.noisy or ())  # a label, not a noisy constant


def test_the_predicted_crossover_is_an_interval_from_the_spread():
    """Wake-up 10-40 µs (median 20): 2 threads win where n^3/50e9 exceeds the wake, n = 100 at 20 µs."""
    run = _run((10e-6, 20e-6, 40e-6))
    low, high = run.predicted_crossover_low, run.predicted_crossover_high  # the peaks come from the products: near
    assert run.predicted_crossover_n == pytest.approx(100, abs=2)  # 50 and 100 GFLOP/s, not exactly
    assert low == pytest.approx((10e-6 * 50e9) ** (1 / 3), abs=2)  # 79
    assert high == pytest.approx((40e-6 * 50e9) ** (1 / 3), abs=2)  # 126
    assert "wake_s" in (run.devices_roofs[1].noisy or ())  # 4x apart
    text = crossover_sentence(run)
    assert f"the constants' spread allows n ≈ {low} to {high}" in text
    assert text.startswith("Cannot tell on a machine this busy: some of the constants are noisy "
                           "(cpu float32 2 threads: thread wake-up cost; see their ranges in the table)")
    fig = model_figure(run)
    assert any(shape.type == "rect" and shape.x0 == low and shape.x1 == high for shape in fig.layout.shapes)


def test_quiet_constants_give_a_narrow_interval_and_no_warning():
    run = _run((19e-6, 20e-6, 21e-6))
    assert run.predicted_crossover_low is not None and run.predicted_crossover_high is not None
    assert run.predicted_crossover_low <= (run.predicted_crossover_n or 0) <= run.predicted_crossover_high
    assert run.predicted_crossover_high / run.predicted_crossover_low < 1.1
    assert "Cannot tell" not in crossover_sentence(run)


def test_the_model_error_leaves_noisy_series_out_instead_of_printing_them():
    """The busy run's 1.27e+05 µs wake-up predicted +70739 %; flagged, that series is not scored."""
    run = _run((5e-5, 1.27e-1, 1.27e-1))
    errors = model_errors(run)
    assert errors.left_out == ("cpu float32 2 threads",)
    assert errors.worst is not None and errors.worst[0] == "cpu float32 1 thread" and abs(errors.worst[2]) < 0.01
    text = model_error_text(run)
    assert "Not scored" in text and "cpu float32 2 threads (noisy: thread wake-up cost)" in text and "+70" not in text
    table = roofs_table(run)
    assert list(table["noisy"]) == ["", "thread wake-up cost"] and table["wake range"].iloc[1] == "50–127,000"


def test_bounds_keep_the_constant_where_a_file_has_no_spread():
    old = _roofs("cpu float32 2 threads", "cpu", 1e-6, 100.0, 20.0, wake_s=20e-6)
    assert model_of(old, "fast") == model_of(old, "slow") == model_of(old)
    slow = _roofs("cpu float32 1 thread", "cpu", 1e-6, 50.0, 20.0)
    predicted, low, high = crossover_bounds(old, slow)
    assert predicted == low == high == 100


def test_the_new_keys_round_trip_and_older_files_still_import():
    run = _run((10e-6, 20e-6, 40e-6))
    obj = run.to_json()
    assert obj["devices"][1]["noisy"] == ["wake_s"] and isinstance(obj["devices"][1]["notes"], list)
    assert {s["name"] for s in obj["devices"][1]["spreads"]} == {"launch_s", "bandwidth_gbs", "wake_s", "peak_gflops"}
    assert (obj["predicted_crossover_low"], obj["predicted_crossover_high"]) == (run.predicted_crossover_low,
                                                                                run.predicted_crossover_high)
    assert obj["predicted_crossover_low"] < obj["predicted_crossover_n"] < obj["predicted_crossover_high"]
    assert read_result("roofline", obj) == run
    old = _synthetic_run().to_json()
    for key in ("predicted_crossover_low", "predicted_crossover_high"):
        old.pop(key)
    assert not {"noisy", "notes", "spreads"} & set(old["devices"][0])
    back = read_result("roofline", old)
    assert back.predicted_crossover_low is None and back.devices_roofs[0].noisy is None
    assert back.devices_roofs[0].spread("launch_s") is None and not back.noisy_series
    assert "spread allows" not in crossover_sentence(back) and model_errors(back).left_out == ()
    bad = run.to_json()
    bad["devices"][0]["spreads"][0]["low"] = -1
    with pytest.raises(DashboardError, match=r"devices\[0\]\.spreads\[0\]\.low"):
        read_result("roofline", bad)


def test_spread_is_declared_like_every_result_part():
    s = Spread(name="launch_s", low=1e-6, high=2e-6, repeats=3)
    assert Spread.from_json(s.to_json(), "x") == s


# ---------------------------------------------------------------- the measured crossover: the race's verdicts


def test_the_measured_crossover_is_called_by_the_races_verdicts():
    run = _run((20e-6,) * 3)  # 1 thread wins at 64, 2 threads from 128 on (equal times at n = 100)
    c = run.measured_crossover
    assert c is not None and (c.call, c.n_low, c.n_high) == ("found", 64, 128)
    assert (c.challenger, c.baseline, c.time) == (TWO.label, ONE.label, "median_s")
    assert [(v.n, v.call, v.a) for v in run.verdicts or ()] == [
        (64, "faster", ONE.label), (128, "faster", TWO.label), (256, "faster", TWO.label), (512, "faster", TWO.label)]
    assert 64 <= (run.measured_crossover_n or 0) <= 128
    text = crossover_sentence(run)
    assert f"the sweep measured it at n ≈ {run.measured_crossover_n:,} (" in text
    assert "between n = 64 and n = 128" in text
    assert not cannot_tell(run) and "cannot tell" not in run.headline


def test_a_busy_sweep_cannot_tell_instead_of_a_crossover(monkeypatch):
    """Others took a core while 1 and 2 threads raced on 2 cores: no size is called, no crossover drawn."""
    monkeypatch.setattr(verdict, "usable_cores", lambda: 2)
    run = _run((20e-6,) * 3, others=1.0)
    assert run.measured_crossover is not None and run.measured_crossover.call == "unclear"
    assert run.measured_crossover_n is None and all(v.busy and v.call == "unclear" for v in run.verdicts or ())
    text = crossover_sentence(run)
    assert "The sweep: cannot tell on a machine this busy where cpu float32 2 threads starts to beat" in text
    assert "ratio" not in text and cannot_tell(run) and run.headline.endswith("measured cannot tell")
    assert "cannot tell on a machine this busy" in render(run)  # the CLI says it too
    labels = [a.text for a in model_figure(run).layout.annotations]
    assert any(t.startswith("predicted n ≈") for t in labels) and not any(t.startswith("measured n") for t in labels)
    quiet = [a.text for a in model_figure(_run((20e-6,) * 3)).layout.annotations]
    assert any(t.startswith("measured n ≈") for t in quiet)


def test_noisy_samples_without_a_busy_machine_cannot_tell_either(monkeypatch):
    monkeypatch.setattr(verdict, "usable_cores", lambda: 2)
    roofs = [_probed(ONE, (1e-6,) * 3, (20.0,) * 3), _probed(TWO, (1e-6,) * 3, (20.0,) * 3, (20e-6,) * 3)]
    spread_a, spread_b = (1.0, 2.0, 1.5, 1.2, 1.9), (1.2, 1.8, 1.4, 1.0, 2.1)  # overlapping at every size
    results = [p for n in (64, 128) for p in (_point(ONE, n, tuple(t * n**3 * 1e-9 for t in spread_a)),
                                              _point(TWO, n, tuple(t * n**3 * 1e-9 for t in spread_b)))]
    run = assemble(RooflineConfig(), [ONE, TWO], (TWO, ONE), roofs, results)
    assert run.measured_crossover is not None and run.measured_crossover.call == "unclear"
    assert "The sweep: cannot tell whether cpu float32 2 threads beats" in crossover_sentence(run)


def test_the_measured_crossover_keys_round_trip_and_older_files_read_as_before():
    run = _run((20e-6,) * 3)
    obj = run.to_json()
    n = run.measured_crossover_n
    assert obj["measured_crossover"] == {"challenger": TWO.label, "baseline": ONE.label, "time": "median_s",
                                         "call": "found", "n_low": 64, "n_high": 128, "n": n}
    assert obj["schema_version"] == 2 and "measured_crossover_n" not in obj and 64 <= n <= 128
    assert {"n", "a", "b", "ratio", "low", "high", "call"} <= set(obj["verdicts"][0])
    assert read_result("roofline", obj) == run
    old = _synthetic_run().to_json()
    assert "verdicts" not in old  # not set: not written, as before the key
    old.pop("measured_crossover")
    version_1 = {**old, "schema_version": 1, "measured_crossover_n": 300}  # a file older than the verdicts
    back = read_result("roofline", version_1)
    assert (back.measured_crossover.call, back.measured_crossover_n, back.verdicts) == ("found", 300, None)
    assert "the sweep measured it at n ≈ 300 (ratio" in crossover_sentence(back)
    interval = {"a": TWO.label, "b": ONE.label, "n_low": 64, "n_high": 128, "call": "found"}  # version 1, later
    later = read_result("roofline", {**obj, "schema_version": 1, "measured_crossover": interval,
                                     "measured_crossover_n": n})
    assert later == run, "version 1's interval and size read as the record version 2 writes"


# ---------------------------------------------------------------- noisy constants: the caveat leads (issue 31)


def _first(text: str, *phrases: str) -> int:
    """Where the first of `phrases` starts in `text` (len(text) if none is there)."""
    return min([text.index(p) for p in phrases if p in text] or [len(text)])


PREDICTIONS = ("model predicts", "predicts the crossover", "predicts no crossover", "Below n ≈")


def test_noisy_constants_lead_with_cannot_tell_and_the_prediction_follows_the_caveat():
    run = _run((10e-6, 20e-6, 40e-6))  # the wake-up 4x apart: noisy
    assert run.noisy_series and cannot_tell(run)
    text = crossover_sentence(run)
    assert text.startswith("Cannot tell on a machine this busy")
    assert _first(text, "Cannot tell") < _first(text, *PREDICTIONS) < len(text)  # still said, after the caveat
    assert "cannot tell" in render(run).split("model error")[-1].lower()  # the CLI prints the same paragraph


@pytest.mark.parametrize("predicted", [1127, None])
def test_a_prediction_the_noise_allows_to_flip_is_given_as_its_range_only(predicted):
    """Issue 31: one busy run said 'the model predicts the crossover at n ≈ 1,127', the next 'no crossover up to
    n = 131,072', each prediction first and the caveat after. The spread allowed both: neither is a prediction."""
    from dataclasses import replace

    run = replace(_run((10e-6, 20e-6, 40e-6)), predicted_crossover_n=predicted, predicted_crossover_low=1127,
                  predicted_crossover_high=None)
    text = crossover_sentence(run)
    assert text.startswith("Cannot tell on a machine this busy")
    assert _first(text, *PREDICTIONS) == len(text), "no figure is stated as the model's prediction"
    assert "The model cannot say where: " in text and "anywhere from n ≈ 1,127 to none up to n = 131,072" in text
    assert "ratio" not in text
    cli = render(run)
    assert "predicts the crossover at" not in cli and "predicts no crossover" not in cli


def test_a_quiet_run_states_its_prediction_first_as_before():
    run = _run((19e-6, 20e-6, 21e-6))
    text = crossover_sentence(run)
    assert text.startswith("The model predicts the crossover at n ≈ ") and "Cannot tell" not in text


def test_the_listing_headline_does_not_state_a_prediction_the_noise_allows_to_flip():
    from dataclasses import replace

    run = _run((10e-6, 20e-6, 40e-6))
    assert f"predicted {run.predicted_crossover_n}," in run.headline  # a range that stays a crossover: its figure
    flips = replace(run, predicted_crossover_n=1127, predicted_crossover_low=1127, predicted_crossover_high=None)
    assert flips.prediction_flips and "predicted cannot tell," in flips.headline and "1127" not in flips.headline
