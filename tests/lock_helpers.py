"""Another job holding a device, for tests of waiting in line (the pages, the CLI)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from core.platform.device_lock import hold_devices
from core.platform.paths import lock_dir


def wait_until(condition: Callable[[], object], timeout_s: float = 10.0) -> None:
    """Poll `condition` until it holds: a test waits on what it needs, never on a guessed sleep."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not true after {timeout_s} s: {condition}"
        time.sleep(0.01)


def tickets(device: str) -> list[Path]:
    """The tickets of the jobs waiting in line for `device` (the running job's is gone)."""
    queue = lock_dir() / f"{device.replace(':', '-')}.queue"
    return list(queue.iterdir()) if queue.exists() else []


def hold_cpu_for(seconds: float, label: str = "another student's sweep") -> threading.Thread:
    """Hold the CPU lock from another thread for `seconds`; returns once it is held (join the thread after)."""
    held = threading.Event()

    def hold() -> None:
        with hold_devices(["cpu"], label=label):
            held.set()
            time.sleep(seconds)

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(10), "the CPU lock was not taken within 10 s"
    return thread
