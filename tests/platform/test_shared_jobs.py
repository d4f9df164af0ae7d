"""Join, don't queue (issue 31): callers asking for the same run at once watch one run, in core.platform.shared_jobs."""

from __future__ import annotations

import threading
import time

import pytest

from core.platform.device_lock import JobCancelled
from core.platform.jobs import JobHooks, Progress, WaitCancelled, run_job
from core.platform.shared_jobs import SharedJobs

STEPS = 5


class Gate:
    """A job of STEPS steps on the CPU that takes its next step only when the test says so."""

    def __init__(self) -> None:
        self.go = threading.Semaphore(0)
        self.runs = 0
        self.stopped = False

    def work(self, hooks: JobHooks) -> str:
        with run_job(["cpu"], hooks, label="gated job") as job:
            self.runs += 1
            for i in range(STEPS):
                while not self.go.acquire(timeout=0.02):
                    if job.stop_requested():
                        self.stopped = True
                        return f"stopped after {i}"
                job.report(Progress(i + 1, STEPS, f"step {i + 1}", item=i))
        return f"done {self.runs}"


def _in_thread(fn, *args, **kwargs) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def target() -> None:
        try:
            out["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, out


def _until(check, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def test_a_second_caller_joins_the_running_run_and_sees_every_step():
    registry, gate = SharedJobs(), Gate()
    first_steps: list[int] = []
    late_steps: list[int] = []
    t1, out1 = _in_thread(registry.run, "race", gate.work, JobHooks(on_progress=lambda p: first_steps.append(p.item)))
    _until(lambda: registry.active() and registry.active()[0].job is not None)
    gate.go.release()
    gate.go.release()
    _until(lambda: len(first_steps) == 2)
    messages: list[str] = []
    t2, out2 = _in_thread(registry.run, "race", gate.work, JobHooks(
        on_progress=lambda p: (late_steps.append(p.item), messages.append(p.message))))
    _until(lambda: len(late_steps) == 2)  # the steps so far, replayed at once
    for _ in range(STEPS - 2):
        gate.go.release()
    t1.join(10)
    t2.join(10)
    assert gate.runs == 1, "one run for both callers"
    assert first_steps == late_steps == list(range(STEPS))
    first, second = out1["value"], out2["value"]
    assert first.result == second.result == "done 1"
    assert first.run_id == second.run_id
    assert (first.joined, second.joined) == (False, True)
    assert first.watchers == second.watchers == 2
    assert all("joined a race already running" in m for m in messages)
    assert not registry.active()


def test_run_my_own_waits_its_turn_and_is_a_run_of_its_own():
    registry, gate = SharedJobs(), Gate()
    t1, out1 = _in_thread(registry.run, "race", gate.work, JobHooks())
    _until(lambda: registry.active() and registry.active()[0].job is not None)
    gate.go.release()
    waits: list[str] = []
    t2, out2 = _in_thread(registry.run, "race", gate.work, JobHooks(on_wait=lambda s: waits.append(s.message)),
                          join=False)
    _until(lambda: len(waits) >= 3)
    assert gate.runs == 1, "the own run waits in line, it has not started"
    assert "1 ahead" in waits[-1]
    assert "about" in waits[-1] and "s to wait" in waits[-1], "the estimate from the running run's progress"
    for _ in range(2 * STEPS):
        gate.go.release()
    t1.join(10)
    t2.join(10)
    assert gate.runs == 2
    assert out1["value"].run_id != out2["value"].run_id
    assert not out2["value"].joined and out2["value"].watchers == 1


def test_a_watcher_who_leaves_stops_only_its_watching():
    registry, gate = SharedJobs(), Gate()
    leave = threading.Event()
    t1, out1 = _in_thread(registry.run, "race", gate.work, JobHooks())
    _until(lambda: registry.active() and registry.active()[0].job is not None)
    t2, out2 = _in_thread(registry.run, "race", gate.work, JobHooks(should_stop=leave.is_set))
    _until(lambda: registry.active()[0].watchers == 2)
    leave.set()
    t2.join(10)
    assert isinstance(out2["error"], JobCancelled) and not isinstance(out2["error"], WaitCancelled)
    for _ in range(STEPS):
        gate.go.release()
    t1.join(10)
    assert out1["value"].result == "done 1" and not gate.stopped
    assert out1["value"].watchers == 1


def test_the_last_watcher_leaving_stops_the_run_and_keeps_what_it_measured():
    registry, gate = SharedJobs(), Gate()
    leave = threading.Event()
    t1, out1 = _in_thread(registry.run, "race", gate.work, JobHooks(should_stop=leave.is_set))
    _until(lambda: registry.active() and registry.active()[0].job is not None)
    gate.go.release()
    _until(lambda: registry.active()[0].events)
    leave.set()
    t1.join(10)
    assert out1["value"].result == "stopped after 1" and gate.stopped
    _until(lambda: not registry.active())
    gate2 = Gate()  # the stopped run takes no joiner: a new caller gets a run of its own
    t3, out3 = _in_thread(registry.run, "race", gate2.work, JobHooks())
    for _ in range(STEPS):
        gate2.go.release()
    t3.join(10)
    assert out3["value"].result == "done 1" and not out3["value"].joined


def test_leaving_the_line_runs_nothing():
    registry, blocker, waiter = SharedJobs(), Gate(), Gate()
    t1, _ = _in_thread(registry.run, "a", blocker.work, JobHooks())
    _until(lambda: registry.active() and registry.active()[0].job is not None)
    leave = threading.Event()
    t2, out2 = _in_thread(registry.run, "b", waiter.work, JobHooks(should_stop=leave.is_set))
    _until(lambda: len(registry.active()) == 2 and registry.active()[1].wait is not None)
    leave.set()
    t2.join(10)
    assert isinstance(out2["error"], WaitCancelled)
    for _ in range(STEPS):
        blocker.go.release()
    t1.join(10)
    _until(lambda: not registry.active())
    assert waiter.runs == 0


def test_an_error_reaches_every_watcher():
    registry = SharedJobs()
    release = threading.Event()

    def failing(hooks: JobHooks) -> None:
        with run_job(["cpu"], hooks, label="failing"):
            release.wait(10)
            raise ValueError("broken")

    t1, out1 = _in_thread(registry.run, "x", failing, JobHooks())
    _until(lambda: registry.active() and registry.active()[0].job is not None)
    t2, out2 = _in_thread(registry.run, "x", failing, JobHooks())
    _until(lambda: registry.active()[0].watchers == 2)
    release.set()
    t1.join(10)
    t2.join(10)
    assert isinstance(out1["error"], ValueError) and out2["error"] is out1["error"]


@pytest.mark.parametrize("own", [False, True])
def test_different_keys_never_join(own):
    registry, a, b = SharedJobs(), Gate(), Gate()
    t1, out1 = _in_thread(registry.run, "a", a.work, JobHooks())
    _until(lambda: registry.active() and registry.active()[0].job is not None)
    t2, out2 = _in_thread(registry.run, "b", b.work, JobHooks(), join=not own)
    for _ in range(STEPS):
        a.go.release()
        b.go.release()
    t1.join(10)
    t2.join(10)
    assert a.runs == b.runs == 1
    assert out1["value"].run_id != out2["value"].run_id


def test_no_estimate_when_the_device_is_held_by_a_job_that_is_not_a_shared_run():
    from tests.lock_helpers import hold_cpu_for

    registry, gate = SharedJobs(), Gate()
    holder = hold_cpu_for(1.0)
    waits: list[str] = []
    thread, out = _in_thread(registry.run, "race", gate.work, JobHooks(on_wait=lambda s: waits.append(s.message)))
    _until(lambda: len(waits) >= 2)
    assert "1 ahead" in waits[-1] and "s to wait" not in waits[-1]
    holder.join(10)
    for _ in range(STEPS):
        gate.go.release()
    thread.join(10)
    assert out["value"].result == "done 1"


def test_a_relayed_wait_keeps_the_running_job_in_the_line_the_page_shows():
    """The page draws `line(pid=False)`: a shared run's relayed line must carry the holder the run saw, not only
    the base line (the race page read 'waiting for cpu: 1 ahead (0 s so far)' and never who was running)."""
    from core.platform.device_lock import WaitStatus
    from core.platform.shared_jobs import _RelayedWait

    class Seen(WaitStatus):
        def line(self, *, pid: bool) -> str:
            return "waiting for cpu: 1 ahead (3 s so far); now running: matmul sweep" + (" (pid 7)" if pid else "")

    seen = Seen()
    seen.device, seen.ahead = "cpu", 1
    relayed = _RelayedWait(seen, "; about 4 s to wait")
    assert relayed.line(pid=False) == ("waiting for cpu: 1 ahead (3 s so far); now running: matmul sweep"
                                       "; about 4 s to wait")
    assert relayed.message.endswith("(pid 7); about 4 s to wait") and relayed.device == "cpu" and relayed.ahead == 1


def test_a_reserved_run_joins_nobody_and_is_joined_before_an_older_run_of_its_key():
    """The instructor's measurement for the class (reserve=True) starts its own run even while a student's
    race with the same key waits, and the next student asking for that key joins it, not the older one."""
    registry, student, instructor = SharedJobs(), Gate(), Gate()
    t1, out1 = _in_thread(registry.run, "race", student.work)
    _until(lambda: registry.active() and registry.active()[0].job is not None)
    t2, out2 = _in_thread(registry.run, "race", instructor.work, reserve=True)
    _until(lambda: len(registry.active()) == 2)
    messages: list[str] = []
    t3, out3 = _in_thread(registry.run, "race", instructor.work, JobHooks(on_progress=lambda p: messages.append(
        p.message)))
    _until(lambda: sum(r.watchers for r in registry.active()) == 3)
    older, reserved = registry.active()
    assert (older.watchers, reserved.watchers, reserved.reserved) == (1, 2, True), "joined the reserved run"
    for _ in range(STEPS):
        student.go.release()
    t1.join(10)
    for _ in range(STEPS):
        instructor.go.release()
    t2.join(10)
    t3.join(10)
    assert (student.runs, instructor.runs) == (1, 1)
    assert out2["value"].run_id == out3["value"].run_id != out1["value"].run_id
    assert (out2["value"].joined, out3["value"].joined) == (False, True) and out3["value"].watchers == 2
    assert messages and all(m.endswith("· joined the instructor's measurement for the class") for m in messages)
