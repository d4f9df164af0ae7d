"""No orphans: a launcher and its workers end when the process that started them dies, SIGKILL included.

Processes are followed by pid (with their start time, so a reused pid is not mistaken for ours), found
as descendants of the process the test started: never by name, since other runs on this machine start
the same commands.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from core.platform import parent_watch
from tests.review_fixtures import toy_reviews, write_rt_folder

ROOT = Path(__file__).resolve().parents[2]
GONE_WITHIN_S = 15.0  # "a few seconds": the launcher's polite SIGTERM, then its workers' own guards


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Those still running (a zombie waiting for init to reap it has ended)."""
    left = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:  # is_running checks the start time too
                left.append(p)
        except psutil.NoSuchProcess:
            pass
    return left


def _wait_gone(procs: list[psutil.Process], within_s: float = GONE_WITHIN_S) -> list[psutil.Process]:
    deadline = time.monotonic() + within_s
    while _alive(procs) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _alive(procs)


def _kill_all(procs: list[psutil.Process]) -> None:
    for p in _alive(procs):
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


def test_guarded_command_runs_the_module_under_the_watch_of_this_process():
    command = parent_watch.guarded_command("torch.distributed.run", ["--standalone", "-m", "x", "--n", "2"])
    assert command[:3] == [sys.executable, "-m", "core.platform.parent_watch"]
    assert command[command.index("--parent") + 1] == str(os.getpid())
    assert command[command.index("--signal") + 1] == "SIGTERM"
    assert command[command.index("--") + 1:] == ["torch.distributed.run", "--standalone", "-m", "x", "--n", "2"]


def test_a_bad_guard_command_is_one_usage_line():
    with pytest.raises(SystemExit, match="usage: python -m core.platform.parent_watch"):
        parent_watch.main(["--parent", "x", "--", "mod"])
    with pytest.raises(SystemExit, match="usage"):
        parent_watch.main(["--parent", "1", "mod"])  # no "--"


def test_orphaned_means_a_different_parent_or_init(monkeypatch):
    monkeypatch.setattr(os, "getppid", lambda: 4242)
    assert not parent_watch._orphaned(4242)
    assert parent_watch._orphaned(4241)
    monkeypatch.setattr(os, "getppid", lambda: 1)
    assert parent_watch._orphaned(1), "handed to init at once: the parent died before the guard"


def test_a_parent_gone_before_the_guard_ends_the_process_at_once(monkeypatch):
    ended: list[int] = []
    monkeypatch.setattr(parent_watch, "set_death_signal", lambda sig: True)
    monkeypatch.setattr(parent_watch, "_end_self", lambda sig, after: ended.append(sig))
    parent_watch.die_with_parent(signal.SIGKILL, parent=os.getppid() + 1)
    assert ended[:1] == [signal.SIGKILL], "before the watchdog's first look"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_the_death_signal_is_set_on_linux():
    code = ("import signal, ctypes, ctypes.util; from core.platform.parent_watch import set_death_signal as s;"
            "assert s(signal.SIGUSR1); libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True);"
            "v = ctypes.c_int(); libc.prctl(2, ctypes.byref(v), 0, 0, 0); print(v.value)")  # 2: PR_GET_PDEATHSIG
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert int(out.stdout) == signal.SIGUSR1


CHILD = ("import sys, time, signal; import core.platform.parent_watch as w;"
         "{patch} w.die_with_parent(signal.SIGKILL); print('ready', flush=True); time.sleep(120)")
PARENT = ("import subprocess, sys; c = subprocess.Popen([sys.executable, '-c', {child!r}], stdout=subprocess.PIPE,"
          " text=True); c.stdout.readline(); print(c.pid, flush=True); import time; time.sleep(120)")


@pytest.mark.slow
@pytest.mark.parametrize("patch", ["", "w.set_death_signal = lambda sig: False;"], ids=["prctl", "watchdog-only"])
def test_a_guarded_child_ends_when_its_parent_is_killed(patch):
    """Both guards on their own: the kernel's death signal, and (where there is no prctl) the watchdog."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT.format(child=CHILD.format(patch=patch))], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    child: list[psutil.Process] = []
    try:
        child.append(psutil.Process(int(parent.stdout.readline())))
        assert _alive(child)
        parent.kill()
        parent.wait()
        assert _wait_gone(child, 5.0) == []
    finally:
        parent.kill()
        _kill_all(child)


DRIVER = """
import sys
from core.platform import torchrun
from core.platform.jobs import run_job
with run_job(["cpu"], None, label="idle workers") as job:
    torchrun.follow(torchrun.launcher_command(2, "tests.idle_worker", []), 1, job, lambda e: print(e, flush=True))
"""


@pytest.mark.slow
def test_a_launching_process_killed_outright_takes_launcher_and_idle_workers_with_it():
    """The case a broken pipe does not end: workers busy without a word (the issue's 64 workers still
    starting up). Without the guards they would sleep on for ten minutes."""
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    below: list[psutil.Process] = []
    try:
        assert "start" in driver.stdout.readline()  # rank 0 is running, so both workers were started
        below = psutil.Process(driver.pid).children(recursive=True)
        assert len(below) >= 3, below  # the launcher and two workers
        driver.kill()
        driver.wait()
        assert _wait_gone(below) == [], [p.cmdline()[:6] for p in _alive(below)]
    finally:
        driver.kill()
        _kill_all(below)


@pytest.fixture
def toy_folder(tmp_path) -> Path:
    reviews = toy_reviews(60)
    pos = [t for t, y in zip(reviews.texts, reviews.labels) if y == 1]
    neg = [t for t, y in zip(reviews.texts, reviews.labels) if y == 0]
    return write_rt_folder(tmp_path / "rt", pos, neg)


def _first_epoch_seen(proc: subprocess.Popen[str], seen: threading.Event) -> None:
    """With --json the epochs are progress lines on stderr (stdout, piped, would be block-buffered)."""
    assert proc.stderr is not None
    for line in proc.stderr:
        if "epoch" in line:
            seen.set()


@pytest.mark.slow
def test_a_cli_killed_mid_run_leaves_no_launcher_and_no_worker(toy_folder):
    """`train --workers 2` killed with SIGKILL (an out-of-memory kill, a terminal's hard kill) after its
    first epoch: the torchrun launcher and both workers, each in a session of its own, end within seconds.
    (Here rank 0's next print would also fail on the dead reader's pipe; the idle-worker test is the one a
    missing guard fails for sure.)"""
    cli = subprocess.Popen([sys.executable, "-m", "core", "train", "--workers", "2", "--data", str(toy_folder),
                            "--epochs", "100000", "--threads", "1", "--hidden", "4", "--ngrams", "1",
                            "--batch-size", "16", "--json"], cwd=ROOT, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    seen = threading.Event()
    threading.Thread(target=_first_epoch_seen, args=(cli, seen), daemon=True).start()
    below: list[psutil.Process] = []
    try:
        assert seen.wait(180), "the workers never reported an epoch"
        below = psutil.Process(cli.pid).children(recursive=True)
        assert len(below) >= 3, below  # the launcher and two workers
        cli.kill()
        cli.wait()
        assert _wait_gone(below) == [], [p.cmdline()[:6] for p in _alive(below)]
    finally:
        cli.kill()
        _kill_all(below)
