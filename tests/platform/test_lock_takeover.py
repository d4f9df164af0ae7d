"""A stalled lock holder (suspended with SIGSTOP) loses its turn once its heartbeat has stood still for the
grace period, whatever its cap; a live one keeps it whatever the wall clock does; a removed lock folder comes back."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.platform import device_lock
from core.platform.device_lock import JobCancelled, JobLost, current_holder, hold_devices
from core.platform.paths import lock_dir
from tests.lock_helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]
CAP_S, GRACE_S = 3600.0, 1.0  # a holder's long cap does not keep a suspended holder's turn
HOLDER = f"""
import sys
from core.platform.device_lock import JobLost, hold_devices
with hold_devices(["cpu"], max_job_s={CAP_S}, label="a job that will be suspended") as job:
    print("held", flush=True)
    sys.stdin.readline()  # its next step starts only when the test says so: no race with the cap on a busy machine
    try:
        job.check()
    except JobLost:
        print("lost", flush=True)
        sys.exit(3)
    print("not lost", flush=True)
"""

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="SIGSTOP is POSIX-only")


@pytest.mark.slow
def test_a_suspended_holder_loses_its_turn_and_stops_when_it_wakes(monkeypatch):
    monkeypatch.setenv(device_lock.GRACE_ENV, str(GRACE_S))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=env)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        claimed_at = time.monotonic()
        os.kill(child.pid, signal.SIGSTOP)
        with hold_devices(["cpu"], max_job_s=30, label="the next job") as job:
            waited = time.monotonic() - claimed_at
            assert GRACE_S <= waited <= GRACE_S + 4.0, waited  # the grace after the heartbeat stopped, not the cap
            os.kill(child.pid, signal.SIGCONT)
            assert child.stdin is not None
            child.stdin.write("go on\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "lost"  # the woken holder notices and stops
            assert child.wait(10) == 3
            holder = current_holder("cpu")
            assert holder is not None and holder.pid == os.getpid()  # its exit left our turn alone
            assert not job.lost
            job.check()
        assert current_holder("cpu") is None
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
            child.wait()


@pytest.mark.slow  # waits out real grace periods (seconds)
def test_a_live_holder_within_cap_and_grace_keeps_its_turn(monkeypatch):
    monkeypatch.setenv(device_lock.GRACE_ENV, "1")
    with hold_devices(["cpu"], max_job_s=60) as job:
        for _ in range(6):  # three grace periods: the heartbeat keeps it
            holder = current_holder("cpu")
            assert holder is not None and not holder.expired and not job.lost
            time.sleep(0.5)
        assert holder.running_s >= 1.0 and holder.max_job_s == 60


@pytest.mark.slow  # waits out real grace periods (seconds)
@pytest.mark.parametrize("jump_s", [3600.0, -3600.0])
def test_a_wall_clock_jump_neither_frees_a_live_holder_nor_extends_a_dead_one(monkeypatch, jump_s):
    monkeypatch.setenv(device_lock.GRACE_ENV, "1")
    real_time = time.time
    release, held = threading.Event(), threading.Event()

    def live_holder() -> None:
        with hold_devices(["cpu"], max_job_s=60, label="a live job"):
            held.set()
            release.wait(20)

    thread = threading.Thread(target=live_holder)
    thread.start()
    assert held.wait(10)
    monkeypatch.setattr(time, "time", lambda: real_time() + jump_s)  # the clock jumps while it runs
    try:
        deadline = time.monotonic() + 2.5  # more than twice the grace period
        with pytest.raises(JobCancelled):
            with hold_devices(["cpu"], should_cancel=lambda: time.monotonic() > deadline):
                pass
        holder = current_holder("cpu")
        assert holder is not None and holder.label == "a live job" and 0 <= holder.running_s < 60
    finally:
        release.set()
        thread.join()

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # alive, never beats
    try:
        started = time.time() + jump_s  # a dead holder's start as the jumped clock writes it
        lock_dir().joinpath("cpu.holder.json").write_text(json.dumps(
            {"pid": sleeper.pid, "label": "suspended", "started_at": started, "max_job_s": 3600, "token": "t",
             "beat": 7, "running_s": 5.0}))
        begun = time.monotonic()
        with hold_devices(["cpu"], max_job_s=30, label="the next job"):
            assert 1.0 <= time.monotonic() - begun < 6, "taken after the grace period, whatever the clock says"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_lock_folder_removed_mid_run_is_written_again(monkeypatch):
    with hold_devices(["cpu"], max_job_s=60) as job:
        shutil.rmtree(lock_dir())
        token = dict(job.tokens)["cpu"]
        wait_until(lambda: device_lock._holder_token("cpu") == token, timeout_s=5)
        job.check()  # nothing false: the job still holds its turn
        holder = current_holder("cpu")
        assert holder is not None and holder.pid == os.getpid()
    assert current_holder("cpu") is None


def test_a_job_whose_holder_file_was_taken_over_raises_job_lost(monkeypatch):
    with hold_devices(["cpu"], max_job_s=60) as job:
        path = device_lock._holder_path("cpu")
        path.write_text(path.read_text().replace(dict(job.tokens)["cpu"], "someone-else"))
        assert job.lost and job.timed_out
        with pytest.raises(JobLost, match="another job took this job's device while this one was still renewing"):
            job.check()
    assert path.exists(), "a job that lost its turn does not remove the new holder's file"


def test_a_bad_grace_setting_is_one_clear_error(monkeypatch):
    monkeypatch.setenv(device_lock.GRACE_ENV, "soon")
    with pytest.raises(device_lock.DashboardError, match="GPU_VS_CPU_LOCK_GRACE_S"):
        device_lock.grace_s_from_env()
