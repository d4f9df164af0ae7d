"""Another job holding a device, for tests of waiting in line (the pages, the CLI)."""

from __future__ import annotations

import threading
import time

from core.platform.device_lock import hold_devices


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
