"""Whether float32 CUDA matmuls may use TF32: process-wide state, changed by one job at a time.

torch keeps this setting per process, not per GPU, and Streamlit runs every session in one
process while the device lock is per GPU. So a sweep timing TF32 on cuda:0 would change a
concurrent job on cuda:1, and two overlapping save/restore pairs could leave TF32 on for good.
`tf32_state(enabled)` therefore holds one process-wide lock for the whole block: jobs that want
the same setting share it, a job that wants the other one waits until they are done (and jobs
arriving after it wait behind it, so it cannot starve), and the setting found before is put back
when the last one leaves.

torch 2.9 added a per-backend API (`torch.backends.cuda.matmul.fp32_precision`: "ieee", "tf32" or
"none", meaning "as the generic setting"). Mixing it with the legacy `allow_tf32` setter leaves torch
in a state in which `torch.get_float32_matmul_precision()` raises (seen on torch 2.13), so where
the new API exists only it is used; `torch.set_float32_matmul_precision` is not used either, since
it also switches the CPU's oneDNN matmuls. Older torch gets the legacy flag.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch


def _matmul_backend() -> Any:
    """torch.backends.cuda.matmul, looked up at each use so tests can stand in a fake."""
    return torch.backends.cuda.matmul


def uses_new_api() -> bool:
    """True on torch >= 2.9, whose cuBLAS backend has `fp32_precision`."""
    try:
        return isinstance(getattr(_matmul_backend(), "fp32_precision"), str)
    except (AttributeError, RuntimeError):
        return False


def _read() -> str | bool:
    """The current setting in the running torch's own terms: a precision name, or the legacy flag."""
    backend = _matmul_backend()
    return str(backend.fp32_precision) if uses_new_api() else bool(backend.allow_tf32)


def _write(value: str | bool) -> None:
    backend = _matmul_backend()
    if uses_new_api():
        backend.fp32_precision = value
    else:
        backend.allow_tf32 = value


def _wanted(enabled: bool) -> str | bool:
    if uses_new_api():
        return "tf32" if enabled else "ieee"
    return enabled


def tf32_enabled() -> bool:
    """Whether a float32 CUDA matmul started now may use TF32 (read without the mixed-API getters)."""
    if not uses_new_api():
        return bool(_matmul_backend().allow_tf32)
    precision = str(_matmul_backend().fp32_precision)
    if precision == "none":  # "as the generic setting", which is "none" (IEEE) unless someone set it
        precision = str(getattr(torch.backends, "fp32_precision", "ieee"))
    return precision == "tf32"


class _SharedSetting:
    """A lock that holders of one value share: the state is set by the first and restored by the last.

    A job's own hold (`job=True`: every CUDA job holds the IEEE setting it assumes for its whole length)
    gives way to a block of the job's own thread asking for the other value: the job lets go of its
    hold, waits for the other value like anyone, and takes its own back (waiting again) when the block ends.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._value: bool | None = None  # the setting the current holders asked for
        self._holders = 0
        self._before: str | bool = False  # what the first holder found, restored by the last
        self._waiting = {True: 0, False: 0}  # threads waiting, by the value they want
        self._owners: dict[int, int] = {}  # thread id -> how many blocks it holds (nesting)
        self._jobs: dict[int, bool] = {}  # thread id -> the value its job holds (a hold that gives way)
        self._job_holds: dict[int, int] = {}  # thread id -> how many of its holds are its jobs' (nested jobs)

    def _acquire(self, me: int, enabled: bool) -> None:
        """Under the condition: wait for `enabled` unless this thread holds it already, then hold it."""
        if not self._owners.get(me):
            self._waiting[enabled] += 1
            try:  # join holders of the same value unless someone waits for the other one
                while not (self._holders == 0 or (self._value == enabled and not self._waiting[not enabled])):
                    self._cond.wait()
            finally:
                self._waiting[enabled] -= 1
        if self._holders == 0:
            self._before = _read()
            _write(_wanted(enabled))
            self._value = enabled
        self._holders += 1
        self._owners[me] = self._owners.get(me, 0) + 1

    def _release(self, me: int) -> None:
        self._holders -= 1
        self._owners[me] -= 1
        if not self._owners[me]:
            del self._owners[me]
        if self._holders == 0:
            _write(self._before)
            self._value = None
        self._cond.notify_all()

    @contextmanager
    def hold(self, enabled: bool, *, job: bool = False) -> Iterator[None]:
        me = threading.get_ident()
        with self._cond:
            if job and me in self._jobs:  # a job nested in a job of this thread: one more hold of the outer's value
                enabled = self._jobs[me]
            jobs_held = self._job_holds.get(me, 0)
            gives_way = (not job and jobs_held and self._owners.get(me) == jobs_held and self._value != enabled)
            if gives_way:  # every hold of this thread is its job's: let go of them all for the block
                for _ in range(jobs_held):
                    self._release(me)
            elif self._owners.get(me) and self._value != enabled:
                raise RuntimeError("a TF32 block nested in a block with the other setting would wait for itself")
            self._acquire(me, enabled)
            if job:
                self._jobs[me] = enabled
                self._job_holds[me] = jobs_held + 1
        try:
            yield
        finally:
            with self._cond:
                self._release(me)
                if job:
                    self._job_holds[me] -= 1
                    if not self._job_holds[me]:
                        del self._job_holds[me], self._jobs[me]
                elif gives_way:
                    for _ in range(jobs_held):
                        self._acquire(me, self._jobs[me])


_TF32 = _SharedSetting()


@contextmanager
def tf32_state(enabled: bool) -> Iterator[bool]:
    """Hold the TF32 setting at `enabled` for a block, shared with jobs wanting the same; yields the setting."""
    with _TF32.hold(enabled):
        yield tf32_enabled()


@contextmanager
def job_precision() -> Iterator[None]:
    """A CUDA job's float32 setting for its whole length: TF32 off (IEEE), shared with every job wanting it.

    Training, the Why-parallel sections, the roofline's probes and every other float32 CUDA path of a job
    assume it without asking; without this hold they would inherit "TF32 on" from a sweep timing another
    GPU of the process at the time, and come out several times faster on an A100. A block of the job
    itself asking for TF32 on (a sweep's TF32 series) waits for the other jobs' IEEE blocks to end.
    """
    with _TF32.hold(False, job=True):
        yield
