"""The device line for CLI commands: a line on stderr when a job has to wait, and when it moves up.

stdout stays the command's table or its one JSON object; Ctrl+C while waiting leaves the line
(KeyboardInterrupt runs hold_devices' cleanup like any other exit).
"""

from __future__ import annotations

import sys
from typing import TextIO

from core.platform.device_lock import WaitCallback, WaitStatus


def print_waiting(stream: TextIO | None = None) -> WaitCallback:
    """An `on_wait` for `hold_devices` that prints "waiting for cpu: 2 ahead ..." each time the count changes."""
    last: list[tuple[str | None, int]] = []

    def on_change(status: WaitStatus) -> None:
        now = (status.device, status.ahead)
        if not last or last[-1] != now:
            last.append(now)
            print(f"{status.message} (Ctrl+C to leave the line)", file=stream or sys.stderr, flush=True)

    return WaitStatus(on_change=on_change).on_wait
