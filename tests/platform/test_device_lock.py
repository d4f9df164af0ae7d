import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException, StopException

from core.platform import device_lock
from core.platform.device_lock import (
    Job,
    JobCancelled,
    JobTimedOut,
    WaitStatus,
    current_holder,
    hold_devices,
    max_job_s_from_env,
)
from core.errors import DashboardError
from core.platform.paths import lock_dir
from tests.lock_helpers import tickets, wait_until

ROOT = Path(__file__).resolve().parents[2]


def _is_free(device: str) -> bool:
    """True when a job could take `device` at once (a held lock raises JobCancelled on the first poll)."""
    try:
        with hold_devices([device], should_cancel=lambda: True):
            return True
    except JobCancelled:
        return False


@contextmanager
def _held_elsewhere(*devices: str):
    """Another job (a thread of its own) holds `devices` for the block."""
    held, release = threading.Event(), threading.Event()

    def hold():
        with hold_devices(devices):
            held.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    assert held.wait(10)
    try:
        yield
    finally:
        release.set()
        t.join(10)


def test_two_jobs_on_one_device_never_overlap():
    spans: list[tuple[float, float]] = []
    waited: list[int] = []

    def job():
        with hold_devices(["cpu"], on_wait=lambda device, ahead: waited.append(ahead)):
            start = time.perf_counter()
            time.sleep(0.2)
            spans.append((start, time.perf_counter()))

    threads = [threading.Thread(target=job) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    spans.sort()
    assert len(spans) == 2, "both jobs finish"
    assert spans[0][1] <= spans[1][0], f"timed regions overlap: {spans}"
    assert waited and min(waited) >= 1, "the second job saw it was waiting"
    assert _is_free("cpu") and not tickets("cpu")


def test_jobs_on_two_devices_run_together():
    inside = threading.Barrier(2, timeout=5)

    def job(device):
        with hold_devices([device]):
            inside.wait()  # both must be inside at once, or the barrier times out

    threads = [threading.Thread(target=job, args=(d,)) for d in ("cpu", "cuda:0")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not inside.broken


def test_waiters_are_served_first_come_first_served():
    order: list[int] = []
    holding, release = threading.Event(), threading.Event()

    def holder():
        with hold_devices(["cpu"]):
            holding.set()
            release.wait(10)

    def waiter(i):
        with hold_devices(["cpu"]):
            order.append(i)

    first = threading.Thread(target=holder)
    first.start()
    assert holding.wait(10)
    waiters = []
    for i in range(4):  # each joins the line once the previous one's ticket is in it
        t = threading.Thread(target=waiter, args=(i,))
        t.start()
        waiters.append(t)
        wait_until(lambda: len(tickets("cpu")) == i + 1)
    release.set()
    for t in [first, *waiters]:
        t.join(10)
    assert order == [0, 1, 2, 3]


def test_wait_status_counts_jobs_ahead_and_names_the_holder():
    seen: list[str] = []
    release = threading.Event()
    holding = threading.Event()

    def holder():
        with hold_devices(["cuda:0"], label="matmul sweep", max_job_s=300):
            holding.set()
            release.wait(10)

    def second_in_line():
        with hold_devices(["cuda:0"]):
            time.sleep(0.4)

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    assert holding.wait(10)
    threads.append(threading.Thread(target=second_in_line))
    threads[1].start()
    wait_until(lambda: len(tickets("cuda:0")) == 1)  # the second job is in line

    pageline: list[str] = []

    def on_change(s: WaitStatus) -> None:
        seen.append(s.message)
        pageline.append(s.line(pid=False))
        release.set()  # the holder lets go once this job has said it waits behind two

    status = WaitStatus(on_change=on_change)
    with hold_devices(["cuda:0"], on_wait=status.on_wait, should_cancel=status.should_cancel) as job:
        assert isinstance(job, Job) and job.devices == ("cuda:0",)
        assert job.waited_s >= 0.4, "it waited at least for the second job's 0.4 s"
    for t in threads:
        t.join(10)
    assert seen[0].startswith("waiting for cuda:0: 2 ahead")
    assert f"now running: matmul sweep (pid {os.getpid()})" in seen[0] and "of at most 300 s" in seen[0]
    assert "now running: matmul sweep, " in pageline[0] and "pid" not in pageline[0]  # a page's line (issue 34)
    assert any(m.startswith("waiting for cuda:0: 1 ahead") for m in seen), "the line moves up"
    assert status.device == "cuda:0" and status.waited_s > 0


def test_cancelled_waiter_leaves_the_lock_free():
    with _held_elsewhere("cuda:0"):
        with pytest.raises(JobCancelled):
            with hold_devices(["cuda:0"], should_cancel=lambda: True):
                pass
    assert not tickets("cuda:0"), "the cancelled waiter's ticket is gone"
    done = threading.Event()

    def later():
        with hold_devices(["cuda:0"]):
            done.set()

    t = threading.Thread(target=later)
    t.start()
    t.join(5)
    assert done.is_set()


def test_wait_status_cancel_from_another_thread():
    status = WaitStatus()
    with _held_elsewhere("cpu"):
        threading.Timer(0.3, status.cancel).start()
        start = time.monotonic()
        with pytest.raises(JobCancelled, match="cancelled while waiting for cpu"):
            with hold_devices(["cpu"], on_wait=status.on_wait, should_cancel=status.should_cancel):
                pass
        assert time.monotonic() - start < 3
    assert _is_free("cpu") and not tickets("cpu")


def test_released_after_an_exception():
    with pytest.raises(ValueError):
        with hold_devices(["cpu"]):
            raise ValueError("job failed")
    assert _is_free("cpu")
    assert current_holder("cpu") is None


@pytest.mark.parametrize("control", [StopException, RerunException])
def test_released_when_streamlit_stops_or_reruns_the_holder(control):
    exc = control() if control is StopException else control(None)
    with pytest.raises(control):
        with hold_devices(["cpu", "cuda:0"]):
            raise exc
    assert _is_free("cpu") and _is_free("cuda:0")


def test_released_when_streamlit_stops_a_waiting_script():
    """A Stop, rerun or closed tab raises into the page's on_wait redraw; the ticket must go too."""

    def redraw(device, ahead):
        raise StopException()

    with _held_elsewhere("cpu"):
        with pytest.raises(StopException):
            with hold_devices(["cuda:0", "cpu"], on_wait=redraw):
                pass
        assert not tickets("cpu")
    assert _is_free("cpu") and _is_free("cuda:0"), "cuda:0, taken before waiting for cpu, is released"


def test_job_past_its_cap_times_out_at_the_next_check():
    with hold_devices(["cpu"], max_job_s=0.2, label="sweep") as job:
        job.check()
        assert not job.timed_out and 0 < job.remaining_s <= 0.2
        time.sleep(0.25)
        assert job.timed_out
        with pytest.raises(JobTimedOut, match="more than 0.2 s"):
            job.check()
    assert _is_free("cpu")


def test_cap_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(device_lock.MAX_JOB_ENV, raising=False)
    assert max_job_s_from_env() == device_lock.DEFAULT_MAX_JOB_S
    monkeypatch.setenv(device_lock.MAX_JOB_ENV, "45")
    with hold_devices(["cpu"]) as job:
        assert job.max_job_s == 45
    for bad in ("soon", "0", "-3", "nan", "inf", "1e308", "86401"):
        monkeypatch.setenv(device_lock.MAX_JOB_ENV, bad)
        with pytest.raises(DashboardError, match=device_lock.MAX_JOB_ENV) as refused:
            max_job_s_from_env()
        assert "\n" not in str(refused.value) and len(str(refused.value)) < 200, "one short line, no 309 digits"
    monkeypatch.setenv(device_lock.MAX_JOB_ENV, "86400")
    assert max_job_s_from_env() == 86400
    for bad_cap in (0, 1e308, float("nan")):
        with pytest.raises(DashboardError, match="above 0 and at most 86400"):
            with hold_devices(["cpu"], max_job_s=bad_cap):
                pass


def test_stale_and_dead_tickets_do_not_block_the_line(monkeypatch):
    queue = lock_dir() / "cpu.queue"
    queue.mkdir(parents=True, exist_ok=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_ticket = queue / f"{1:020d}-{int(dead.stdout)}-dead"
    dead_ticket.touch()
    stale_ticket = queue / f"{2:020d}-{os.getpid()}-stale"
    stale_ticket.touch()
    old = time.time() - 2 * device_lock.STALE_TICKET_S
    os.utime(stale_ticket, (old, old))
    assert _is_free("cpu")
    assert not dead_ticket.exists(), "a dead process's ticket is swept away"


HOLDER = textwrap.dedent(
    """
    import sys, time
    from core.platform.device_lock import hold_devices
    with hold_devices(["cpu"], label="cli job", max_job_s=120):
        print("held", flush=True)
        time.sleep(float(sys.argv[1]))
        print(f"releasing {time.time()!r}", flush=True)
    time.sleep(0.5)
    """
)


def _start_holder(seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(seconds)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.mark.slow  # a second Python process that imports the project
def test_a_job_in_another_process_blocks_then_releases():
    proc = _start_holder(1.0)
    try:
        holder = current_holder("cpu")
        assert holder is not None and holder.pid == proc.pid and holder.label == "cli job"
        waits: list[int] = []
        with hold_devices(["cpu"], on_wait=lambda d, ahead: waits.append(ahead)):
            acquired = time.time()
        released = float(proc.stdout.readline().split()[1])
        assert waits and waits[0] == 1
        assert acquired >= released, "this job started before the other process let go"
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.slow  # a second Python process that imports the project
def test_a_killed_holder_process_frees_the_lock():
    """The kernel drops a dead process's flock: no waiting for a timeout, no manual cleanup."""
    proc = _start_holder(60)
    try:
        assert not _is_free("cpu")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        start = time.monotonic()
        with hold_devices(["cpu"]):
            took = time.monotonic() - start
        assert took < 2, f"waited {took:.1f} s for a dead holder"
        assert current_holder("cpu") is None, "a dead holder's file is not reported"
    finally:
        proc.kill()
        proc.wait(10)


def test_a_nested_hold_of_a_held_device_is_refused_at_once_not_a_deadlock():
    """Only core's job layer locks, once per job: a second hold in the same thread is a bug, said at once."""
    with hold_devices(["cpu"]):
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="already holds cpu"):
            with hold_devices(["cpu", "cuda:0"]):
                pass
        assert time.monotonic() - start < 1
        assert _is_free_from_another_thread("cuda:0"), "nothing was taken by the refused hold"
        assert not _is_free_from_another_thread("cpu"), "the outer job still holds cpu"
    assert _is_free_from_another_thread("cpu")


def _is_free_from_another_thread(device: str) -> bool:
    result: list[bool] = []
    t = threading.Thread(target=lambda: result.append(_is_free(device)))
    t.start()
    t.join(10)
    return result[0]




def test_a_gpu_is_locked_by_what_it_is_not_by_its_index(monkeypatch, fake_cuda):
    """Under CUDA_VISIBLE_DEVICES=1 one process's cuda:0 is another's cuda:1: both must share one line,
    and two different GPUs both called cuda:0 must not (issue 24, item 7)."""
    from types import SimpleNamespace

    from core.platform import device_lock

    def seen_as(*uuids):  # what torch reports for cuda:0, cuda:1, ... in one process
        return lambda index: SimpleNamespace(**{**vars(fake_cuda.props), "uuid": uuids[index]})

    monkeypatch.setattr(torch.cuda, "get_device_properties", seen_as("aaaa-0", "bbbb-1"))  # all GPUs visible
    second_gpu, first_gpu = device_lock._holder_path("cuda:1"), device_lock._holder_path("cuda:0")
    monkeypatch.setattr(torch.cuda, "get_device_properties", seen_as("bbbb-1"))  # CUDA_VISIBLE_DEVICES=1
    assert device_lock._holder_path("cuda:0") == second_gpu != first_gpu
    assert device_lock.physical_name("cuda:0") == "cuda-GPU-bbbb-1" and device_lock.physical_name("cpu") == "cpu"
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: fake_cuda.props)  # no uuid given
    assert device_lock.physical_name("cuda:0") == "cuda:0"


def test_a_gpu_held_under_one_index_blocks_the_same_gpu_under_another(monkeypatch, fake_cuda):
    from types import SimpleNamespace

    uuids = {0: "aaaa-0", 1: "bbbb-1"}
    remap = threading.local()  # this thread's CUDA_VISIBLE_DEVICES: its index -> the machine's

    def properties(index):
        machine_index = getattr(remap, "table", {0: 0, 1: 1})[index]
        return SimpleNamespace(**{**vars(fake_cuda.props), "uuid": uuids[machine_index]})

    monkeypatch.setattr(torch.cuda, "get_device_properties", properties)
    waits: list[tuple[str, int]] = []
    with hold_devices(["cuda:1"], max_job_s=30):
        outcome: list[str] = []

        def other_process() -> None:
            remap.table = {0: 1}  # it sees only the machine's second GPU, as its cuda:0
            try:
                with hold_devices(["cuda:0"], on_wait=lambda d, ahead: waits.append((d, ahead)),
                                  should_cancel=lambda: len(waits) >= 3, max_job_s=30):
                    outcome.append("got the GPU another job holds")
            except JobCancelled:
                outcome.append("waited, then gave up")

        thread = threading.Thread(target=other_process)
        thread.start()
        thread.join(timeout=20)
    assert outcome == ["waited, then gave up"] and waits[0] == ("cuda:0", 1), "it waited behind the same GPU's holder"
