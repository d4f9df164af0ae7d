"""One timed job per device at a time, across every session of the server and every CLI process.

Two jobs timed at once on one device both get wrong numbers (their kernels interleave, their
threads fight for cores), so each timed job holds a lock per device it uses. A file lock
(`filelock`, which torch already installs) works across threads and processes alike, and the
kernel drops it when the holding process dies, so a crashed job never blocks the class.

Fairness: every waiting job writes a ticket file named by the time it joined the line and only
tries the lock once no older live ticket is left, so jobs run first come, first served and each
waiter can say how many are ahead of it. A ticket carries a heartbeat (its mtime); tickets of dead
processes are swept away and tickets whose heartbeat stopped are not counted.

Length cap: a job may hold its devices for `max_job_s` at most. The lock cannot be taken from a
live process, so the cap is cooperative: `hold_devices` yields a `Job` whose `check()` raises
`JobTimedOut` past the deadline; timed loops call it between steps (a sweep per size, training per
batch). A holder file tells waiters who runs now and for how long.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import filelock

from core.errors import DashboardError
from core.platform.paths import lock_dir

POLL_S = 0.1  # how often a waiting job re-checks the line, the lock and its cancel flag
STALE_TICKET_S = 30.0  # a ticket whose heartbeat is older than this no longer counts as waiting
DEFAULT_MAX_JOB_S = 600.0  # 10 min; default sweeps take ~20 s and default training ~30 s on a 2-core CPU
MAX_JOB_ENV = "GPU_VS_CPU_MAX_JOB_S"  # a classroom server can shorten (or lengthen) the cap

WaitCallback = Callable[[str, int], None]  # (device key, jobs ahead, the running one included)
CancelCheck = Callable[[], bool]

# Devices the current thread holds, so a nested hold_devices (a page holding the devices around a
# core function that holds them too) passes through instead of waiting for itself forever.
_held_here = threading.local()


class JobCancelled(DashboardError):
    """The user cancelled a job while it waited for a device."""


class JobTimedOut(DashboardError):
    """A job held its devices longer than its cap and must stop so the next one can run."""


@dataclass(frozen=True)
class Holder:
    """Who holds a device now, as its holder file says."""

    device: str
    pid: int
    label: str  # what runs, e.g. "matmul sweep"
    started_at: float  # seconds since the epoch (wall clock: other processes read it)
    max_job_s: float

    @property
    def running_s(self) -> float:
        return max(0.0, time.time() - self.started_at)

    @property
    def overdue(self) -> bool:
        return self.running_s > self.max_job_s


@dataclass(frozen=True)
class Job:
    """The devices a job holds, and its deadline. `check()` between steps enforces the cap."""

    devices: tuple[str, ...]
    max_job_s: float
    started_at: float  # time.monotonic() when the last device was taken
    waited_s: float  # how long the job stood in line

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started_at

    @property
    def remaining_s(self) -> float:
        return self.max_job_s - self.elapsed_s

    @property
    def timed_out(self) -> bool:
        return self.remaining_s <= 0

    @property
    def limit_message(self) -> str:
        """What to tell the user when the job was stopped at its cap (a job that stops itself shows it too)."""
        return (f"this job held {', '.join(self.devices)} for more than {self.max_job_s:g} s, the limit per job, "
                f"and was stopped so the next one can run; choose fewer or smaller sizes or epochs, "
                f"or raise {MAX_JOB_ENV} on the server")

    def check(self) -> None:
        """Raise JobTimedOut once the job has run past its cap; call it between steps."""
        if self.timed_out:
            raise JobTimedOut(self.limit_message)


class WaitStatus:
    """The waiting state of one job, fed by `hold_devices`' callbacks; a page renders `message`.

    Pass `status.on_wait` and `status.should_cancel` to `hold_devices`; `cancel()` may be called
    from any thread. `on_change(status)` runs on every poll, so a page can redraw a placeholder
    there (which is also what lets Streamlit stop a waiting script at once).
    """

    def __init__(self, on_change: Callable[[WaitStatus], None] | None = None,
                 should_cancel: CancelCheck | None = None) -> None:
        self._on_change = on_change
        self._extra_cancel = should_cancel
        self._cancelled = False
        self._since: float | None = None
        self.device: str | None = None
        self.ahead = 0
        self.holder: Holder | None = None

    @property
    def waiting(self) -> bool:
        return self.device is not None

    @property
    def waited_s(self) -> float:
        return 0.0 if self._since is None else time.monotonic() - self._since

    @property
    def message(self) -> str:
        if self.device is None:
            return ""
        text = f"waiting for {self.device}: {self.ahead} ahead ({self.waited_s:.0f} s so far)"
        holder = self.holder
        if holder is not None:
            text += f"; now running: {holder.label or 'a job'} (pid {holder.pid}), {holder.running_s:.0f} s"
            text += f" of at most {holder.max_job_s:.0f} s" if not holder.overdue else ", past its time limit"
        return text

    def on_wait(self, device: str, ahead: int) -> None:
        if self._since is None:
            self._since = time.monotonic()
        self.device, self.ahead = device, ahead
        self.holder = current_holder(device)
        if self._on_change is not None:
            self._on_change(self)

    def cancel(self) -> None:
        self._cancelled = True

    def should_cancel(self) -> bool:
        return self._cancelled or (self._extra_cancel is not None and bool(self._extra_cancel()))


def max_job_s_from_env() -> float:
    """The cap per job: GPU_VS_CPU_MAX_JOB_S if set, else DEFAULT_MAX_JOB_S."""
    raw = os.environ.get(MAX_JOB_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_JOB_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise DashboardError(f"{MAX_JOB_ENV}={raw!r} is not a positive number of seconds; unset it or use e.g. 600")
    return value


def _slug(device: str) -> str:
    return device.replace(":", "-")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _queue_dir(device: str) -> Path:
    path = lock_dir() / f"{_slug(device)}.queue"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _holder_path(device: str) -> Path:
    return lock_dir() / f"{_slug(device)}.holder.json"


def _ticket_pid(ticket: Path) -> int | None:
    try:
        return int(ticket.name.split("-")[1])
    except (IndexError, ValueError):
        return None


def _jobs_ahead(queue: Path, ticket: Path) -> int:
    """Live tickets older than ours; a ticket of a dead process is swept away."""
    ahead = 0
    now = time.time()
    for other in queue.iterdir():
        if other.name >= ticket.name:
            continue
        pid = _ticket_pid(other)
        if pid is None:
            continue
        if not _pid_alive(pid):
            other.unlink(missing_ok=True)
            continue
        try:
            fresh = now - other.stat().st_mtime < STALE_TICKET_S
        except FileNotFoundError:  # its job took the lock or gave up meanwhile
            continue
        ahead += fresh
    return ahead


def current_holder(device: str) -> Holder | None:
    """Who holds `device` now, or None (free, or the holder process is gone)."""
    try:
        raw = json.loads(_holder_path(device).read_text())
        holder = Holder(device=device, pid=int(raw["pid"]), label=str(raw.get("label", "")),
                        started_at=float(raw["started_at"]), max_job_s=float(raw["max_job_s"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return holder if _pid_alive(holder.pid) else None


def _write_holder(device: str, label: str, max_job_s: float, token: str) -> None:
    path = _holder_path(device)
    tmp = path.with_name(f"{path.name}.{token}.tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "label": label, "started_at": time.time(),
                               "max_job_s": max_job_s, "token": token}))
    os.replace(tmp, path)


def _clear_holder(device: str, token: str) -> None:
    path = _holder_path(device)
    try:
        if json.loads(path.read_text()).get("token") == token:
            path.unlink(missing_ok=True)
    except (OSError, ValueError, AttributeError):
        pass


def _try_lock(lock: filelock.BaseFileLock) -> bool:
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        return False
    return True


@contextmanager
def _hold_one(device: str, label: str, max_job_s: float, on_wait: WaitCallback | None,
              should_cancel: CancelCheck | None) -> Iterator[None]:
    queue = _queue_dir(device)
    token = uuid.uuid4().hex
    ticket = queue / f"{time.time_ns():020d}-{os.getpid()}-{token}"
    ticket.touch()
    lock = filelock.FileLock(str(lock_dir() / f"{_slug(device)}.lock"), thread_local=False)
    try:
        while True:
            ahead = _jobs_ahead(queue, ticket)
            if ahead == 0 and _try_lock(lock):
                break
            if should_cancel is not None and should_cancel():
                raise JobCancelled(f"cancelled while waiting for {device}")
            if on_wait is not None:
                on_wait(device, 1 + ahead)  # the running job, plus older waiters
            time.sleep(POLL_S)
            ticket.touch()  # heartbeat; also puts back a ticket another process swept by mistake
        try:
            _write_holder(device, label, max_job_s, token)  # before the ticket goes: waiters always see who runs
            ticket.unlink(missing_ok=True)
            yield
        finally:
            _clear_holder(device, token)
            lock.release()
    finally:  # covers BaseExceptions too: Streamlit's StopException/RerunException, KeyboardInterrupt
        ticket.unlink(missing_ok=True)


@contextmanager
def hold_devices(
    devices: Iterable[str],
    *,
    on_wait: WaitCallback | None = None,
    should_cancel: CancelCheck | None = None,
    max_job_s: float | None = None,
    label: str = "",
) -> Iterator[Job]:
    """Hold every named device ('cpu', 'cuda:0', 'mps') for the block, waiting in line if needed.

    Yields a `Job`; call `job.check()` between steps so a job past `max_job_s` (default: the
    GPU_VS_CPU_MAX_JOB_S environment variable, else 600 s) stops with JobTimedOut. `on_wait` is
    called on every poll while waiting; `should_cancel` returning True raises JobCancelled.
    Locks are taken in sorted order so two jobs wanting the same pair can never deadlock; a nested
    call in the same thread for a device it holds already passes through. Released on any exit:
    finish, error, cancel, Streamlit's stop and rerun, a closed tab's session shutdown; and by the
    kernel when the process dies.
    """
    cap = max_job_s_from_env() if max_job_s is None else float(max_job_s)
    if not cap > 0:
        raise DashboardError(f"max_job_s must be a positive number of seconds, not {max_job_s!r}")
    wanted = tuple(sorted(set(devices)))
    held: set[str] = _held_here.__dict__.setdefault("devices", set())
    outer: Job | None = getattr(_held_here, "job", None)
    if outer is not None and set(wanted) <= held:
        yield outer  # nested inside a job holding all of these: its clock and cap go on counting
        return
    joined = time.monotonic()
    with ExitStack() as stack:
        for device in wanted:
            if device in held:  # this thread holds it already, in an outer hold_devices
                continue
            stack.enter_context(_hold_one(device, label, cap, on_wait, should_cancel))
            held.add(device)
            stack.callback(held.discard, device)
        started = time.monotonic()
        job = Job(devices=wanted, max_job_s=cap, started_at=started, waited_s=started - joined)
        _held_here.job = job
        stack.callback(setattr, _held_here, "job", outer)
        yield job
