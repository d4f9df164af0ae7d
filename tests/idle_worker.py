"""A torchrun worker that says it started and then waits without a word, for the orphan tests.

A worker that prints finds out soon enough that its reader died (a broken pipe); one busy with a long step
does not. This one stands for the latter: without the parent-death guards it would outlive its launcher.
"""

from __future__ import annotations

import time

from core.platform.torchrun import Emit, Event, WorkerEnv, exit_now, worker_main


def _body(env: WorkerEnv, emit: Emit) -> Event:
    emit({"event": "start", "world_size": env.world_size})
    time.sleep(600)
    return {"event": "result"}


if __name__ == "__main__":
    exit_now(worker_main(_body))
