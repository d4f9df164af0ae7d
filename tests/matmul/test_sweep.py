"""The sweep: config, series plan, size plan, skips, stop, lock, the DataFrame and the JSON."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time

import pytest
import torch

from core.matmul import choices, guards, out_of_memory, report, sweep
from core.matmul import engine as matmul
from core.platform.device_lock import JobCancelled, hold_devices
from core.platform.jobs import JobHooks, WaitCancelled
from core.errors import DashboardError
from core.matmul.engine import measured_point
from core.matmul.choices import log_sizes, tf32_settings
from core.matmul.config import MatmulOptions, SweepConfig
from core.matmul.crossover import comparisons
from core.matmul.guards import DoesNotFit, check_sizes_fit
from core.matmul.series import Series
from core.matmul.plan import plan_series
from core.matmul.report import results_frame
from core.matmul.sweep import run_sweep
from core.results.kinds import read_result
from core.results.crossover import sentence
from core.results.matmul import MatmulPoint
from core.platform.timing import Measurement
from core.platform.units import GIB

CPU1 = Series("cpu", "float32", threads=1)
ISSUE_KEYS = {"device", "n", "dtype", "median_s", "iqr_s", "samples", "gflops", "unsynced_s", "rel_error"}


def fake_result(series: Series, n: int, seconds: float) -> MatmulPoint:
    m = Measurement((seconds, seconds * 1.1, seconds * 0.9), 1, seconds * 5)
    unsynced = Measurement((seconds / 1000,), 1, 0.0, synchronized=False) if series.is_gpu else None
    return measured_point(series, n, m, unsynced, None, None, 1e-7, series.threads, series.tf32)


def per_series(time_one):
    """A fake of paired.time_interleaved from a fake of one series' timing: (series, n, options) -> point."""
    return lambda series, n, options: [time_one(s, n, options) for s in series]


def fake_probe(monkeypatch, seconds):
    """The rate card's calibration probe from a model of the engine: (series, n) -> seconds per product."""
    probed: list[tuple[str, int]] = []

    def probe(series, n, seed=0, repeats=1):
        probed.append((series.label, n))
        return seconds(series, n)

    monkeypatch.setattr(sweep, "probe_seconds", probe)
    return probed


@pytest.fixture
def fake_timer(monkeypatch):
    """Replace the engine: CPU takes n^3 ns, a GPU 20 us + n^3/50 ns; records the order of calls."""
    calls: list[tuple[str, int]] = []

    def time_matmul(series, n, options):
        calls.append((series.label, n))
        seconds = 20e-6 + n**3 / 50e9 if series.is_gpu else n**3 / 1e9
        return fake_result(series, n, seconds)

    monkeypatch.setattr(sweep, "time_interleaved", per_series(time_matmul))
    monkeypatch.setattr(sweep, "probe_seconds", lambda s, n, seed=0, repeats=1: pytest.fail("probed a size"))
    return calls


# ---------------------------------------------------------------- config and plan


@pytest.mark.parametrize("kwargs, message", [
    ({"sizes": ()}, "at least one matrix size"),
    ({"sizes": (0, 64)}, "at least 1, got 0"),
    ({"sizes": (-5,)}, "at least 1, got -5"),
    ({"sizes": (64.5,)}, "whole numbers"),
    ({"sizes": (True,)}, "whole numbers"),
    ({"dtypes": ("int8",)}, "unknown dtype 'int8'"),
    ({"threads": (0,)}, "at least 1"),
    ({"options": MatmulOptions(budget_s=0)}, "between 0 and 600"),
    ({"devices": ()}, "at least one device"),
    ({"tf32": ()}, "TF32"),
])
def test_bad_configs_are_refused(kwargs, message):
    with pytest.raises(DashboardError, match=message):
        SweepConfig(**kwargs)


def test_sizes_are_sorted_and_deduplicated():
    assert SweepConfig(sizes=(512, 64, 512, 128)).sizes == (64, 128, 512)


def test_log_sizes():
    assert log_sizes(16, 128) == (16, 32, 64, 128)
    assert log_sizes(64, 256, per_doubling=2) == (64, 91, 128, 181, 256)
    assert log_sizes(100, 100) == (100,)
    with pytest.raises(DashboardError):
        log_sizes(0, 10)
    assert choices.size_options(100) == [16, 32, 64]


def test_plan_on_cpu_resolves_the_default_thread_count():
    plan = plan_series(SweepConfig(threads=(None, 1), dtypes=("float32", "bfloat16")))
    labels = [s.label for s in plan.series]
    n = torch.get_num_threads()
    assert labels[0] == f"cpu float32 {n} thread{'s' if n > 1 else ''}" and "cpu bfloat16 1 thread" in labels
    assert plan.devices == ["cpu"]


def test_plan_refuses_more_threads_than_cores():
    with pytest.raises(DashboardError, match="logical cores"):
        plan_series(SweepConfig(threads=((os.cpu_count() or 1) + 1,)))


def test_plan_refuses_absent_devices(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(DashboardError, match="not available"):
        plan_series(SweepConfig(devices=("cpu", "cuda")))
    with pytest.raises(DashboardError, match="unknown device 'tpu'"):
        plan_series(SweepConfig(devices=("tpu",)))


def test_plan_with_a_gpu_has_tf32_series_for_float32_only(fake_cuda):
    plan = plan_series(SweepConfig(devices=("cpu", "cuda"), dtypes=("float32", "bfloat16"), tf32=(False, True),
                                   threads=(1,)))
    labels = [s.label for s in plan.series]
    assert labels == ["cpu float32 1 thread", "cpu bfloat16 1 thread", "cuda:0 float32 TF32 off",
                      "cuda:0 float32 TF32 on", "cuda:0 bfloat16"]
    assert plan.devices == ["cpu", "cuda:0"]


def test_comparisons_pair_each_gpu_with_the_fastest_cpu_of_its_dtype():
    cpu1, cpu2 = Series("cpu", "float32", threads=1), Series("cpu", "float32", threads=2)
    g32, g16 = Series("cuda:0", "float32", tf32=False), Series("cuda:0", "bfloat16")
    assert comparisons([cpu1, cpu2, g32, g16]) == [(g32.label, cpu2.label), (g16.label, cpu2.label)]
    assert comparisons([cpu1, cpu2]) == [(cpu2.label, cpu1.label)]


def test_check_sizes_fit_refuses_a_size_too_big_for_memory():
    with pytest.raises(DoesNotFit, match="n=1000000 float32 on cpu needs"):
        check_sizes_fit(plan_series(SweepConfig(sizes=(64, 1_000_000))))


# ---------------------------------------------------------------- running sweeps


def test_sweep_order_events_frame_and_json(fake_timer, fake_cuda):
    events = []
    config = SweepConfig(sizes=(64, 128, 256), devices=("cpu", "cuda"), threads=(1,),
                         options=MatmulOptions(budget_s=5.0))
    result = run_sweep(config, JobHooks(on_progress=lambda p: events.append(p.item)))
    assert fake_timer == [("cpu float32 1 thread", 64), ("cuda:0 float32 TF32 off", 64),
                          ("cpu float32 1 thread", 128), ("cuda:0 float32 TF32 off", 128),
                          ("cpu float32 1 thread", 256), ("cuda:0 float32 TF32 off", 256)]
    assert [e.kind for e in events] == ["timing", "timing", "result", "result"] * 3  # a size's series together
    assert [e.done for e in events if e.kind == "result"] == [1, 2, 3, 4, 5, 6]
    assert events[-1].total == 6 and "GFLOP/s" in events[-1].message

    frame = results_frame(result.results)
    assert list(frame.columns) == report.RESULT_COLUMNS and len(frame) == 6
    assert set(frame["series"]) == {"cpu float32 1 thread", "cuda:0 float32 TF32 off"}
    assert frame["unsynced_s"].isna().tolist() == [True, False] * 3

    obj = json.loads(json.dumps(result.to_json()))
    assert {"results", "crossovers", "machine"} <= set(obj) and "crossover_n" not in obj
    assert obj["kind"] == "matmul" and obj["schema_version"] == 3
    for row in obj["results"]:
        assert ISSUE_KEYS <= set(row)
    # CPU n^3 ns vs GPU 20 us + n^3/50 ns: the GPU wins from n ~ 28; below the first size here
    assert obj["crossovers"][0] == {"challenger": "cuda:0 float32 TF32 off", "baseline": "cpu float32 1 thread",
                                    "time": "median_s", "call": "found", "n_low": None, "n_high": 64, "n": 64}
    assert result.headline_crossover.gpu_vs_cpu
    assert obj["settings"]["budget_s"] == 5.0 and obj["settings"]["tf32"] == [False]
    assert obj["settings"]["series"] == ["cpu float32 1 thread", "cuda:0 float32 TF32 off"]
    assert obj["machine"]["gpus"][0]["name"] == "Fake GPU 80GB"
    assert len(obj["crossovers"]) == 1 and obj["stopped"] is False and obj["wall_s"] >= 0  # no copies timed


def test_crossover_is_interpolated_inside_the_range(monkeypatch, fake_cuda):
    def time_matmul(series, n, options):  # GPU 1 ms flat, CPU n^3 ns: equal at n = 100
        return fake_result(series, n, 1e-3 if series.is_gpu else n**3 / 1e9)

    monkeypatch.setattr(sweep, "time_interleaved", per_series(time_matmul))
    result = run_sweep(SweepConfig(sizes=(16, 32, 64, 128, 256), devices=("cpu", "cuda"), threads=(1,),
                                   options=MatmulOptions(budget_s=5)))
    headline = result.headline_crossover  # what the race page, Results and the Class board show
    assert headline is not None and headline.call == "found" and headline.n == 100 and headline.gpu_vs_cpu
    assert (headline.n_low, headline.n_high) == (64, 128) and result.to_json()["crossovers"][0]["n"] == 100


def test_without_a_gpu_there_is_no_crossover_n_but_thread_comparisons(fake_timer):
    result = run_sweep(SweepConfig(sizes=(64, 128), threads=(1, 2) if (os.cpu_count() or 1) > 1 else (1,)))
    headline = result.headline_crossover
    assert headline is None or not headline.gpu_vs_cpu
    assert all(not c.gpu_vs_cpu for c in result.crossovers)


def test_the_size_plan_skips_with_a_message_and_the_sweep_goes_on(monkeypatch):
    def seconds(series, n):
        return 2 * n**3 / 1e9 if series.dtype == "float16" else n**3 / 1e11

    monkeypatch.setattr(sweep, "time_interleaved", per_series(lambda s, n, options: fake_result(s, n, seconds(s, n))))
    fake_probe(monkeypatch, seconds)
    events = []
    result = run_sweep(SweepConfig(sizes=(64, 128, 256, 512, 1024, 2048), dtypes=("float32", "float16"),
                                   threads=(1,), options=MatmulOptions(budget_s=1.0)),
                       JobHooks(on_progress=events.append))
    timed = {(r.dtype, r.n) for r in result.results}
    assert ("float32", 2048) in timed and ("float16", 512) in timed
    skipped = {(s.dtype, s.n): s for s in result.skipped}
    assert set(skipped) == {("float16", 1024), ("float16", 2048)}
    assert skipped[("float16", 1024)].reason == "time" and "budget" in skipped[("float16", 1024)].message
    assert "left out before timing" in skipped[("float16", 1024)].message
    items = [p.item for p in events if p.item is not None]
    assert any(e.kind == "skipped" and e.message.startswith("skipped n=1,024 on cpu float16") for e in items)
    said = [p.message for p in events if p.item is None]  # the two series' calibration, said before any size
    assert said == [f"calibrating cpu {d} 1 thread for this machine's rate card (once per machine)"
                    for d in ("float32", "float16")] and events[0].item is None and events[1].item is None
    assert result.to_json()["skipped"][0]["reason"] == "time"


def test_memory_refusal_skips_the_size_and_the_sweep_goes_on(monkeypatch):
    monkeypatch.setattr(guards, "free_device_bytes", lambda device: GIB // 2)  # 64 MiB workspace + small operands fit
    fake_probe(monkeypatch, lambda s, n: n**3 / 1e15)  # a card fast enough that the budget keeps n = 8192
    result = run_sweep(SweepConfig(sizes=(32, 8192, 64), threads=(1,), options=MatmulOptions(budget_s=0.05)))
    assert [r.n for r in result.results] == [32, 64]
    (skip,) = result.skipped
    assert skip.n == 8192 and skip.reason == "memory" and "needs" in skip.message and "512 MiB is free" in skip.message


def test_the_memory_check_counts_every_series_a_size_holds_at_once(monkeypatch, gpu_model):
    """Issue 33: the series of a size are prepared together (each dtype, each GPU TF32 setting its own operands),
    but the guard counted one: a size where each fits alone ran out of memory together, or was killed (RAM)."""
    from core.matmul.round_memory import round_refusals

    n = 1024
    cpu = torch.device("cpu")
    f32, f64 = (guards.memory_need(cpu, d, n) for d in ("float32", "float64"))
    free = f64.device_bytes + f32.inputs_bytes  # each fits alone; both sets of matrices do not
    monkeypatch.setattr(guards, "free_device_bytes", lambda device: free)
    series = [Series("cpu", "float64", threads=1), Series("cpu", "float32", threads=1),
              Series("cpu", "float32", threads=2)]
    refused = round_refusals(series, n, SweepConfig().options)
    assert list(refused) == series[1:] and "needs" in refused[series[1]] and "each fits alone" in refused[series[1]]
    assert round_refusals(series[1:], n, SweepConfig().options) == {}  # one dtype: one set, shared

    timed: list[list[Series]] = []

    def rounds(ready, size, options):
        timed.append(list(ready))
        return [measured_point(s, size, Measurement((1e-3,) * 3, 1, 1e-3), None, None, None, None, s.threads, None)
                for s in ready]
    monkeypatch.setattr(sweep, "time_interleaved", rounds)
    fake_probe(monkeypatch, lambda s, size: 1e-9)  # the budget keeps every size
    result = run_sweep(SweepConfig(sizes=(n,), dtypes=("float64", "float32"), threads=(1,),
                                   options=MatmulOptions(budget_s=0.05)))
    assert [[s.dtype for s in r] for r in timed] == [["float64"]]
    (skip,) = result.skipped
    assert skip.reason == "memory" and skip.dtype == "float32" and "at once" in skip.message

    a100 = gpu_model("A100-40GB")  # on a GPU, TF32 off and on are two sets of operands
    gpu = [Series("cuda:0", "float32", tf32=False), Series("cuda:0", "float32", tf32=True)]
    one = guards.memory_need(torch.device("cuda:0"), "float32", 16384)
    monkeypatch.setattr(guards, "free_device_bytes", lambda device: one.device_bytes + one.inputs_bytes)
    assert list(round_refusals(gpu, 16384, SweepConfig().options)) == [gpu[1]] and a100.contexts == set()


def test_out_of_memory_is_recovered_and_the_sweep_goes_on(monkeypatch):
    real = matmul.make_operands
    released = []

    def make_operands(device, dtype, n, **kwargs):
        if n == 64:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 48.00 KiB")
        return real(device, dtype, n, **kwargs)

    monkeypatch.setattr(matmul, "make_operands", make_operands)
    monkeypatch.setattr(out_of_memory, "release_device_memory", released.append)
    result = run_sweep(SweepConfig(sizes=(32, 64, 128), threads=(1,), options=MatmulOptions(budget_s=0.2)))
    assert [r.n for r in result.results] == [32, 128]
    (skip,) = result.skipped
    assert skip.reason == "out_of_memory" and "memory was released" in skip.message
    assert released == [torch.device("cpu")]


def test_stop_keeps_what_was_measured(fake_timer):
    events = []
    hooks = JobHooks(on_progress=lambda p: events.append(p.item),
                     should_stop=lambda: len([e for e in events if e.kind == "result"]) >= 2)
    result = run_sweep(SweepConfig(sizes=(16, 32, 64, 128), threads=(1,)), hooks)
    assert result.stopped and [r.n for r in result.results] == [16, 32]
    assert result.stop_reason == "stopped by the user"


def test_the_device_is_held_while_the_sweep_runs(fake_timer):
    held = []

    def try_cpu():  # another job: same-thread holds pass through, so ask from another thread
        try:
            with hold_devices(["cpu"], should_cancel=lambda: True):
                held.append(False)
        except JobCancelled:
            held.append(True)

    def on_progress(progress):
        if progress.item.kind == "timing":
            other = threading.Thread(target=try_cpu)
            other.start()
            other.join(10)

    run_sweep(SweepConfig(sizes=(16, 32), threads=(1,)), JobHooks(on_progress=on_progress))
    assert held == [True, True]
    with hold_devices(["cpu"], should_cancel=lambda: True):  # released afterwards
        pass


def test_a_real_tiny_sweep_on_the_cpu():
    result = run_sweep(SweepConfig(sizes=(16, 32), threads=(1,), options=MatmulOptions(budget_s=0.05)))
    frame = results_frame(result.results)
    assert frame["n"].tolist() == [16, 32] and (frame["median_s"] > 0).all() and (frame["samples"] >= 1).all()
    assert result.timed_s <= result.wall_s
    obj = json.loads(json.dumps(result.to_json()))
    assert obj["results"][0]["threads"] == 1 and obj["results"][0]["unsynced_s"] is None
    assert obj["machine"]["cpu"]["logical_cores"] == os.cpu_count()


def test_the_per_job_time_cap_stops_the_sweep_without_a_stop_callback(fake_timer, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_MAX_JOB_S", "1e-9")  # every job is over its cap at once
    result = run_sweep(SweepConfig(sizes=(16, 32), threads=(1,)))
    assert result.stopped and result.results == ()
    assert "the limit per job" in result.stop_reason


def test_the_cap_from_the_hooks_stops_a_sweep_after_what_it_measured(monkeypatch):
    def slow(series, n, options):
        time.sleep(0.15)
        return fake_result(series, n, 1e-3)

    monkeypatch.setattr(sweep, "time_interleaved", per_series(slow))
    result = run_sweep(SweepConfig(sizes=(16, 32, 64, 128, 256), threads=(1,)), JobHooks(max_job_s=0.2))
    assert result.stopped and 1 <= len(result.results) < 5 and "more than 0.2 s" in result.stop_reason
    assert result.to_json()["stopped"] is True


def test_progress_items_are_sweep_events_with_the_step_counts(fake_timer):
    seen = []
    run_sweep(SweepConfig(sizes=(16, 32), threads=(1,)), JobHooks(on_progress=seen.append))
    assert [(p.done, p.total) for p in seen] == [(0, 2), (1, 2), (1, 2), (2, 2)]
    assert all(p.message == p.item.message for p in seen) and seen[-1].fraction == 1.0


def test_leaving_the_line_before_the_sweep_runs_times_nothing(fake_timer):
    with hold_devices(["cpu"]):  # another job holds the CPU (a thread of its own: same-thread holds nest)
        ran = []
        thread = threading.Thread(target=lambda: ran.append(_wait_then_leave()))
        thread.start()
        thread.join(10)
    assert ran == ["left"] and fake_timer == []


def _wait_then_leave() -> str:
    try:
        run_sweep(SweepConfig(sizes=(16,), threads=(1,)), JobHooks(should_stop=lambda: True))
    except WaitCancelled:
        return "left"
    return "ran"


def test_tf32_choices_are_one_mapping_for_the_page_and_the_cli():
    assert [tf32_settings(c) for c in ("off", "on", "both")] == [(False,), (True,), (False, True)]
    with pytest.raises(DashboardError, match="TF32 must be one of off, on, both"):
        tf32_settings("maybe")


def test_a_gpu_only_sweep_needs_no_cpu_thread_count(fake_timer, fake_cuda):
    result = run_sweep(SweepConfig(sizes=(64,), devices=("cuda",), threads=()))
    assert [r.device for r in result.results] == ["cuda:0"]
    with pytest.raises(DashboardError, match="at least one CPU thread count"):
        SweepConfig(sizes=(64,), devices=("cpu",), threads=())


# ---------------------------------------------------------------- verdicts, the default race


def test_each_size_gets_a_verdict_and_the_crossover_an_interval(monkeypatch, fake_cuda):
    def time_matmul(series, n, options):  # GPU 1 ms flat, CPU n^3 ns: equal at n = 100
        return fake_result(series, n, 1e-3 if series.is_gpu else n**3 / 1e9)

    monkeypatch.setattr(sweep, "time_interleaved", per_series(time_matmul))
    obj = run_sweep(SweepConfig(sizes=(32, 64, 128, 256), devices=("cpu", "cuda"), threads=(1,))).to_json()
    assert [(v["n"], v["a"], v["call"]) for v in obj["verdicts"]] == [
        (32, "cpu float32 1 thread", "faster"), (64, "cpu float32 1 thread", "faster"),
        (128, "cuda:0 float32 TF32 off", "faster"), (256, "cuda:0 float32 TF32 off", "faster")]
    assert obj["crossovers"] == [{"challenger": "cuda:0 float32 TF32 off", "baseline": "cpu float32 1 thread",
                                  "time": "median_s", "call": "found", "n_low": 64, "n_high": 128, "n": 100}]
    assert "crossover" not in obj and "text" not in obj["crossovers"][0]  # sentences are made when shown
    sweep_read = read_result("matmul", obj)
    assert "between n = 64 and n = 128" in sweep_read.crossover_lines[0]


def test_a_busy_machine_gives_cannot_tell_instead_of_a_crossover(monkeypatch, fake_cuda):
    def busy(series, n, options):
        point = fake_result(series, n, 1e-3 if series.is_gpu else n**3 / 1e9)
        return dataclasses.replace(point, others_cores=1.6)  # 1.6 cores of 2: more than the one the pair left idle

    monkeypatch.setattr(sweep, "time_interleaved", per_series(busy))
    result = run_sweep(SweepConfig(sizes=(32, 64, 128, 256), devices=("cpu", "cuda"), threads=(1,)))
    assert {v.call for v in result.verdicts} == {"unclear"} and all(v.busy for v in result.verdicts)
    (c,) = result.crossovers
    assert c.call == "unclear" and c.n is None
    assert sentence(c, result.verdicts).startswith("cannot tell on a machine this busy")
    assert "cannot tell" in result.headline


def test_two_cpu_series_are_judged_without_a_gpu(fake_timer):
    result = run_sweep(SweepConfig(sizes=(64, 128), threads=(1, 2)))
    # the fake ignores threads: equal medians, +-10 % over 3 samples each is too wide to call "same"
    assert {(v.n, v.call) for v in result.verdicts} == {(64, "unclear"), (128, "unclear")}
    assert not any(v.busy for v in result.verdicts) and "overlap" in result.verdicts[0].why
    assert result.headline_crossover.call == "unclear" and result.headline_crossover.n is None
    assert "cannot tell" in result.headline


def test_the_default_race_always_has_two_different_series(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert choices.default_race_threads(gpu_here=False) == (1, 2)
    assert choices.default_race_threads(gpu_here=True) == (None,)  # CPU (free cores) against the GPU
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert choices.default_race_threads(gpu_here=False) == (None,)


def test_free_cores_equal_to_a_chosen_count_is_said_not_raced(monkeypatch):
    from core.results.load import MachineLoad
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    busy = MachineLoad(cores=2, others_cores=1.0, free_cores=1, busy=True)
    plan = plan_series(SweepConfig(threads=(1, None)), busy)
    assert [s.label for s in plan.series] == ["cpu float32 1 thread"]
    assert any("same as the 1 thread series" in n and "not a race against itself" in n for n in plan.notes)
    assert any(n.startswith("Only one series") for n in plan.notes)


def test_the_plan_is_made_once_and_the_load_only_fills_in_free_cores(monkeypatch, fake_timer):
    """The page's collector and the CLI plan once and pass the Plan on: run_sweep plans nothing again, and
    the load probed once the devices are held fills in "free cores" without asking any device again."""
    from core.results.load import MachineLoad
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    plan = plan_series(SweepConfig(sizes=(16, 32), threads=(1, None)))
    monkeypatch.setattr(sweep, "plan_series", lambda *a, **k: pytest.fail("planned again"))
    monkeypatch.setattr("core.matmul.plan.resolve_device", lambda name: pytest.fail("asked a device again"))
    busy = MachineLoad(cores=2, others_cores=0.0, free_cores=2, busy=False)
    under = plan.under(busy)
    assert [s.label for s in under.series] == ["cpu float32 1 thread", "cpu float32 2 threads"]
    assert under.config is plan.config and under.asked == plan.asked
    assert under.notes[0].startswith("Free cores: other programs left 2 of 2 cores idle")
    result = run_sweep(plan)
    assert {r.n for r in result.results} == {16, 32}


def test_the_settings_keep_their_flat_form():
    """One config with its timing options inside, saved as the flat object every older sweep has."""
    settings = SweepConfig(sizes=(64,), options=MatmulOptions(budget_s=2.0, cache="cold")).to_dict()
    assert list(settings) == ["sizes", "devices", "dtypes", "threads", "tf32", "budget_s", "unsynced", "end_to_end",
                              "check_error", "seed", "cache"]
    assert settings["sizes"] == [64] and settings["budget_s"] == 2.0 and settings["cache"] == "cold"
