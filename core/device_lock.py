"""One timed job per device at a time, across every session of the server and every CLI process.

Two jobs timed at once on one device both get wrong numbers (their kernels interleave, their
threads fight for cores), so each timed job holds a lock per device it uses. A file lock
(`filelock`, which torch already installs) works across threads and processes alike; a
ticket file per waiting job lets each waiter see how many are ahead of it.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import filelock

from core.errors import DashboardError
from core.paths import lock_dir

POLL_S = 0.1  # how often a waiting job re-checks the lock and its cancel flag

WaitCallback = Callable[[str, int], None]  # (device key, jobs ahead)
CancelCheck = Callable[[], bool]


class JobCancelled(DashboardError):
    """The user cancelled a job while it waited for a device."""


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


def _jobs_ahead(queue: Path, ticket: Path) -> int:
    """Live tickets older than ours; a ticket of a dead process is swept away."""
    ahead = 0
    for other in queue.iterdir():
        if other.name >= ticket.name:
            continue
        try:
            pid = int(other.name.split("-")[1])
        except (IndexError, ValueError):
            continue
        if _pid_alive(pid):
            ahead += 1
        else:
            other.unlink(missing_ok=True)
    return ahead


@contextmanager
def _hold_one(device: str, on_wait: WaitCallback | None, should_cancel: CancelCheck | None) -> Iterator[None]:
    queue = _queue_dir(device)
    ticket = queue / f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex}"
    ticket.touch()
    lock = filelock.FileLock(str(lock_dir() / f"{_slug(device)}.lock"), thread_local=False)
    try:
        while True:
            try:
                lock.acquire(timeout=0)
                break
            except filelock.Timeout:
                pass
            if should_cancel is not None and should_cancel():
                raise JobCancelled(f"cancelled while waiting for {device}")
            if on_wait is not None:
                on_wait(device, 1 + _jobs_ahead(queue, ticket))  # the running job, plus older waiters
            time.sleep(POLL_S)
        ticket.unlink(missing_ok=True)
        try:
            yield
        finally:
            lock.release()
    finally:
        ticket.unlink(missing_ok=True)


@contextmanager
def hold_devices(
    devices: Iterable[str],
    *,
    on_wait: WaitCallback | None = None,
    should_cancel: CancelCheck | None = None,
) -> Iterator[None]:
    """Hold every named device ('cpu', 'cuda:0', 'mps') for the block, waiting in line if needed.

    Locks are taken in sorted order so two jobs wanting the same pair can never deadlock.
    Released on any exit, including Streamlit's stop and rerun exceptions.
    """
    with ExitStack() as stack:
        for device in sorted(set(devices)):
            stack.enter_context(_hold_one(device, on_wait, should_cancel))
        yield
