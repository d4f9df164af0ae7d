"""Same settings, same sizes (issue 31, item 5): a race's sizes are decided before timing, from the budget, the
devices' memory and this machine's rate card, and a size still skipped is named with why."""

from __future__ import annotations

import json

import pytest
import torch

from core.matmul import guards, rate_card, sweep
from core.matmul.choices import default_race_threads
from core.matmul.config import MatmulOptions, SweepConfig
from core.matmul.engine import measured_point
from core.matmul.rate_card import Rates, calibrate, rates_for, read_card
from core.matmul.series import Series
from core.matmul.sizes import FREE_N, MEMORY_SHARE, RUNAWAY, decide, runaway
from core.matmul.sweep import run_sweep
from core.platform.timing import Measurement
from core.platform.units import GIB
from core.results.matmul import MatmulSweep, SkippedSize

CPU1 = Series("cpu", "float32", threads=1)
CPU2 = Series("cpu", "float32", threads=2)
GFLOPS_PER_THREAD = 50e9  # the fake engine's CPU: 1 thread takes 0.34 s at n = 2048, 2 threads half that


def point(series: Series, n: int, seconds: float, first_s: float | None = None):
    m = Measurement((seconds, seconds * 1.1, seconds * 0.9), 1, seconds if first_s is None else first_s)
    return measured_point(series, n, m, None, None, None, 1e-7, series.threads, None)


class Machine:
    """A fake engine whose speed the test sets: `slowdown` 3 is a busy machine. The rate card's calibration probe
    and the timed rounds both run at the current speed, as the real ones would."""

    def __init__(self, monkeypatch):
        self.slowdown = 1.0
        self.probed: list[tuple[str, int]] = []
        monkeypatch.setattr(sweep, "time_interleaved", self.rounds)
        monkeypatch.setattr(sweep, "probe_seconds", self.probe)

    def seconds(self, s: Series, n: int) -> float:
        return 2 * n**3 / (GFLOPS_PER_THREAD * (s.threads or 1)) * self.slowdown

    def probe(self, s: Series, n: int, seed: int = 0, repeats: int = 1) -> float:
        self.probed.append((s.label, n))
        return self.seconds(s, n)

    def rounds(self, ready, n, options):
        return [point(s, n, self.seconds(s, n)) for s in ready]


def timed_sizes(result: MatmulSweep) -> dict[str, list[int]]:
    sizes: dict[str, list[int]] = {}
    for p in result.results:
        sizes.setdefault(p.label, []).append(p.n)
    return sizes


@pytest.mark.parametrize("first, second", [(1.0, 3.0), (3.0, 1.0)], ids=["quiet then busy", "busy then quiet"])
def test_two_default_races_with_the_same_settings_time_the_same_sizes(monkeypatch, first, second):
    """The page's default race without a GPU (1 thread against 2, n = 64 to 2048, 1 s per size), twice on one
    machine, the second (or the first) while other programs make everything 3 times slower.

    Before: the time guard extrapolated from the medians just measured, so the busy race predicted
    n = 2048 at 3 x 0.34 s, found warm-up plus one product over the 1 s budget and skipped it, while the quiet
    race timed it: 'n 64–1024' beside 'n 64–2048' on the Class board. Now both plan from the rate card."""
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    machine = Machine(monkeypatch)
    config = SweepConfig(threads=default_race_threads(False))
    assert config.sizes == (64, 128, 256, 512, 1024, 2048) and config.options.budget_s == 1.0
    machine.slowdown = first
    one = run_sweep(config)
    calibrated = len(machine.probed)
    machine.slowdown = second
    two = run_sweep(config)
    assert timed_sizes(one) == timed_sizes(two)
    assert [(s.series, s.n, s.reason) for s in one.skipped] == [(s.series, s.n, s.reason) for s in two.skipped]
    assert one.headline.split(",")[0] == two.headline.split(",")[0]
    assert calibrated > 0 and len(machine.probed) == calibrated  # the second race read the card: no probe
    if first == 1.0:  # calibrated quiet: every size fits, busy or not
        every = list(config.sizes)
        assert timed_sizes(two) == {"cpu float32 1 thread": every, "cpu float32 2 threads": every}
        assert two.skipped == ()
    else:  # calibrated busy: n = 2048 left out in both, saying so, on the board too
        assert {s.n for s in two.skipped} == {2048} and all(s.reason == "time" for s in two.skipped)
        assert "left out before timing" in two.skipped[0].message and "raise the budget" in two.skipped[0].message
        assert two.headline.startswith("n 64–1024 (skipped 2048: time budget)")
    assert any("rate card" in note and "same sizes" in note for note in two.notes)


def test_the_card_is_kept_per_machine_and_read_again(tmp_path, monkeypatch):
    path = tmp_path / "card.json"
    probed = []

    def probe(s, n):
        probed.append(n)
        return n**3 / 1e9

    card = rates_for([CPU1], probe, lambda s, n: True, path)
    assert probed == [128, 256, 512] and card.calibrated == (CPU1,)  # 512: 0.13 s, past CALIBRATION_TARGET_S
    again = rates_for([CPU1], lambda s, n: pytest.fail("calibrated again"), lambda s, n: True, path)
    assert again.rates == card.rates and again.calibrated == () and "the calibration of" in again.note()
    stored = json.loads(path.read_text())
    assert list(stored["machines"]) == [rate_card.machine_key()]
    monkeypatch.setattr(rate_card, "machine_key", lambda: "another machine")  # its own card, the first kept
    assert read_card(path) == {}
    rates_for([CPU1], probe, lambda s, n: True, path)
    assert len(json.loads(path.read_text())["machines"]) == 2
    path.write_text("{not json")  # a damaged card is measured again, not trusted
    assert rates_for([CPU1], probe, lambda s, n: True, path).calibrated == (CPU1,)


def test_calibration_climbs_past_a_stall_to_where_time_grows_as_n_cubed():
    """A 2-thread product on a busy 2-core machine: every product waits ~40 ms for a descheduled thread, so
    n = 128 'takes' 40 ms, which is no rate; the ladder climbs until doubling n costs 4x or more."""
    rates = calibrate(CPU2, lambda s, n: 0.04 + n**3 / 1e11, lambda s, n: True, busy=True)
    assert [n for n, _ in rates.ladder] == [128, 256, 512, 1024, 2048, 4096]  # 4096: 0.73 s, 5.8x 2048
    assert rates.busy and rates.seconds(8192)[1] == 4096
    card = rate_card.Card({CPU2: rates})
    assert "calibrated while other programs kept the machine busy (cpu float32 2 threads)" in card.note()
    assert len(calibrate(CPU2, lambda s, n: 2.0, lambda s, n: True).ladder) == 1  # one product of 2 s is enough
    stall_at = {512: 0.03}  # a stall on the rung that would end the ladder: 150x the size below is no n^3
    stalled = calibrate(CPU2, lambda s, n: stall_at.get(n, n**3 / 1e11), lambda s, n: True)
    assert [n for n, _ in stalled.ladder] == [128, 256, 512, 1024, 2048]  # 2048: 86 ms, 8x 1024's 10.7 ms


def test_calibration_stops_where_memory_ends_and_refuses_a_device_with_none():
    rates = calibrate(CPU1, lambda s, n: 1e-6, lambda s, n: n <= 1024)
    assert [n for n, _ in rates.ladder] == [128, 256, 512, 1024]
    assert calibrate(CPU1, lambda s, n: 1e-6 if n < 512 else None, lambda s, n: True).ladder[-1][0] == 256
    with pytest.raises(Exception, match="not even n=128 fits"):
        calibrate(CPU1, lambda s, n: None, lambda s, n: True)


def test_the_time_cap_is_the_budget_against_the_card():
    rates = {CPU1: Rates(((128, 1e-3), (256, 6e-3), (512, 0.05)), "2026-12-02T10:00:00Z")}
    plan = decide([CPU1], (64, 256, 512, 1024, 2048), MatmulOptions(budget_s=1.0), rates)
    assert plan.sizes[CPU1] == (64, 256, 512, 1024)  # 1024: 2 x 0.4 s (512's 0.05 s x 8) fits 1 s
    skip = plan.refusal(CPU1, 2048)
    assert skip is not None and skip.reason == "time" and "about 3.2 s per product" in skip.message
    assert "t ~ n^3 from n=512 as calibrated on 2026-12-02" in skip.message and "1 s budget" in skip.message
    assert plan.next_size(CPU1, 512) == 1024 and plan.next_size(CPU1, 1024) is None
    tight = decide([CPU1], (64, 256, 512), MatmulOptions(budget_s=0.01), rates)
    assert tight.sizes[CPU1] == (64, 256)  # up to FREE_N a size needs no budget check
    assert FREE_N == 256 and tight.refusal(CPU1, 512).reason == "time"


def test_the_memory_cap_is_a_share_of_all_the_memory_whatever_is_free_now(monkeypatch):
    rates = {CPU1: Rates(((128, 1e-9),), "2026-12-02T10:00:00Z")}
    total = 2 * GIB
    need = guards.options_need(torch.device("cpu"), "float32", 8192, MatmulOptions())
    assert need.device_bytes > MEMORY_SHARE * total  # 8192 needs about 1.2 GiB of 2
    plans = []
    for free in (GIB // 8, 3 * GIB):  # what other programs hold changes; the plan does not
        monkeypatch.setattr(guards, "free_device_bytes", lambda device, free=free: free)
        plans.append(decide([CPU1], (1024, 4096, 8192), MatmulOptions(), rates, total=lambda device: total))
    assert plans[0] == plans[1] and plans[0].sizes[CPU1] == (1024, 4096)
    skip = plans[0].refusal(CPU1, 8192)
    assert skip.reason == "memory" and "more than half of the 2 GiB it has in all" in skip.message


def test_runaway_stops_a_series_far_slower_than_its_card_and_only_then():
    card = Rates(((128, 1e-4), (256, 8e-4), (512, 6.4e-3)), "2026-12-02T10:00:00Z")
    assert runaway(point(CPU1, 512, 6.4e-3), 1024, 1.0, card) is None  # as the card says
    assert runaway(point(CPU1, 512, 3 * 6.4e-3), 2048, 1.0, card) is None  # 3x slower: 2 x 1.23 s, under 4 s
    why = runaway(point(CPU1, 512, 20 * 6.4e-3), 2048, 1.0, card)  # 20x slower: 2048 would take 8.2 s
    assert why is not None and "not tried" in why and "20 times what this machine's rate card says" in why
    assert runaway(point(CPU1, 64, 1.0), 2048, 1.0, card) is None  # below the card's first size: not compared
    stalled = Rates(((128, 3e-5), (256, 2e-4), (512, 0.02)), "2026-12-02T10:00:00Z")  # 512 waited for a thread
    assert runaway(point(CPU2, 256, 0.016), 512, 0.5, stalled) is None  # 16 ms of stall is added time: 512 ~ 0.13 s
    far = runaway(point(CPU1, 64, 1.0, first_s=RUNAWAY + 1), None, 1.0, card)  # the size itself blew the budget
    assert far is not None and "warm-up of n=64 alone took 5 s" in far
    assert runaway(point(CPU1, 64, 1e-4, first_s=RUNAWAY + 1), None, 1.0, card) is None  # a one-off cold start


def test_a_series_far_slower_than_its_card_ends_and_says_so(monkeypatch):
    machine = Machine(monkeypatch)
    config = SweepConfig(sizes=(256, 512, 1024, 2048), threads=(1,), options=MatmulOptions(budget_s=1.0))
    run_sweep(config)  # calibrates the card
    machine.slowdown = 100.0  # then something takes the machine over: 512 at 0.54 s, so 1024 would take 4.3 s
    result = run_sweep(config)
    assert [p.n for p in result.results] == [256, 512]
    assert [(s.n, s.reason) for s in result.skipped] == [(1024, "time"), (2048, "time")]
    assert all("not tried" in s.message and "the series stopped there" in s.message for s in result.skipped)
    assert result.headline.startswith("n 256–512 (skipped 1024, 2048: time budget)")


def test_the_headline_names_sizes_skipped_for_some_series():
    skip = SkippedSize(device="cpu", n=2048, dtype="float32", series=CPU1.label, reason="time", message="m")
    sweep_ = MatmulSweep(results=(point(CPU1, 64, 1e-5), point(CPU2, 64, 1e-5), point(CPU2, 2048, 0.2)),
                         skipped=(skip,), settings={"series": [CPU1.label, CPU2.label]})
    assert sweep_.headline.startswith("n 64–2048 (skipped 2048 for 1 of 2 series: time budget), ")
    assert MatmulSweep(results=(point(CPU1, 64, 1e-5),)).skipped_words == ""


def test_forget_drops_this_machines_entries_so_the_next_race_calibrates_again(tmp_path, monkeypatch):
    """A card calibrated on a busy machine is never replaced by itself (the runs would stop lining up); the
    CLI's --recalibrate forgets this machine's entries, and only this machine's."""
    path = tmp_path / "card.json"
    assert rate_card.forget(path) == 0  # no card yet
    rates_for([CPU1, CPU2], lambda s, n: n**3 / 1e9, lambda s, n: True, path, busy=True)
    monkeypatch.setattr(rate_card, "machine_key", lambda: "another machine")
    rates_for([CPU1], lambda s, n: n**3 / 1e9, lambda s, n: True, path)
    monkeypatch.undo()
    busy = rates_for([CPU1], lambda s, n: pytest.fail("calibrated again"), lambda s, n: True, path)
    assert busy.rates[CPU1].busy and "--recalibrate" in busy.note() and str(path) not in busy.note()
    assert rate_card.forget(path) == 2
    again = rates_for([CPU1], lambda s, n: n**3 / 1e9, lambda s, n: True, path)
    assert again.calibrated == (CPU1,) and not again.rates[CPU1].busy
    assert len(json.loads(path.read_text())["machines"]) == 2  # the other machine's entry kept


def test_the_cli_recalibrates_before_its_race(monkeypatch):
    from core.cli import main

    forgotten = []
    monkeypatch.setattr(rate_card, "forget", lambda path=None: forgotten.append(path) or 0)
    assert main(["matmul", "--sizes", "32,64", "--threads", "1", "--budget", "0.05", "--quiet",
                       "--recalibrate"]) == 0
    assert forgotten == [None]


def test_a_card_a_race_proves_too_slow_is_taken_down_and_one_within_noise_is_kept(tmp_path):
    """Hostile pass: a first calibration while a student's session kept this server process busy (not counted as
    other programs') measured n = 256 at 43 ms instead of 0.24 ms, and every later race left
    out its large sizes. A race that times a calibrated size 2x or more faster than the card corrects it."""
    path = tmp_path / "card.json"
    poisoned = Rates(((128, 0.0099), (256, 0.0434)), "2026-12-02T11:00:00Z")
    honest = Rates(((128, 4e-5), (256, 2.4e-4)), "2026-12-02T11:00:00Z")
    assert rate_card.corrected(honest, {256: 1.8e-4, 128: 3e-5}) is None  # within noise: the same sizes again
    fixed = rate_card.corrected(poisoned, {256: 2.5e-4, 64: 1e-6})
    assert fixed is not None and fixed.ladder == ((128, 0.0099), (256, 2.5e-4))
    assert fixed.seconds(2048)[0] < 0.2  # n = 2048 planned again: 0.13 s, not 22 s
    assert rate_card.correct({CPU2: poisoned, CPU1: honest}, {CPU2: {256: 2.5e-4}, CPU1: {256: 2e-4}}, path) == (CPU2,)
    assert read_card(path)[rate_card.series_key(CPU2)].ladder == fixed.ladder and CPU1 not in read_card(path)


def test_a_busy_first_calibration_leaves_out_sizes_once_then_the_quiet_races_time_them(monkeypatch):
    """The page's default race calibrated while the machine is 30 times slower: n = 1024 and 2048 are left out of
    that race; the next (quiet) race still plans from the card, then corrects it, and the one after times them."""
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    machine = Machine(monkeypatch)
    config = SweepConfig(threads=default_race_threads(False))
    machine.slowdown = 30.0
    busy = run_sweep(config)
    assert {s.n for s in busy.skipped} >= {2048}
    machine.slowdown = 1.0
    second = run_sweep(config)
    assert {s.n for s in second.skipped} == {s.n for s in busy.skipped}  # planned from the same card
    third = run_sweep(config)
    assert third.skipped == () and timed_sizes(third)["cpu float32 2 threads"] == list(config.sizes)
