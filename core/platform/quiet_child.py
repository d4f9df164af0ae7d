"""The quiet work's child process (core.platform.quiet_work): the work, its steps and one answer; how it is lowered.

A module of its own so that a spawned child imports only what its work needs: `core.platform.quiet_work`
reads the device lock's folder, which imports torch (about 1.7 s of a 2-core machine's CPU per child
that the work itself never uses).
"""

from __future__ import annotations

import os
from multiprocessing.connection import Connection
from typing import Any

from core.errors import DashboardError

OK, ERROR, STEP = "ok", "error", "step"  # what the child sends: the answer, a failure, or a step of its progress


def lowest_priority(pid: int = 0) -> str:
    """Put process `pid` (0: the calling one) at the lowest CPU (and I/O) priority the OS offers; says which it
    got. One way for a user without privileges: a process can be lowered, not raised back."""
    got = "normal priority"
    try:
        os.setpriority(os.PRIO_PROCESS, pid, 19)  # type: ignore[attr-defined,unused-ignore]
        got = "nice 19"
    except (AttributeError, OSError):
        pass
    try:
        os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))  # type: ignore[attr-defined,unused-ignore]
        got = "SCHED_IDLE"
    except (AttributeError, OSError):
        pass
    try:
        import psutil

        psutil.Process(pid or os.getpid()).ionice(psutil.IOPRIO_CLASS_IDLE)  # type: ignore[attr-defined,unused-ignore]
    except (ImportError, AttributeError, OSError, ValueError):
        pass
    return got


def child_main(work: Connection, send: Connection, steps: bool) -> None:
    """The child's whole life: the work as the parent hands it over (`work`:
    (fn, args), whose unpickling imports fn's modules: by then the parent can stop this process), run (told
    how to report its steps when `steps`: `fn(*args, progress=report)`, each `report(*values)` heard by the
    parent), then one answer."""

    def report(*step: Any) -> None:
        send.send((STEP, step))

    try:
        fn, args = work.recv()
        work.close()
        answer: tuple[str, Any] = (OK, fn(*args, progress=report) if steps else fn(*args))
    except DashboardError as exc:
        answer = (ERROR, ("DashboardError", str(exc)))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it as a DashboardError
        answer = (ERROR, (type(exc).__name__, str(exc)[:2000]))
    send.send(answer)
    send.close()
