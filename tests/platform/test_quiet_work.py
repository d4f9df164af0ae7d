"""Quiet work (issue 31): untimed heavy work in a child process, stopped while timed jobs run (or, work that
writes, lowered to the lowest priority once one comes)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from core.errors import DashboardError
from core.platform.jobs import JobHooks, run_job
from core.platform.quiet_work import run_quietly, timed_job_now
from tests.lock_helpers import hold_cpu_for, wait_until

pytestmark = pytest.mark.slow  # each test spawns a Python process (about a second here)


def priority() -> tuple[int, int, int]:
    return os.getpid(), os.sched_getscheduler(0), os.nice(0)


def fails(kind: str) -> None:
    if kind == "dashboard":
        raise DashboardError("the file is not an export; choose another")
    raise ValueError("a bug")


def spins(seconds: float) -> float:
    """Busy for `seconds` of this process's CPU time; returns the wall time it took."""
    start, cpu = time.monotonic(), time.process_time()
    while time.process_time() - cpu < seconds:
        pass
    return time.monotonic() - start


def test_the_work_runs_in_another_process_at_normal_priority_while_nothing_is_timed():
    """A busy server's other programs would starve a child at idle priority (a feature build of the real reviews
    did not finish in 120 s beside four busy loops on two cores): it is lowered only when a timed job comes."""
    pid, policy, nice = run_quietly(priority, what="a check")
    assert pid != os.getpid()
    assert (policy, nice) == (os.sched_getscheduler(0), os.nice(0))


def priority_after(marker: str, go: str) -> tuple[int, int, int]:
    """Mark the start, wait for `go`, then say this process's priority."""
    Path(marker).touch()
    while not Path(go).exists():
        time.sleep(0.01)
    return priority()


def _priority_seen_after_a_hold(tmp_path, *, pause: bool) -> tuple[int, int, int]:
    """The child's priority once a timed job (another thread's hold of the CPU) came and went while it ran."""
    marker, go = tmp_path / "started", tmp_path / "go"
    out: dict = {}
    worker = threading.Thread(target=lambda: out.update(
        seen=run_quietly(priority_after, str(marker), str(go), what="the import", pause=pause)))
    worker.start()
    wait_until(marker.exists, 60)
    hold_cpu_for(0.5).join(10)
    go.touch()
    worker.join(60)
    return out["seen"]


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_writing_work_is_lowered_to_idle_priority_when_a_timed_job_comes(tmp_path):
    _, policy, nice = _priority_seen_after_a_hold(tmp_path, pause=False)
    assert (policy, nice) == (os.SCHED_IDLE, 19)


def test_paused_work_goes_on_at_normal_priority_after_the_job(tmp_path):
    _, policy, nice = _priority_seen_after_a_hold(tmp_path, pause=True)
    assert (policy, nice) == (os.sched_getscheduler(0), os.nice(0))


@pytest.mark.parametrize("kind, message", [("dashboard", "the file is not an export; choose another"),
                                           ("bug", "the export failed: ValueError: a bug")])
def test_a_failure_is_a_dashboard_error(kind, message):
    with pytest.raises(DashboardError) as raised:
        run_quietly(fails, kind, what="the export")
    assert str(raised.value) == message


def test_work_past_its_timeout_is_stopped():
    with pytest.raises(DashboardError, match="took longer than 0 s"):
        run_quietly(spins, 30.0, what="the export", timeout_s=0.3)


def spin_samples(marker: str, cpu_s: float) -> list[tuple[float, float]]:
    """Mark the start, then spin for `cpu_s` of CPU, noting (wall clock, CPU time) every few ms. The first note
    comes before the mark: a child stopped right after the mark still has one from before the hold."""
    samples = [(time.time(), time.process_time())]
    Path(marker).touch()
    while samples[-1][1] - samples[0][1] < cpu_s:
        for _ in range(10_000):
            pass
        samples.append((time.time(), time.process_time()))
    return samples


def _cpu_while_held(tmp_path, hold) -> float:
    """CPU seconds the quiet child used while `hold(seconds)` held the CPU (its first 0.2 s left out: the
    supervisor's look at the lock folder), the child at normal priority so that only the pause holds it back."""
    marker = tmp_path / "started"
    out: dict = {}
    worker = threading.Thread(target=lambda: out.update(
        samples=run_quietly(spin_samples, str(marker), 1.5, what="spin", idle=False)))
    worker.start()
    wait_until(marker.exists, 60)
    holder = hold(2.0)
    held_from = time.time()
    holder.join(10)
    held_to = time.time()
    worker.join(60)
    samples = out["samples"]
    assert samples[-1][0] > held_to - 0.1, "the child finished before the hold ended: the test tells nothing"

    def cpu_at(moment: float) -> float:
        return [cpu for wall, cpu in samples if wall <= moment][-1]

    return cpu_at(held_to - 0.1) - cpu_at(held_from + 0.2)


def _job_of_this_process(seconds: float) -> threading.Thread:
    started = threading.Event()

    def job() -> None:
        with run_job(["cpu"], JobHooks(), label="a race"):
            started.set()
            time.sleep(seconds)

    thread = threading.Thread(target=job)
    thread.start()
    assert started.wait(10)
    return thread


def test_the_child_is_stopped_while_another_process_or_thread_holds_a_device(tmp_path):
    assert _cpu_while_held(tmp_path, hold_cpu_for) < 0.05  # seen through the device lock's folder


def test_a_job_of_this_process_stops_the_child_at_once(tmp_path):
    assert _cpu_while_held(tmp_path, _job_of_this_process) < 0.05


def test_writing_work_waits_for_a_quiet_moment_before_it_starts():
    holder = hold_cpu_for(1.5)
    assert timed_job_now()
    start = time.monotonic()
    run_quietly(priority, what="the import", pause=False)
    assert time.monotonic() - start > 1.0
    holder.join(10)
    wait_until(lambda: not timed_job_now())


def test_a_large_export_and_import_of_the_board_run_as_quiet_work(monkeypatch, tmp_path):
    from core.store import board
    from core.store.database import open_store
    from tests.result_samples import LAPTOP, matmul_payload, save_payload

    url = f"sqlite:///{tmp_path / 'board.sqlite3'}"
    store = open_store(url)
    ids = [save_payload(store, "matmul", matmul_payload(LAPTOP), {"sizes": "256"}) for _ in range(3)]
    quiet: list[str] = []
    real = board.run_quietly

    def counted(fn, *args, what, **kwargs):
        quiet.append(what)
        return real(fn, *args, what=what, **kwargs)

    monkeypatch.setattr(board, "run_quietly", counted)
    monkeypatch.setattr(board, "QUIET_EXPORT_RUNS", 2)
    monkeypatch.setattr(board, "QUIET_IMPORT_CPU_S", 0.0)
    exported = board.exports(url, ids)[0].data()
    assert exported == store.export_json(ids), "the same file, built in the child"

    class Upload:
        name = "class.json"

        def getvalue(self) -> bytes:
            return exported

    other = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    notice = board.import_upload(other, Upload())
    assert notice.level == "success" and "imported 3 run(s)" in notice.text
    assert len(open_store(other).list_runs()) == 3
    assert quiet == ["the JSON export", "the import of class.json"]
    assert board.exports(url, ids[:1])[1].data() == store.export_csv(ids[:1]) and len(quiet) == 2, "small: in-process"


def test_an_import_of_many_small_runs_is_heavy_though_small_in_bytes():
    """1,000 one-point runs fill 0.42 MB and cost the server 0.32 s of CPU to check and insert (bench/quiet_load.py):
    the estimate counts runs, not only bytes; a file of a few runs stays in the server."""
    import json

    from core.store.board import QUIET_IMPORT_CPU_S, import_cost_s

    def runs(count: int) -> bytes:  # bench/board_scale.py's minimal runs: one point each
        point = {"device": "cpu", "n": 64, "dtype": "float32", "median_s": 0.001, "iqr_s": 0.0, "samples": 3}
        return json.dumps({"format": "gpu-vs-cpu-export", "runs": [
            {"uid": f"bench-{i}", "kind": "matmul", "created_at": "2025-01-31T14:05:00Z", "label": f"student {i}",
             "machine": {"cpu": {"name": "CPU"}, "gpus": []}, "settings": {}, "versions": {},
             "payload": {"kind": "matmul", "schema_version": 2, "results": [point]}} for i in range(count)]}).encode()

    many, few = runs(1000), runs(5)
    assert len(many) < 500_000 and import_cost_s(many) > QUIET_IMPORT_CPU_S
    assert import_cost_s(few) < QUIET_IMPORT_CPU_S
    assert import_cost_s(b" " * 2_000_000) > QUIET_IMPORT_CPU_S, "a large file, whatever it holds"


def sleeps(seconds: float) -> tuple[float, float]:
    """The child's (start, end) on the machine's monotonic clock, which every process shares on Linux."""
    start = time.monotonic()
    time.sleep(seconds)
    return start, time.monotonic()


def test_at_most_max_children_run_at_once_and_a_stop_ends_a_wait(monkeypatch):
    """Hostile pass: every session's large feature build (sixty settings, or one student's tabs) started a process
    of its own at once, where the device line had built them one at a time. Four at once now run two by two."""
    from core.platform import quiet_work
    from core.platform.device_lock import JobCancelled

    spans: list[tuple[float, float]] = []
    threads = [threading.Thread(target=lambda: spans.append(run_quietly(sleeps, 1.5, what="a nap", idle=False)))
               for _ in range(4)]
    for t in threads:
        t.start()
    wait_until(lambda: not quiet_work._slots.acquire(blocking=False) or quiet_work._slots.release() or False, 30)
    with pytest.raises(JobCancelled, match="waited for other quiet work"):  # both slots taken: a Stop ends the wait
        run_quietly(sleeps, 0.1, what="a fifth", listeners=quiet_work.Listeners(should_stop=lambda: True))
    for t in threads:
        t.join(120)
    assert len(spans) == 4
    most = max(sum(a <= moment < b for a, b in spans) for moment, _ in spans)
    assert most == quiet_work.MAX_CHILDREN == 2
