"""Untimed heavy work the server does for a user, kept out of the way of timed jobs (issue 31).

An export of 10,000 runs held a core for over a minute beside the class's races, and a race beside it
read "cannot tell on a machine this busy". Work nothing times (exports, imports, large file checks, the
classifier's feature builds) therefore runs through `run_quietly`:

- in a **process of its own** (spawned: no fork of a threaded server). Not a low-priority thread of the
  server: a thread starved of CPU while it holds Python's GIL stalls the server's timed loop between
  calls, which is worse than no priority at all. It starts at normal priority: the server is usually busy
  with other programs' work, and a child at idle priority gets only the CPU they leave (a student's
  feature build of the real reviews did not finish in 120 s beside four busy loops on two cores).
- **paused while a timed job holds or waits for a device** (`pause=True`, for work that only reads):
  the child is stopped with SIGSTOP and continued after. A race's per-size CPU counters count every
  other process's busy time, idle priority or not (a core its 1-thread series leaves idle is a core
  the export would take), so only a stopped child leaves the race the machine a quiet race gets. Jobs
  of this process pause it at once (`timed_job`, which core.platform.jobs.run_job enters); other
  processes' jobs are seen in the device lock's folder within POLL_S.
- work that **writes** (an import: a child stopped inside its write transaction would hold the store's
  lock for the length of a race) is not paused midway: it waits for a quiet moment (no job holding or
  waiting for a device, at most QUIET_WAIT_S), and once a timed job appears while it runs it is put at the
  **lowest CPU priority** the OS offers (`SCHED_IDLE` on Linux, else nice 19; idle I/O priority where
  psutil can set it) for the rest of its run: a process without privileges cannot raise itself back.
  So is pausable work where no signal can stop a process (Windows).

At most MAX_CHILDREN quiet children run at once in a process; more work waits for a slot (a Stop still ends
the wait). Before, sixty sessions' feature builds of sixty different settings (or one student's tabs) each started
a process of its own at once, where the device line had built them one at a time: memory, not CPU, was then the
limit (a build of 570,000 characters of reviews peaked at 392 MiB) (hostile pass, docs/security.md).

The timeout counts only the time the child was let run; a child that fails, crashes or runs past it is
a DashboardError naming `what`. Work that reports steps (a feature build's "weighting the test reviews")
hands them to the caller's thread as they come (`Listeners`), with the pauses, and asks there whether
the caller's user pressed Stop. The child runs core.platform.quiet_child, which imports no torch.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from core.errors import DashboardError
from core.platform.device_lock import JobCancelled, timed_jobs_present
from core.platform.quiet_child import ERROR, OK, STEP, child_main, lowest_priority

T = TypeVar("T")
POLL_S = 0.05  # how often a supervisor looks for timed jobs of other processes
DEFAULT_TIMEOUT_S = 600.0  # running time (pauses not counted) before the work is given up
QUIET_WAIT_S = 120.0  # the longest a writing job waits for a quiet moment before running at idle priority anyway
LONGEST_WALL_S = 3 * 3600.0  # pauses included: a class that never stops racing still gets its export
MAX_CHILDREN = 2  # quiet children of this process at once: at idle priority more add memory, not speed
_slots = threading.BoundedSemaphore(MAX_CHILDREN)

_here = 0  # timed jobs of this process waiting or running (core.platform.jobs.run_job counts them)
_children: set[int] = set()  # pids of this process's pausable quiet children
_state = threading.Lock()


@contextmanager
def timed_job() -> Iterator[None]:
    """Around a job that waits for or holds a device: this process's quiet children stop at once, not at
    their supervisor's next look."""
    global _here
    with _state:
        _here += 1
        for pid in _children:
            _signal(pid, "SIGSTOP")
    try:
        yield
    finally:
        with _state:
            _here -= 1


def timed_job_now() -> bool:
    """A job of this process or of another waits for or holds a device."""
    with _state:
        if _here:
            return True
    return timed_jobs_present()


@dataclass(frozen=True)
class Listeners:
    """Who hears quiet work as it goes, all in the caller's thread (a page may redraw there).

    `on_step` hears every step the work reports (the work is then called as `fn(*args, progress=report)`, and
    `report(*values)` in the child is `on_step(*values)` here);
    `on_pause` hears True when the work is stopped for a timed job and False when it goes on; `should_stop`
    is asked on every look (each POLL_S): True ends the work (JobCancelled).
    """

    on_step: Callable[..., None] | None = None
    on_pause: Callable[[bool], None] | None = None
    should_stop: Callable[[], bool] | None = None


def run_quietly(fn: Callable[..., T], *args: Any, what: str, timeout_s: float = DEFAULT_TIMEOUT_S,
                pause: bool = True, idle: bool = True, listeners: Listeners | None = None) -> T:
    """`fn(*args)` in a child process, paused while timed jobs run (`pause`), or started only at a quiet
    moment and lowered to the lowest priority if a timed job comes while it runs (`pause=False`: work that
    writes). `fn` and `args` must pickle (a module-level function); what it returns comes back the same way.
    DashboardError when it fails. `idle=False` never lowers the child: a test sees the pause alone."""
    listeners = listeners or Listeners()
    if not pause:  # before its slot: a writer waiting for a quiet moment holds none
        _wait_for_quiet(QUIET_WAIT_S)
    _take_slot(what, listeners)
    try:
        return _run_quietly(fn, args, what, timeout_s, pause, idle, listeners)
    finally:
        _slots.release()


def _take_slot(what: str, listeners: Listeners) -> None:
    """Wait for one of the MAX_CHILDREN slots; a Stop meanwhile is JobCancelled, nothing started."""
    while not _slots.acquire(timeout=POLL_S):
        if listeners.should_stop is not None and listeners.should_stop():
            raise JobCancelled(f"stopped before {what} began (it waited for other quiet work)")


def _run_quietly(fn: Callable[..., T], args: tuple[Any, ...], what: str, timeout_s: float, pause: bool, idle: bool,
                 listeners: Listeners) -> T:
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    work_in, work_out = context.Pipe(duplex=False)
    child = context.Process(target=child_main, args=(work_in, send, listeners.on_step is not None),
                            name=f"quiet {what}", daemon=True)
    child.start()  # the child's start carries no work: it is quick, and the child is pausable before its imports
    send.close()
    work_in.close()
    try:
        return _supervise(child, receive, what, timeout_s, pause, listeners, lambda: _hand_over(work_out, fn, args),
                          lower=idle and (not pause or not hasattr(signal, "SIGSTOP")))
    finally:
        _end(child)
        receive.close()
        work_out.close()


def _hand_over(work: Connection, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """Send the work to the child from a thread of its own: a large one fills the pipe, and the child that
    reads it may be stopped meanwhile, while the supervisor goes on looking."""
    def send() -> None:
        try:
            work.send((fn, args))
        except (OSError, ValueError):  # the child has gone (killed, timed out): the supervisor says why
            pass

    threading.Thread(target=send, name="quiet work hand-over", daemon=True).start()


def _supervise(child: Any, receive: Connection, what: str, timeout_s: float, pause: bool,
               listeners: Listeners, hand_over: Callable[[], None], lower: bool) -> Any:
    """Look after the child every POLL_S until its answer: its steps to the listeners, a Stop, its pauses, its
    time; `lower`: put it at the lowest priority once a timed job appears (work that is not stopped)."""
    pid = int(child.pid)
    if pause:
        with _state:
            _children.add(pid)
            if _here:
                _signal(pid, "SIGSTOP")
    hand_over()  # only now: the child imports the work's modules as it reads it, stopped while a job runs
    ran_s, paused, started = 0.0, False, time.monotonic()
    try:
        while True:
            tick = time.monotonic()
            if receive.poll(POLL_S):
                status, value = _receive(receive, what)
                if status != STEP:
                    return _outcome(status, value, what)
                if listeners.on_step is not None:
                    listeners.on_step(*value)
            if not child.is_alive() and not receive.poll(0):
                raise DashboardError(f"{what} stopped without an answer (its process ended with code "
                                     f"{child.exitcode}); try again, or with fewer runs")
            if listeners.should_stop is not None and listeners.should_stop():
                raise JobCancelled(f"{what} was stopped")
            if lower and timed_job_now():  # for the rest of its run (no way back up without privileges)
                lowest_priority(pid)
                lower = False
            if pause:  # said every time: a job of this process may have stopped it meanwhile (timed_job)
                was, paused = paused, timed_job_now()
                with _state:
                    _signal(pid, "SIGSTOP" if paused or _here else "SIGCONT")
                if paused != was and listeners.on_pause is not None:
                    listeners.on_pause(paused)
            ran_s += 0.0 if paused else time.monotonic() - tick
            if ran_s > timeout_s or time.monotonic() - started > LONGEST_WALL_S:
                raise DashboardError(f"{what} took longer than {timeout_s:.0f} s and was stopped; "
                                     "try again with fewer runs")
    finally:
        with _state:
            _children.discard(pid)


def _receive(receive: Connection, what: str) -> tuple[str, Any]:
    try:
        status, value = receive.recv()
    except (EOFError, OSError) as exc:
        raise DashboardError(f"{what} ended without an answer ({type(exc).__name__}); try again") from None
    return status, value


def _outcome(status: str, value: Any, what: str) -> Any:
    if status == OK:
        return value
    assert status == ERROR
    kind, message = value
    if kind == "DashboardError":
        raise DashboardError(message)
    raise DashboardError(f"{what} failed: {kind}: {message}")


def _wait_for_quiet(longest_s: float) -> None:
    """Until no job holds or waits for a device, or `longest_s` passed (then the work runs at idle priority)."""
    end = time.monotonic() + longest_s
    while timed_job_now() and time.monotonic() < end:
        time.sleep(POLL_S * 2)


def _signal(pid: int, name: str) -> None:
    sig = getattr(signal, name, None)
    if sig is None:  # Windows: no stopping a process; idle priority alone
        return
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _end(child: Any) -> None:
    """A child that is still there (a timeout, the caller interrupted) is continued and killed."""
    if child.is_alive():
        _signal(int(child.pid), "SIGCONT")
        child.kill()
    child.join(5)
