"""A stalled lock holder (suspended with SIGSTOP) loses its turn after its cap plus the grace period."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.platform import device_lock
from core.platform.device_lock import JobLost, current_holder, hold_devices

ROOT = Path(__file__).resolve().parents[1]
CAP_S, GRACE_S = 2.0, 1.0
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
            assert CAP_S <= waited <= CAP_S + GRACE_S + 2.0, waited  # not before the cap, soon after cap + grace
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


def test_a_live_holder_within_cap_and_grace_keeps_its_turn(monkeypatch):
    monkeypatch.setenv(device_lock.GRACE_ENV, "0")
    with hold_devices(["cpu"], max_job_s=60) as job:
        holder = current_holder("cpu")
        assert holder is not None and not holder.expired and not job.lost


def test_a_job_whose_holder_file_was_taken_over_raises_job_lost(monkeypatch):
    with hold_devices(["cpu"], max_job_s=60) as job:
        path = device_lock._holder_path("cpu")
        path.write_text(path.read_text().replace(dict(job.tokens)["cpu"], "someone-else"))
        assert job.lost and job.timed_out
        with pytest.raises(JobLost, match="next job took its turn"):
            job.check()
    assert path.exists(), "a job that lost its turn does not remove the new holder's file"


def test_a_bad_grace_setting_is_one_clear_error(monkeypatch):
    monkeypatch.setenv(device_lock.GRACE_ENV, "soon")
    with pytest.raises(device_lock.DashboardError, match="GPU_VS_CPU_LOCK_GRACE_S"):
        device_lock.grace_s_from_env()
