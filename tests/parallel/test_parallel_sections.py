"""The five 'why parallel' sections' runners: result shapes on the real CPU, GPU branches faked, devices held."""

from __future__ import annotations

import time

import pytest
import torch

from core.platform import clock

from core.parallel import cold_start, machine, registry
from core.parallel.chain import ChainConfig, chain_of_steps, run_chain
from core.parallel.first_call import FirstCallConfig, run_first_call
from core.parallel.location import run_location
from core.parallel.marbles import MarblesConfig, run_marbles
from core.parallel.timing_bug import TimingBugConfig, run_timing_bug
from core.platform.device_lock import JobCancelled, JobTimedOut, current_holder
from core.platform.jobs import JobHooks, Progress, WaitCancelled
from core.errors import DashboardError
from core.platform.timing import Measurement
from tests.lock_helpers import hold_cpu_for

SECTIONS = registry.SECTIONS
TINY = 0.2  # s: section budget for tests on the real clock


def on_cpu(shape, device):
    """A maker that ignores the device, so a faked GPU's branch runs on real CPU tensors."""
    return torch.randn(*shape)


def _locked(device: str) -> bool:
    return current_holder(device) is not None


class Recorder:
    """Collects Progress reports and checks that the section's devices were held at each one."""

    def __init__(self, devices=("cpu",)):
        self.reports: list[Progress] = []
        self.devices = devices

    def __call__(self, progress: Progress) -> None:
        assert all(_locked(d) for d in self.devices), f"{self.devices} not all held during {progress.message}"
        self.reports.append(progress)

    @property
    def hooks(self) -> JobHooks:
        return JobHooks(on_progress=self)


def m(*times: float, first: float | None = None) -> Measurement:
    return Measurement(tuple(times), 1, times[0] if first is None else first)


# helpers -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cores, ladder", [(1, (1,)), (2, (1, 2)), (6, (1, 2, 4, 6)), (8, (1, 2, 4, 8))])
def test_thread_ladder_doubles_up_to_every_core(cores, ladder):
    assert machine.thread_ladder(cores) == ladder


def test_pick_gpu(fake_cuda):
    assert machine.pick_gpu(["cpu"]) is None
    assert machine.pick_gpu(["cuda:0", "cpu"]) == "cuda:0"
    assert machine.pick_gpu() == "cuda:0"  # the faked GPU is present


@pytest.mark.parametrize(
    "make",
    [
        lambda: MarblesConfig(sizes=()),
        lambda: MarblesConfig(sizes=(0, 64)),
        lambda: MarblesConfig(max_threads=0),
        lambda: ChainConfig(steps=0),
        lambda: ChainConfig(budget_s=0),
        lambda: TimingBugConfig(repeats=0),
        lambda: FirstCallConfig(cpu_threads=0),
        lambda: FirstCallConfig(budget_s=-1),
        lambda: ChainConfig(budget_s=float("inf")),
        lambda: machine.thread_ladder(0),
    ],
)
def test_bad_settings_are_refused_with_a_message(make):
    with pytest.raises(DashboardError, match="at least|between"):
        make()


# 1. marbles ---------------------------------------------------------------------------------------


def test_marbles_on_the_cpu():
    rec = Recorder()
    r = run_marbles(MarblesConfig((8, 16), max_threads=2, budget_s=TINY), devices=["cpu"], hooks=rec.hooks)
    assert r.gpu is None and r.threads == (1, 2) and r.sizes == (8, 16)
    assert [(p.size, p.device, p.threads) for p in r.points] == [(8, "cpu", 1), (8, "cpu", 2), (16, "cpu", 1),
                                                                 (16, "cpu", 2)]
    assert all(p.measurement.median_s > 0 for p in r.points)
    assert r.speedup(r.baseline(16)) == 1.0
    assert r.speedup(r.points[1]) == r.points[0].measurement.median_s / r.points[1].measurement.median_s
    assert r.gpu_point(8) is None and r.load is not None and r.load.cores >= 1
    assert [p.done for p in rec.reports] == [1, 2, 3, 4] and rec.reports[-1].fraction == 1.0
    assert [len(p.item.points) for p in rec.reports] == [1, 2, 3, 4]


def test_marbles_with_a_gpu_adds_one_point_per_size(fake_cuda):
    rec = Recorder(("cpu", "cuda:0"))
    r = run_marbles(MarblesConfig((8,), max_threads=1, budget_s=TINY), hooks=rec.hooks, make=on_cpu)
    assert r.gpu == "cuda:0"
    assert [(p.device, p.threads) for p in r.points] == [("cpu", 1), ("cuda:0", None)]
    assert r.gpu_point(8) is r.points[1] and r.speedup(r.points[1]) > 0
    assert "sync" in fake_cuda.events  # the GPU's clock readings waited for it


def test_marbles_restores_the_thread_count():
    before = torch.get_num_threads()
    run_marbles(MarblesConfig((4,), max_threads=2, budget_s=0.1), devices=["cpu"])
    assert torch.get_num_threads() == before


def test_a_cancelled_section_stops_between_steps_and_keeps_what_it_measured():
    rec = Recorder()
    hooks = JobHooks(on_progress=rec, should_stop=lambda: len(rec.reports) >= 1)
    with pytest.raises(JobCancelled):
        run_marbles(MarblesConfig((8, 16), max_threads=1, budget_s=TINY), devices=["cpu"], hooks=hooks)
    assert len(rec.reports) == 1 and len(rec.reports[0].item.points) == 1
    assert not _locked("cpu")  # released on the way out


# 2. chain -----------------------------------------------------------------------------------------


def test_chain_of_steps_feeds_each_step_into_the_next():
    x, w = torch.randn(2, 3), torch.randn(3, 3)
    assert torch.equal(chain_of_steps(x, w, 2), torch.tanh(torch.tanh(x @ w) @ w))


def test_chain_on_the_cpu():
    cfg = ChainConfig(steps=10, rows=2, width=8, budget_s=TINY)
    r = run_chain(cfg, devices=["cpu"], hooks=Recorder().hooks)
    assert [(p.device, p.shape) for p in r.points] == [("cpu", "one op"), ("cpu", "chain")]
    assert r.per_step_s("cpu") == pytest.approx(r.time_s("cpu", "chain") / 10)
    assert r.gpu_speedup("one op") is None
    assert cfg.flops == 2 * 10 * 2 * 8 * 8


def test_chain_with_a_gpu(fake_cuda):
    r = run_chain(ChainConfig(steps=5, rows=2, width=8, budget_s=TINY), make=on_cpu)
    assert [(p.device, p.shape) for p in r.points] == [
        ("cpu", "one op"), ("cpu", "chain"), ("cuda:0", "one op"), ("cuda:0", "chain")]
    assert r.gpu_speedup("chain") == pytest.approx(r.time_s("cpu", "chain") / r.time_s("cuda:0", "chain"))


# 3. timing bug ------------------------------------------------------------------------------------


class SimulatedGpu:
    """A GPU queue on a fake clock: a product costs LAUNCH_S to queue and COST_S to finish."""

    LAUNCH_S, COST_S, CPU_COST_S = 1e-5, 0.02, 0.004

    def __init__(self):
        self.t = 0.0
        self.pending = 0.0

    def read(self) -> float:
        return self.t

    def synchronize(self, device=None) -> None:
        self.t += self.pending
        self.pending = 0.0

    def make(self, shape, device):
        return _Product(self, device.type == "cuda")


class _Product:
    def __init__(self, sim: SimulatedGpu, on_gpu: bool):
        self.sim, self.on_gpu = sim, on_gpu

    def __matmul__(self, other):
        if self.on_gpu:
            self.sim.t += SimulatedGpu.LAUNCH_S
            self.sim.pending += SimulatedGpu.COST_S
        else:
            self.sim.t += SimulatedGpu.CPU_COST_S  # a CPU returns only when done
        return self


def test_timing_bug_shows_the_gap_on_a_gpu_and_none_on_the_cpu(fake_cuda, monkeypatch):
    sim = SimulatedGpu()
    monkeypatch.setattr(clock, "read_clock", sim.read)
    monkeypatch.setattr(torch.cuda, "synchronize", sim.synchronize)
    r = run_timing_bug(TimingBugConfig(repeats=3, budget_s=10), make=sim.make)
    cpu, gpu = r.point("cpu"), r.point("cuda:0")
    assert r.gpu == "cuda:0" and gpu.size == TimingBugConfig.gpu_size
    assert cpu.unsynced.median_s == pytest.approx(SimulatedGpu.CPU_COST_S) and cpu.ratio == pytest.approx(1.0)
    assert gpu.unsynced.median_s == pytest.approx(SimulatedGpu.LAUNCH_S)
    assert gpu.synced.median_s == pytest.approx(SimulatedGpu.LAUNCH_S + SimulatedGpu.COST_S)
    assert gpu.ratio == pytest.approx(2001)
    assert not gpu.unsynced.synchronized and gpu.synced.synchronized
    assert gpu.unsynced.samples == gpu.synced.samples == 3


def test_timing_bug_on_the_cpu_only():
    r = run_timing_bug(TimingBugConfig(cpu_size=16, repeats=2, budget_s=TINY), devices=["cpu"])
    assert r.gpu is None and [p.device for p in r.points] == ["cpu"]
    p = r.point("cpu")
    assert p.unsynced.samples == p.synced.samples == 2 and p.ratio > 0


# 4. first call ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_first_call_runs_a_fresh_process():
    rec = Recorder()
    r = run_first_call(FirstCallConfig((8, 16), budget_s=TINY), devices=["cpu"], hooks=rec.hooks)
    assert [(p.device, p.size) for p in r.points] == [("cpu", 8), ("cpu", 16)]
    for p in r.points:
        assert p.fresh.first_call_s > 0 and p.fresh.median_s > 0 and p.here.first_call_s > 0
        assert p.cold_ratio == p.fresh.first_call_s / p.fresh.median_s
    assert [(p.done, p.message) for p in rec.reports] == [
        (0, "starting a fresh Python process"), (1, "timed in a fresh Python process"), (2, "n = 8 on cpu"),
        (3, "n = 16 on cpu")]


def test_first_call_with_a_gpu_asks_the_fresh_process_for_both_devices(fake_cuda):
    asked = []

    def fresh(sizes, devices, budget_s, threads):
        asked.append((tuple(sizes), tuple(devices), threads))
        return {(d, n): m(1e-3, 1e-3, first=0.5) for d in devices for n in sizes}

    r = run_first_call(FirstCallConfig((8,), budget_s=TINY), make=on_cpu, fresh=fresh)
    assert asked == [((8,), ("cpu", "cuda:0"), 1)]
    assert [(p.device, p.size) for p in r.points] == [("cpu", 8), ("cuda:0", 8)]
    assert r.points[1].cold_ratio == pytest.approx(500)


def test_first_call_says_when_the_fresh_process_missed_a_size():
    with pytest.raises(DashboardError, match="n = 8"):
        run_first_call(FirstCallConfig((8,), budget_s=TINY), devices=["cpu"],
                             fresh=lambda sizes, devices, budget, threads: {})


@pytest.mark.slow
def test_cold_start_failure_is_a_one_line_dashboard_error():
    with pytest.raises(DashboardError, match="fresh Python process failed"):
        cold_start.run_in_fresh_process([4], ["nonsense"], 0.05)


def test_cold_start_rows_parse_back_into_measurements():
    rows = [{"device": "cpu", "size": 8, "times_s": [1e-6, 2e-6], "calls_per_block": 100, "first_call_s": 1e-4}]
    timings = cold_start.parse(rows)
    assert timings[("cpu", 8)] == Measurement((1e-6, 2e-6), 100, 1e-4)
    with pytest.raises(DashboardError):
        cold_start.parse([{"device": "cpu"}])


# 5. location --------------------------------------------------------------------------------------


def test_location_without_a_gpu_makes_nothing_up():
    r = run_location(devices=["cpu"])
    assert r.gpu is None and r.error is None and not r.refused and r.fixed_device is None


def test_location_keeps_torch_s_message_verbatim_and_then_does_it_right(fake_cuda):
    message = "Expected all tensors to be on the same device (as raised by torch)"
    calls = []

    def multiply(a, b):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError(message)
        return a @ b

    r = run_location(make=on_cpu, multiply=multiply)
    assert r.gpu == "cuda:0" and r.refused
    assert r.error == message and r.error_type == "RuntimeError"
    assert r.fixed_device == "cpu"  # the fake GPU's tensor really lives on the CPU


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a real CUDA device")
def test_on_a_real_gpu():
    loc = run_location()
    assert loc.refused and "device" in loc.error and loc.fixed_device == "cuda:0"
    bug = run_timing_bug(TimingBugConfig(cpu_size=256, gpu_size=4096, budget_s=1.0))
    assert bug.point("cuda:0").ratio > 5  # queueing a 4096 product is far quicker than doing it


@pytest.mark.parametrize("run", [
    lambda: run_marbles(MarblesConfig((200_000,), max_threads=1), devices=["cpu"]),
    lambda: run_chain(ChainConfig(steps=10**6, rows=1000, width=1000), devices=["cpu"]),
    lambda: run_timing_bug(TimingBugConfig(cpu_size=200_000), devices=["cpu"]),
    lambda: run_first_call(FirstCallConfig((8, 200_000)), devices=["cpu"]),
])
def test_a_size_too_big_for_memory_is_refused_before_allocating(run):
    with pytest.raises(DashboardError,
                       match=r"needs about .* [GT]iB on cpu but only .* is free; choose a smaller size"):
        run()


def test_a_size_too_big_for_the_gpu_is_refused(fake_cuda):
    fake_cuda.free = 2**30  # 1 GiB free on the fake GPU: n = 16384 needs 3 GiB
    with pytest.raises(DashboardError, match="on cuda:0"):
        run_timing_bug(TimingBugConfig(cpu_size=8, gpu_size=16384, budget_s=TINY), make=on_cpu)


# each section holds its own devices (issue: one job protocol) ---------------------------------------

TINY_VALUES = {"small_n": 8, "large_n": 16, "budget_s": 0.1, "steps": 5, "rows": 2, "width": 8, "bug_cpu_n": 16,
               "bug_gpu_n": 16}


SPAWNING = {"processes", "first_call"}  # these start fresh Python processes that import torch: the slow tier


@pytest.mark.parametrize("key", [pytest.param(s.key, marks=pytest.mark.slow) if s.key in SPAWNING else s.key
                                 for s in SECTIONS])
def test_a_section_holds_its_devices_itself_and_only_while_it_runs(key):
    section = registry.section(key)
    started = []
    rec = Recorder(section.devices())  # every progress report checks these locks are held
    hooks = JobHooks(on_progress=rec, on_start=lambda job: started.append(job.devices))
    assert not _locked("cpu"), "nobody holds the CPU before the section runs"
    result = section.run(section.config(TINY_VALUES), hooks)
    assert section.summarize(result)
    assert not _locked("cpu"), "released on the way out"
    if section.timed:
        assert section.devices() == ("cpu",) and started == [("cpu",)] and rec.reports
    else:
        assert section.devices() == () and started == [] and rec.reports == []


def test_timed_sections_hold_the_cpu_and_the_gpu(fake_cuda):
    assert [s.devices() for s in SECTIONS] == [("cpu", "cuda:0"), ("cpu",)] + [("cpu", "cuda:0")] * 3 + [()]
    assert registry.section("chain").devices(["cpu"]) == ("cpu",)


def test_the_waiting_line_reaches_the_hooks_and_leaving_it_runs_nothing():
    holder = hold_cpu_for(1.0)
    statuses, rec = [], Recorder()
    hooks = JobHooks(on_progress=rec, on_wait=statuses.append, should_stop=lambda: len(statuses) >= 2)
    with pytest.raises(WaitCancelled):
        run_chain(ChainConfig(steps=5, rows=2, width=8, budget_s=TINY), hooks, devices=["cpu"])
    holder.join(10)
    assert rec.reports == [] and statuses[0].message.startswith("waiting for cpu: 1 ahead")


def test_the_untimed_section_does_not_wait_for_a_busy_cpu():
    holder = hold_cpu_for(1.5)
    start = time.perf_counter()
    assert run_location(devices=["cpu"]).gpu is None
    assert time.perf_counter() - start < 1.0
    holder.join(10)


def test_the_job_cap_stops_a_section_between_steps_and_keeps_its_steps(monkeypatch):
    from core.parallel import marbles

    timed = marbles.measure

    def slow_measure(*args, **kwargs):  # each step outlasts the cap, however fast this machine times n = 8
        m = timed(*args, **kwargs)
        time.sleep(0.35)
        return m

    monkeypatch.setattr(marbles, "measure", slow_measure)
    rec = Recorder()
    with pytest.raises(JobTimedOut, match="the limit per job"):
        run_marbles(MarblesConfig((8, 16), max_threads=1, budget_s=2.0), JobHooks(on_progress=rec, max_job_s=0.3),
                    devices=["cpu"])
    assert 1 <= len(rec.reports) < 2 and rec.reports[0].item.points
    assert not _locked("cpu")
