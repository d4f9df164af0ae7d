"""Join, don't queue: one run of a job for every caller of this process who asks for the same thing at once.

Sixty students pressing Run on the default race within a second asked for one measurement, not sixty
copies of it served one after another (issue 31). A caller names what it wants by a canonical key (the
race's settings and devices: `core.matmul.shared_race.race_key`); while a run with that key is waiting
in line or running, a second caller *joins* it instead of queuing behind it: it watches the same run
live (every progress step is kept and replayed to a late joiner, then relayed as it comes) and gets the
same result at the end. A caller that wants its own run (`join=False`) starts one, which waits its turn
in the device line like any job; later callers may join that one too. A run started with `reserve=True`
(the instructor's measurement for the class: core.matmul.shared_race.join_race) joins nobody's, and is the
one a later caller with its key joins, before any other run with that key.

The run itself happens in a thread of its own, not in any caller's: a watcher who leaves (a Stop, a
rerun, a closed tab) only stops watching, and the run goes on for the others. It stops between steps
once nobody watches any more, as a job stops when its only caller leaves. `SHARED_JOBS` is this
process's one registry, explicit global state like the device lock's; nothing crosses processes (a CLI
user's race is its own).

While a shared run waits in line, its waiting line says how long it may wait: when the job holding the
device is a shared run of this process, its progress gives the time it has left
(`SharedJobs.estimate_wait`).
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from core.platform.device_lock import Job, JobCancelled, WaitStatus
from core.platform.jobs import JobHooks, Progress, WaitCancelled

T = TypeVar("T")
POLL_S = 0.1  # a watcher's redraw while nothing arrives: what lets a page stop a watching script promptly


@dataclass(frozen=True)
class Watched(Generic[T]):
    """What one caller got: the run's result, which run it was, and whether this caller joined it."""

    result: T
    run_id: str  # the same for every caller of one run: what marks their copies as one measurement
    joined: bool  # this caller joined a run another caller started (False: it started the run)
    watchers: int  # callers that watched it to its end (this one included): each is credited with it


class _RelayedWait(WaitStatus):
    """A shared run's waiting line as its watchers see it: the run's own line, plus the estimate."""

    def __init__(self, status: WaitStatus, note: str) -> None:
        super().__init__()
        self.device, self.ahead, self.holder = status.device, status.ahead, status.holder
        self._lines = {shown: status.line(pid=shown) + note for shown in (True, False)}

    def line(self, *, pid: bool) -> str:
        """The run's own line as it was at its last poll (with or without the holder's pid), plus the estimate."""
        return self._lines[pid]


class SharedRun:
    """One run in the registry: its progress so far, its watchers, and its end (result or error)."""

    def __init__(self, key: str, seq: int) -> None:
        self.key, self.seq = key, seq
        self.run_id = uuid.uuid4().hex[:12]
        self.events: list[Progress[Any]] = []
        self.wait: WaitStatus | None = None
        self.job: Job | None = None  # once the run holds its devices
        self.started_at: float | None = None  # time.monotonic() then
        self.reserved = False  # reserved for the room (the instructor's run): joined before any other with its key
        self.watchers = 0  # watching now
        self.credited = 0  # callers watching when it ended: each is credited with it
        self.closing = False  # nobody watches: it is stopping, and no one may join it
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.cond = threading.Condition()

    @property
    def fraction(self) -> float:
        return self.events[-1].fraction if self.events else 0.0

    def remaining_s(self) -> tuple[float, float] | None:
        """(seconds left, seconds in all) from the time it has run and the share done, once it has a step."""
        if self.started_at is None or self.fraction <= 0:
            return None
        elapsed = time.monotonic() - self.started_at
        total = elapsed / self.fraction
        return max(0.0, total - elapsed), total


class SharedJobs:
    """The runs of this process that a caller may join, by key; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: list[SharedRun] = []  # waiting or running, oldest first
        self._seq = itertools.count()

    def active(self) -> list[SharedRun]:
        with self._lock:
            return list(self._runs)

    def run(self, key: str, work: Callable[[JobHooks], T], hooks: JobHooks | None = None, *,
            join: bool = True, reserve: bool = False) -> Watched[T]:
        """`work(hooks)` once for every caller asking for `key` meanwhile; this caller watches it to the end.

        join=False starts a run of this caller's own (it waits its turn in the device line); reserve=True
        starts one too, which later callers asking for `key` join before any other. Raises what
        the run raised; WaitCancelled when this caller leaves while the run still waits in line;
        JobCancelled when it leaves a running run others still watch.
        """
        hooks = hooks or JobHooks()
        with self._lock:
            open_runs = [r for r in self._runs if join and not reserve and r.key == key and not r.closing]
            found = next((r for r in open_runs if r.reserved), None) or next(iter(open_runs), None)
            run = found or SharedRun(key, next(self._seq))
            run.reserved = run.reserved or reserve
            with run.cond:
                run.watchers += 1
            if found is None:
                self._runs.append(run)
        if found is None:
            threading.Thread(target=self._work, args=(run, work, hooks.max_job_s), daemon=True,
                             name=f"shared-job-{run.run_id}").start()
        return self._watch(run, hooks, joined=found is not None)

    def _work(self, run: SharedRun, work: Callable[[JobHooks], Any], max_job_s: float | None) -> None:
        """The run itself, in its own thread: every step kept for the watchers, stopping when none is left."""
        def progress(step: Progress[Any]) -> None:
            with run.cond:
                run.events.append(step)
                run.cond.notify_all()

        def waiting(status: WaitStatus) -> None:
            relayed = _RelayedWait(status, self._estimate_note(status.device, status.ahead, run))
            with run.cond:
                run.wait = relayed
                run.cond.notify_all()

        def nobody_watches() -> bool:
            with self._lock, run.cond:
                run.closing = run.closing or run.watchers == 0
                return run.closing

        def started(job: Job) -> None:
            if nobody_watches():  # everyone left the line between its last poll and the turn: run nothing
                raise WaitCancelled("everyone left the line; nothing ran")
            with run.cond:
                run.job, run.started_at = job, time.monotonic()
                run.cond.notify_all()

        hooks = JobHooks(on_progress=progress, on_wait=waiting, on_start=started, should_stop=nobody_watches,
                         max_job_s=max_job_s)
        result: Any = None
        error: BaseException | None = None
        try:
            result = work(hooks)
        except BaseException as exc:  # noqa: BLE001 - handed to every watcher, raised in each caller's thread
            error = exc
        with self._lock:
            self._runs.remove(run)
            with run.cond:
                run.result, run.error, run.done = result, error, True
                run.credited = run.watchers  # every caller watching now gets the result
                run.cond.notify_all()

    def _watch(self, run: SharedRun, hooks: JobHooks, *, joined: bool) -> Watched[Any]:
        """Relay the run to one caller's hooks until it ends; leaving (any exception) only stops watching."""
        seen, started, watching = 0, False, True
        try:
            while True:
                with run.cond:
                    if not run.done and len(run.events) == seen:
                        run.cond.wait(POLL_S)
                    steps, seen = run.events[seen:], len(run.events)
                    job, wait, done = run.job, run.wait, run.done
                if job is None and wait is not None and hooks.on_wait is not None:
                    hooks.on_wait(wait)  # on every poll: a page redraws, which is where Streamlit stops it
                if job is not None and not started:
                    started = True
                    if hooks.on_start is not None:
                        hooks.on_start(job)
                for step in steps:
                    if hooks.on_progress is not None:
                        hooks.on_progress(_shown(step, joined, run.reserved))
                if done:
                    break
                if hooks.should_stop is not None and hooks.should_stop():
                    watching = False
                    self._leave(run)
        finally:
            if watching:
                with run.cond:
                    run.watchers -= 1
        if run.error is not None:
            raise run.error
        return Watched(run.result, run.run_id, joined, max(1, run.credited))

    @staticmethod
    def _leave(run: SharedRun) -> None:
        """This caller stops watching: it left the line (nothing ran for it), or it leaves a run others still
        watch; the last watcher of a running run waits for what it measured, stopped, as a job's only caller does."""
        with run.cond:
            run.watchers -= 1
            last, job = run.watchers == 0, run.job
        if job is None:
            raise WaitCancelled("left the line; nothing ran")
        if not last:
            raise JobCancelled("stopped watching; the run goes on for the others watching it")
        with run.cond:
            run.cond.wait_for(lambda: run.done)

    def _estimate_note(self, device: str | None, ahead: int, waiting: SharedRun) -> str:
        """'; about 12 s to wait (...)' from the progress of the shared run of this process holding `device`;
        '' when the device's holder is another kind of job or another process's."""
        with self._lock:
            running = [r for r in self._runs if r.job is not None and r is not waiting and device in r.job.devices]
        timed = [t for t in (r.remaining_s() for r in running) if t is not None]
        if not timed:
            return ""
        left, whole = min(timed)
        wait = left + max(0, ahead - 1) * whole
        others = f" and {ahead - 1} more ahead taken as long as it" if ahead > 1 else ""
        return f"; about {wait:.0f} s to wait (the running race has about {left:.0f} s left{others})"


def _shown(step: Progress[T], joined: bool, reserved: bool = False) -> Progress[T]:
    """A step as a joiner sees it: the same, saying whose run it watches."""
    if not joined:
        return step
    whose = "the instructor's measurement for the class" if reserved else "a race already running"
    return Progress(step.done, step.total, f"{step.message} · joined {whose}", step.item)


SHARED_JOBS = SharedJobs()  # this process's runs that callers may join (like the device lock, one per process)
