"""Start K data-parallel training workers on this machine with the real launcher, and hold their devices meanwhile.

`python -m core train --workers K` and a page call `train_with_workers`. It takes the device lock for
every device the workers use (the CPU, or cuda:0..K-1) through `run_job`, then starts
`python -m torch.distributed.run --standalone --nproc-per-node K -m core.classifier.distributed ...`
as a subprocess in its own process group. Rank 0's event lines come back on the launcher's stdout
and become progress; a Stop, Ctrl+C or any error ends the whole group (launcher and workers), so no
worker outlives the job that holds the lock. A worker that dies makes torchrun end the others and
exit non-zero: that exit code becomes one DashboardError.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import IO, Any

from core.classifier.distributed import DEFAULT_TIMEOUT_S, EVENT_PREFIX
from core.classifier.model import ClassifierConfig
from core.errors import DashboardError
from core.platform.device_lock import JobCancelled
from core.platform.jobs import JobHooks, Progress, RunningJob, run_job
from core.results.jsonio import to_jsonable
from core.results.train import TrainEpoch, TrainRun

ROOT = Path(__file__).resolve().parents[2]  # the folder holding `core`: the workers import it from there
MAX_WORKERS = 64
POLL_S = 0.2  # how often a Stop is checked while waiting for the next line
TERMINATE_GRACE_S = 5.0  # SIGTERM first (torchrun forwards it to its workers), then SIGKILL


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
    """torchrun on one machine (`--standalone`: a local rendezvous on a free port) running K workers."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(workers),
            "-m", "core.classifier.distributed", "--data", data, "--config", json.dumps(to_jsonable(asdict(config))),
            "--threads", str(threads), "--timeout-s", f"{timeout_s:g}", *extra]


def check_workers(workers: int, config: ClassifierConfig) -> None:
    if not 1 <= workers <= MAX_WORKERS:
        raise DashboardError(f"--workers must be between 1 and {MAX_WORKERS}, not {workers}")
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


def _environment(threads: int) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))  # torchrun would otherwise force 1 and warn
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _reader(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def end_group(proc: subprocess.Popen[str], grace_s: float = TERMINATE_GRACE_S) -> None:
    """End the launcher and every worker: its whole process group, politely, then for sure."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
    try:  # workers the launcher left behind (it died first) are still in the group
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _Follower:
    """What rank 0 said so far: the start facts, the finished epochs, the result or its error."""

    def __init__(self, job: RunningJob, workers: int) -> None:
        self.job = job
        self.workers = workers
        self.start: dict[str, Any] | None = None
        self.epochs: list[TrainEpoch] = []
        self.result: TrainRun | None = None
        self.error: str | None = None

    def line(self, text: str) -> None:
        if not text.startswith(EVENT_PREFIX):
            print(text, end="", file=sys.stderr, flush=True)  # the launcher's and workers' own lines
            return
        event = json.loads(text[len(EVENT_PREFIX):])
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
    """'epoch 2/10 on 2 workers: test accuracy 0.812, 0.53 s (all-reduce 0.10 s)'."""
    return (f"epoch {record.epoch}/{total} on {workers} workers: test accuracy {record.test_accuracy or 0:.3f}, "
            f"{record.seconds or 0:.2f} s (all-reduce {record.allreduce_seconds or 0:.2f} s)")


def _launch_and_follow(command: list[str], threads: int, job: RunningJob, config: ClassifierConfig,
                       workers: int) -> TrainRun:
    proc = subprocess.Popen(command, cwd=ROOT, env=_environment(threads), stdout=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own group: one killpg ends launcher and workers
    follower = _Follower(job, workers)
    lines: queue.Queue[str | None] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    try:
        while True:
            if job.stop_requested():  # between lines, busy or idle: epochs may arrive faster than POLL_S
                end_group(proc)
                return follower.stopped_run(config)
            try:
                text = lines.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if text is None:
                break
            follower.line(text)
        code = proc.wait()
    finally:
        end_group(proc)  # Ctrl+C, an error in a hook: nothing outlives the job
    if follower.result is not None and code == 0:
        return follower.result
    if follower.error:
        raise DashboardError(follower.error)
    raise DashboardError(
        f"a training worker failed: the torchrun launcher exited with code {code} "
        f"({_exit_meaning(code)}); its report above names the rank. The devices are free again; "
        "run again, or with fewer --workers")


def _exit_meaning(code: int) -> str:
    if code < 0:
        return f"killed by signal {-code}"
    return "a worker died, hung past the process-group timeout, or raised an error" if code else "no result"

