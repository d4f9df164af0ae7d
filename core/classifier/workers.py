"""Start K data-parallel training workers on this machine with the real launcher, and hold their devices meanwhile.

`python -m core train --workers K` and a page call `train_with_workers`. It takes the device lock for
every device the workers use (the CPU, or cuda:0..K-1) through `run_job`, then starts
`python -m torch.distributed.run --standalone --nproc-per-node K -m core.classifier.distributed ...`
as a subprocess (core.platform.torchrun, which both multi-process features share). Rank 0's events come back
and become progress; a Stop, Ctrl+C or any error ends the whole group (launcher and workers), so no
worker outlives the job that holds the lock. A worker that dies makes torchrun end the others and
exit non-zero: that exit code becomes one DashboardError.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from core.classifier.model import ClassifierConfig
from core.errors import DashboardError
from core.platform import torchrun
from core.platform.device_lock import JobCancelled
from core.platform.jobs import JobHooks, Progress, RunningJob, run_job
from core.platform.machine_load import usable_cores
from core.platform.torchrun import DEFAULT_TIMEOUT_S
from core.results.jsonio import to_jsonable
from core.results.train import TrainEpoch, TrainRun
from core.platform.units import percent, seconds

MAX_WORKERS = 64


def worker_threads(workers: int, requested: int | None = None, cpus: int | None = None) -> int:
    """Each worker's CPU threads: the user's number, else the cores shared out (cpu_count // K, at least 1)."""
    if requested is not None:
        return requested
    return max(1, (cpus if cpus is not None else os.cpu_count() or 1) // workers)


def worker_devices(device: str, workers: int, cuda_count: int) -> list[str]:
    """The devices the launching job locks: all workers share the CPU; each GPU worker has its own GPU."""
    kind = device.split(":")[0]
    if kind == "auto":
        kind = "cuda" if cuda_count else "cpu"
    if kind == "cpu":
        return ["cpu"]
    if kind == "cuda":
        if workers > cuda_count:
            raise DashboardError(f"{workers} GPU workers need {workers} GPUs; this machine has {cuda_count}. "
                                 "Use fewer --workers, or --device cpu")
        return [f"cuda:{i}" for i in range(workers)]
    raise DashboardError(f"data-parallel workers run on cpu or cuda, not {device}")


def launcher_command(workers: int, data: str, config: ClassifierConfig, threads: int,
                     timeout_s: float = DEFAULT_TIMEOUT_S, extra: Sequence[str] = ()) -> list[str]:
    """torchrun on one machine running K training workers (core.classifier.distributed)."""
    return torchrun.launcher_command(workers, "core.classifier.distributed", [
        "--data", data, "--config", json.dumps(to_jsonable(asdict(config))),
        "--threads", str(threads), "--timeout-s", f"{timeout_s:g}", *extra])


def check_workers(workers: int, config: ClassifierConfig) -> None:
    if not 1 <= workers <= MAX_WORKERS:
        raise DashboardError(f"--workers must be between 1 and {MAX_WORKERS}, not {workers}")
    most = max(2, 2 * usable_cores())  # as Why parallel's processes: more only take turns on the same cores
    if workers > most:
        raise DashboardError(f"--workers {workers} is more than twice this machine's {usable_cores()} usable cores; "
                             f"use at most {most}: more processes only take turns on the same cores")
    if config.preset != "minibatch":
        raise DashboardError("--workers trains the minibatch preset; drop --preset lecture or --workers")


def train_with_workers(data: str, config: ClassifierConfig, workers: int, hooks: JobHooks | None = None, *,
                       cuda_count: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                       extra: Sequence[str] = ()) -> TrainRun:
    """Train on `workers` processes while holding their devices; the run as rank 0 reported it.

    `data` must already be on disk (a built-in set downloaded, or a path): the workers never download.
    Progress items are TrainEpoch records; a stopped run keeps its finished epochs, marked stopped.
    """
    import torch

    check_workers(workers, config)
    devices = worker_devices(config.device, workers, torch.cuda.device_count() if cuda_count is None else cuda_count)
    threads = worker_threads(workers, config.threads)
    command = launcher_command(workers, data, config, threads, timeout_s, extra)
    with run_job(devices, hooks, label=f"training run ({workers} workers)", measure_load=True) as job:
        run = _launch_and_follow(command, threads, job, config, workers)
        return replace(run, load=job.load)


class _Follower:
    """What rank 0 said so far: the start facts, the finished epochs, the result or its error."""

    def __init__(self, job: RunningJob, workers: int) -> None:
        self.job = job
        self.workers = workers
        self.start: dict[str, Any] | None = None
        self.epochs: list[TrainEpoch] = []
        self.result: TrainRun | None = None
        self.error: str | None = None

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "start":
            self.start = event
        elif kind == "epoch":
            record = TrainEpoch.from_json(event["epoch"], "epoch")
            self.epochs.append(record)
            total = int(event.get("of") or 0)
            self.job.report(Progress(record.epoch, total, describe(record, total, self.workers), item=record))
        elif kind == "result":
            self.result = TrainRun.from_json(event["run"], "result")
        elif kind == "error":
            self.error = str(event.get("message"))

    def stopped_run(self, config: ClassifierConfig) -> TrainRun:
        """The finished epochs of a stopped run, as a TrainRun marked stopped."""
        if self.start is None or not self.epochs:
            raise JobCancelled(f"{self.job.stop_reason()}; no epoch had finished")
        s = self.start
        return TrainRun(device="cpu" if s["backend"] == "gloo" else "cuda:0", n_train=s["n_train"], n_test=s["n_test"],
                        vocab_size=s["vocab_size"], epochs=tuple(self.epochs),
                        test_accuracy=self.epochs[-1].test_accuracy,
                        train_seconds=sum(e.seconds or 0.0 for e in self.epochs), stopped=True,
                        settings=to_jsonable(asdict(config)), preset=config.preset, workers=s["workers"],
                        backend=s["backend"])


def describe(record: TrainEpoch, total: int, workers: int) -> str:
    """'epoch 2/10 on 2 workers: test accuracy 81.2%, 530 ms (all-reduce 100 ms)'."""
    return (f"epoch {record.epoch}/{total} on {workers} workers: test accuracy {percent(record.test_accuracy)}, "
            f"{seconds(record.seconds or 0)} (all-reduce {seconds(record.allreduce_seconds or 0)})")


def _launch_and_follow(command: list[str], threads: int, job: RunningJob, config: ClassifierConfig,
                       workers: int) -> TrainRun:
    follower = _Follower(job, workers)
    launched = torchrun.follow(command, threads, job, follower.event)
    if launched.stopped:
        return follower.stopped_run(config)
    if follower.result is not None and launched.code == 0:
        return follower.result
    if follower.error:
        raise DashboardError(follower.error)
    code = launched.code or 0
    raise DashboardError(
        f"a training worker failed: the torchrun launcher exited with code {code} "
        f"({torchrun.exit_meaning(code)}); its report above names the rank. The devices are free again; "
        "run again, or with fewer --workers")
