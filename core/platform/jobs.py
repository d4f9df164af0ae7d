"""The one job protocol: how every long-running core entry point hears its caller and holds its devices.

A sweep, a training run, a Why-parallel section (and every feature added later) takes one
`JobHooks` and opens `run_job(devices, hooks, label=...)` around its timed work. Only this layer
takes device locks: pages and the CLI pass hooks (draw the waiting line, draw progress, press
Stop) and never lock, so there is one place that decides who runs, for how long, and what a stop
means.

Inside the job, core code calls `job.report(...)` as results arrive (so a caller that is
interrupted keeps them), and between steps either `job.check()` (raise and unwind: sections) or
`job.stop_requested()` (return what was measured, marked stopped: sweeps and training).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import torch

from core.platform.device_lock import Job, JobCancelled, WaitStatus, hold_devices
from core.platform.devices import has_cuda_context, synchronize
from core.platform.machine_load import probe_load
from core.platform.memory import give_back_heap, release_device_memory, release_pending_cache
from core.platform.precision import job_precision
from core.platform.quiet_work import timed_job
from core.results.load import MachineLoad

T = TypeVar("T")
STOPPED_BY_USER = "stopped by the user"


@dataclass(frozen=True)
class Progress(Generic[T]):
    """One step of a job: how far it is, a line for people, and what just arrived (kept if the user stops)."""

    done: int  # steps finished
    total: int  # steps planned (0: unknown)
    message: str  # e.g. "timing n=1,024 on cpu float32 (3 of 12 done)"
    item: T | None = None  # what this step produced: a MatmulPoint, a TrainEpoch, a section's partial result

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0


ProgressCallback = Callable[[Progress[Any]], None]  # Any: each job says what its items are
WaitCallback = Callable[[WaitStatus], None]
StartCallback = Callable[[Job], None]
StopCheck = Callable[[], bool]


@dataclass(frozen=True)
class JobHooks:
    """Who listens to a running job; core never knows whether it is a page, the CLI or a test.

    Every field is optional: `JobHooks()` runs a job silently to the end (or to its time cap).
    """

    on_progress: ProgressCallback | None = None  # every step, from the job's thread
    on_wait: WaitCallback | None = None  # on every poll while the job waits in line for a device
    on_start: StartCallback | None = None  # once the devices are held, before any work
    should_stop: StopCheck | None = None  # the user's Stop (or a closed tab): asked while waiting and between steps
    max_job_s: float | None = None  # the per-job cap; None: GPU_VS_CPU_MAX_JOB_S, else 600 s


class WaitCancelled(JobCancelled):
    """The user left the line before the job held its devices: nothing ran."""


@dataclass(frozen=True)
class RunningJob:
    """A job holding its devices: what core code consults between steps."""

    lock: Job
    hooks: JobHooks
    load: MachineLoad | None = None  # how busy the machine was as the job started (timed jobs only)

    @property
    def devices(self) -> tuple[str, ...]:
        return self.lock.devices

    @property
    def waited_s(self) -> float:
        return self.lock.waited_s

    @property
    def timed_out(self) -> bool:
        return self.lock.timed_out

    @property
    def limit_message(self) -> str:
        return self.lock.limit_message

    def stop_requested(self) -> bool:
        """True once the user pressed Stop or the job ran past its cap: finish the step, return what you have."""
        stop = self.hooks.should_stop
        return self.lock.timed_out or (stop is not None and bool(stop()))

    def stop_reason(self) -> str:
        """Why `stop_requested()` said stop, for the result a stopped job returns: the cap's message, else Stop."""
        return self.lock.limit_message if self.lock.timed_out else STOPPED_BY_USER

    def check(self) -> None:
        """Between steps of a job that unwinds when stopped: JobCancelled on Stop, JobTimedOut past the cap."""
        stop = self.hooks.should_stop
        if stop is not None and stop():
            raise JobCancelled(f"{STOPPED_BY_USER}; the steps finished so far are kept")
        self.lock.check()

    def report(self, progress: Progress[T]) -> None:
        if self.hooks.on_progress is not None:
            self.hooks.on_progress(progress)


def release_job_memory(devices: Iterable[str]) -> None:
    """Hand the blocks torch's allocator cached for a job on a GPU back, while the job still holds it, and
    the heap pages a job on the CPU freed (core.platform.memory.give_back_heap).

    After the lock is released another job may already be timing that GPU, and emptying the cache
    (cudaFree, which waits for the device) would land inside its measurement. torch's cache is one for
    every GPU of the process, so the release itself waits while another job of this process times a GPU
    (core.platform.memory); a job without a GPU hands back a release put off that way.
    """
    devices = list(devices)
    gpus = [name for name in dict.fromkeys(devices) if name != "cpu"]
    for name in [g for g in gpus if not g.startswith("cuda")] + [g for g in gpus if g.startswith("cuda")][:1]:
        release_device_memory(_torch_device(name))
    if not any(g.startswith("cuda") for g in gpus):
        release_pending_cache()
    if "cpu" in devices:
        give_back_heap()  # the pages of a CPU job's freed matrices (core.platform.memory)


def _torch_device(name: str) -> torch.device:
    """'cuda:1' as torch's device; a GPU held by its physical name ('cuda-GPU-...') as 'cuda' (this process's)."""
    return torch.device("cuda") if name.startswith("cuda-") else torch.device(name)


def synchronize_gpus(devices: Iterable[str]) -> None:
    """Wait for the work a job queued on its GPUs before it lets them go: a stopped job breaks out of its
    loop with kernels still queued, which the next job's first sample would otherwise absorb. Only GPUs
    this process has a context on are waited for (a launcher holding its ranks' GPUs creates none)."""
    for name in dict.fromkeys(devices):
        if name.startswith("cuda-"):
            continue  # another process's GPU, held for it by its physical name
        device = torch.device(name)
        if device.type == "mps" or (device.type == "cuda" and has_cuda_context(device.index or 0)):
            synchronize(device)


def _settle(devices: list[str]) -> Callable[..., bool]:
    """The exit step that synchronizes a job's GPUs and releases their caches; an error there is the job's
    own unless the job is already ending with one (a dead context fails the same way a second time)."""
    def settle(exc_type: type[BaseException] | None, *_: object) -> bool:
        try:
            synchronize_gpus(devices)
            release_job_memory(devices)
        except Exception:  # re-raised below unless the job's own error is on its way
            if exc_type is None:
                raise
        return False
    return settle


@contextmanager
def run_job(devices: Iterable[str], hooks: JobHooks | None = None, *, label: str,
            measure_load: bool = False, needed_cores: int | None = None) -> Iterator[RunningJob]:
    """Wait in line for `devices` (first come, first served), hold them for the block, release on any exit.

    `measure_load`: probe the machine once the devices are held (`job.load`), busy by the cores the job
    keeps busy (`needed_cores`, None: every core).

    `label` says what runs ("matmul sweep") to those waiting behind it. Raises WaitCancelled if
    `hooks.should_stop` says stop while the job is still waiting; JobTimedOut/JobCancelled come
    from `RunningJob.check()` inside the block.
    """
    hooks = hooks or JobHooks()
    devices = list(devices)
    status = WaitStatus(on_change=hooks.on_wait, should_cancel=hooks.should_stop)
    with ExitStack() as stack:
        stack.enter_context(timed_job())  # the server's quiet work (exports, imports) stops while a job waits or runs
        try:  # only a stop while waiting means "left the line"; one raised inside the block is the job's own
            lock = stack.enter_context(hold_devices(devices, on_wait=status.on_wait, should_cancel=status.should_cancel,
                                                    max_job_s=hooks.max_job_s, label=label))
        except JobCancelled as exc:
            raise WaitCancelled(str(exc)) from None
        if any(name.startswith("cuda") for name in devices):
            stack.enter_context(job_precision())  # after the devices: a job waiting for one holds nothing
        stack.push(_settle(devices))  # runs before the lock is let go: see release_job_memory
        if hooks.on_start is not None:
            hooks.on_start(lock)
        yield RunningJob(lock, hooks, probe_load(needed=needed_cores) if measure_load else None)
