"""The marbles across processes: the row split, one worker's rounds, the launch, a stop, a dead worker."""

from __future__ import annotations

import subprocess
import time

import pytest
import torch
import torch.distributed as dist

from core.errors import DashboardError
from core.parallel import processes
from core.parallel.process_worker import MAX_ROUNDS, block_rows, my_block, rounds_for, run_ladder
from core.parallel.processes import (
    ProcessesConfig,
    ProcessesResult,
    ProcessStep,
    measurement,
    processes_figure,
    run_processes,
    summarize_processes,
)
from core.platform.device_lock import JobCancelled, current_holder
from core.platform.jobs import JobHooks
from core.platform.torchrun import Launched, WorkerEnv

TINY = ProcessesConfig(n=16, max_processes=2, budget_s=0.1)


def _step(k: int, compute_ms: float, round_ms: float, error: float = 0.0) -> ProcessStep:
    return ProcessStep(k, measurement([compute_ms / 1e3] * 3, 0.1), measurement([round_ms / 1e3] * 3, 0.1), error)


RESULT = ProcessesResult(1024, (_step(1, 40, 40), _step(2, 20, 25, 1e-6)), (1, 2), 3.0, 2)


def test_rows_are_split_into_equal_padded_blocks():
    a = torch.arange(10.0).reshape(5, 2)
    assert block_rows(5, 2) == 3 and block_rows(4, 2) == 2 and block_rows(1, 4) == 1
    assert my_block(a, 2, 0).tolist() == [[0, 1], [2, 3], [4, 5]]
    assert my_block(a, 2, 1).tolist() == [[6, 7], [8, 9], [0, 0]]  # padded: all_gather needs equal sizes
    assert torch.equal(torch.cat([my_block(a, 3, r) for r in range(3)])[:5], a)
    assert rounds_for(1.0, 0.3) == 3 and rounds_for(1.0, 5.0) == 1 and rounds_for(1.0, 1e-6) == MAX_ROUNDS


def test_config_bounds_and_ladder():
    assert ProcessesConfig(max_processes=4).ladder == (1, 2, 4) and ProcessesConfig(max_processes=3).ladder == (1, 2, 3)
    for bad in (dict(n=0), dict(n=10**6), dict(max_processes=0), dict(max_processes=99), dict(budget_s=0)):
        with pytest.raises(DashboardError):
            ProcessesConfig(**bad)


def test_one_worker_in_this_process_times_the_whole_product(tmp_path):
    """The worker's loop itself, in a one-process gloo group: the k = 1 baseline and its event."""
    events: list[dict] = []
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        run_ladder(WorkerEnv(0, 1, 0), 8, [1], 0.05, 0, events.append)
    finally:
        dist.destroy_process_group()
    ready, step = events
    assert ready["event"] == "ready" and step["event"] == "step" and step["workers"] == 1
    assert 1 <= len(step["round_s"]) <= MAX_ROUNDS and step["compute_s"] == step["round_s"] and step["max_error"] == 0


def _fake_launch(events: list[dict], code: int | None = 0):
    def launch(command, threads, job, on_event):
        assert command[command.index("--nproc-per-node") + 1] == "2" and threads == 1
        assert current_holder("cpu") is not None, "the CPU is held while the workers run"
        for event in events:
            on_event(event)
        return Launched(code)
    return launch


STEPS = [{"event": "ready"},
         {"event": "step", "workers": 1, "first_round_s": 0.05, "compute_s": [0.04] * 3, "round_s": [0.04] * 3,
          "max_error": 0.0},
         {"event": "step", "workers": 2, "first_round_s": 0.05, "compute_s": [0.02] * 3, "round_s": [0.025] * 3,
          "max_error": 1e-6},
         {"event": "done"}]


def test_events_become_steps_and_progress():
    reports = []
    result = run_processes(TINY, JobHooks(on_progress=reports.append), launch=_fake_launch(STEPS))
    assert [s.workers for s in result.steps] == [1, 2] and result.startup_s is not None
    assert result.speedup(result.steps[1]) == pytest.approx(1.6) and result.steps[1].gather_share == pytest.approx(0.2)
    assert [(r.done, r.total, r.message) for r in reports] == [(1, 2, "1 process"), (2, 2, "2 processes")]
    assert reports[0].item.steps == result.steps[:1]  # a stop after the first keeps it
    assert current_holder("cpu") is None


@pytest.mark.parametrize("events, code, match", [
    (STEPS[:2], 1, "launcher exited with code 1 .a worker died"),
    (STEPS[:2] + [{"event": "error", "message": "--ladder 1,4 needs 1 to 2 workers each"}], 2, "needs 1 to 2"),
    (STEPS[:2], 0, "exited with code 0 .no result"),  # no 'done': something ended it early
])
def test_a_failed_launch_is_one_message(events, code, match):
    with pytest.raises(DashboardError, match=match):
        run_processes(TINY, launch=_fake_launch(events, code))
    assert current_holder("cpu") is None


def test_more_processes_than_twice_the_cores_are_refused_before_launching(monkeypatch):
    monkeypatch.setattr(processes, "usable_cores", lambda: 1)
    run_processes(ProcessesConfig(n=16, max_processes=2, budget_s=0.1),
                  launch=_fake_launch(STEPS))  # 2 on 1 core: shown
    with pytest.raises(DashboardError,
                       match="at most 2 worker processes on this machine .twice its 1 usable cores., not 4"):
        run_processes(ProcessesConfig(n=16, max_processes=4), launch=_fake_launch([]))
    assert current_holder("cpu") is None


def test_a_size_that_does_not_fit_is_refused_before_launching(monkeypatch):
    monkeypatch.setattr("core.parallel.machine.free_device_bytes", lambda device: 2**20)
    with pytest.raises(DashboardError, match=r"n = 1024 on 2 processes needs about .* choose a smaller size"):
        run_processes(ProcessesConfig(), launch=_fake_launch([]))


def test_summary_and_figure_quote_the_measurements():
    text = summarize_processes(RESULT)
    assert "1 process: 40 ms per product." in text
    assert "2 processes: 25 ms per product, 1.6× as fast as one (ideal 2×)" in text and "took 20% of each round" in text
    assert "within 1e-06" in text and "took 3 s, not counted above: more than every round together" in text
    compute, gather, ideal = processes_figure(RESULT).data
    assert list(compute.y) == pytest.approx([40, 20]) and list(gather.y) == pytest.approx([0, 5])
    assert list(ideal.y) == pytest.approx([40, 20]) and list(gather.text) == ["0%", "20%"]
    oversubscribed = ProcessesResult(16, RESULT.steps, (1, 2), None, 1)
    assert "take turns" in summarize_processes(oversubscribed)


def _workers_alive() -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "core.parallel.process_worker" in line and "ps -eo" not in line]


@pytest.mark.slow
def test_real_workers_measure_then_a_stop_ends_every_process():
    """Two real gloo processes under torchrun: both worker counts measured, the same C; then Stop mid-run."""
    result = run_processes(TINY)
    assert [s.workers for s in result.steps] == [1, 2] and all(s.max_error < 1e-4 for s in result.steps)
    assert result.startup_s and result.startup_s > 0 and result.steps[1].round.median_s > 0
    reports = []
    stop = JobHooks(on_progress=reports.append, should_stop=lambda: bool(reports))
    with pytest.raises(JobCancelled):
        run_processes(ProcessesConfig(n=256, max_processes=2, budget_s=5.0), stop)
    assert len(reports) == 1 and reports[0].item.steps[0].workers == 1
    deadline = time.monotonic() + 10
    while _workers_alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _workers_alive(), "no worker outlives the job"
    assert current_holder("cpu") is None
