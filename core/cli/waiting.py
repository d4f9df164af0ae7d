"""The job hooks of CLI commands: a line on stderr when a job has to wait, and when it moves up.

The CLI never takes a device lock itself: it passes `cli_hooks(...)` to a core entry point,
which waits in line through `core.platform.jobs.run_job`. stdout stays the command's table or its
one JSON object; Ctrl+C while waiting or running raises KeyboardInterrupt, which leaves the line
(or releases the devices) like any other exit, and `python -m core` turns it into exit status 130.
A command that keeps what it measured (`matmul`) runs its job inside `ctrl_c_stops()`: there the first
Ctrl+C is the page's Stop (finish the step, print and save what was measured), the second interrupts.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from core.cli.output import wrap
from core.platform.device_lock import WaitStatus
from core.platform.jobs import JobHooks, ProgressCallback


def waiting_printer(stream: TextIO | None = None) -> Callable[[WaitStatus], None]:
    """An `on_wait` hook that prints "waiting for cpu: 2 ahead ..." each time the count changes, not every poll."""
    last: list[tuple[str | None, int]] = []

    def on_wait(status: WaitStatus) -> None:
        now = (status.device, status.ahead)
        if not last or last[-1] != now:
            last.append(now)
            print(wrap(f"{status.message} (Ctrl+C to leave the line)"), file=stream or sys.stderr, flush=True)

    return on_wait


def cli_hooks(on_progress: ProgressCallback | None = None, stream: TextIO | None = None) -> JobHooks:
    """Hooks for one CLI job: the waiting line on `stream` (stderr), progress as the command prints it."""
    return JobHooks(on_progress=on_progress, on_wait=waiting_printer(stream))



@contextmanager
def ctrl_c_stops(stream: TextIO | None = None) -> Iterator[Callable[[], bool]]:
    """Within the block, the first Ctrl+C asks the job to stop after its current step, as the page's Stop
    does (the sizes measured are printed and saved); yields the `should_stop` check. A second Ctrl+C
    interrupts at once (KeyboardInterrupt). Outside the main thread signals cannot be caught: Ctrl+C as before."""
    pressed = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield pressed.is_set
        return

    def on_ctrl_c(signum: int, frame: object) -> None:
        if pressed.is_set():
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        pressed.set()
        print("Ctrl+C: stopping after the current step and keeping what was measured; press it again to abort",
              file=stream or sys.stderr, flush=True)

    previous = signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield pressed.is_set
    finally:
        signal.signal(signal.SIGINT, previous)
