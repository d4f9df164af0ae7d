"""Data-parallel training under torchrun on CPU with gloo: the split, the launcher, a dead worker, two agents.

Each test that launches workers starts real `torch.distributed.run` processes on toy data; they
take seconds each on two cores, so there are few of them and each checks several things.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
import torch

from core.classifier.distributed import backend_for, shard_rows
from core.platform.torchrun import EVENT_PREFIX, WorkerEnv, worker_env
from core.classifier.model import ClassifierConfig
from core.classifier.training import features_for, train
from core.classifier.workers import (
    check_workers, launcher_command, train_with_workers, worker_devices, worker_threads,
)
from core.cli import main
from core.errors import DashboardError
from core.platform.device_lock import DEFAULT_MAX_JOB_S, current_holder
from core.platform.jobs import JobHooks
from core.results.train import TrainEpoch, TrainRun
from tests.review_fixtures import toy_reviews, write_rt_folder

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ClassifierConfig(device="cpu", epochs=4, lr=0.3, batch_size=16, hidden=4, ngrams=1, threads=1)


@pytest.fixture(scope="module")
def toy_folder(tmp_path_factory) -> Path:
    reviews = toy_reviews(60)
    pos = [t for t, y in zip(reviews.texts, reviews.labels) if y == 1]
    neg = [t for t, y in zip(reviews.texts, reviews.labels) if y == 0]
    return write_rt_folder(tmp_path_factory.mktemp("toy") / "rt", pos, neg)


def _worker_pids() -> list[int]:
    """This test's worker processes (children of the launcher it started)."""
    return [p.pid for p in psutil.Process().children(recursive=True)
            if "core.classifier.distributed" in " ".join(p.cmdline()) and "torch.distributed.run" not in p.cmdline()]


def _alive(pids: list[int]) -> list[int]:
    return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def test_shard_rows_split_every_global_batch_evenly():
    order = np.arange(10)
    shares = [shard_rows(order, 1, 7, r, 2) for r in range(2)]  # rows 7, 8, 9 padded with row 0
    assert [s.tolist() for s in shares] == [[7, 9], [8, 0]]
    full = np.concatenate([shard_rows(order, 0, 7, r, 3) for r in range(3)])
    assert sorted(full.tolist()) == [0, 0, 1, 1, 2, 3, 4, 5, 6]  # 7 rows padded from the start to 9, 3 each
    assert shard_rows(order, 0, 4, 0, 1).tolist() == [0, 1, 2, 3]  # one worker: the one-process batch


def test_worker_settings():
    assert worker_env({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}) == WorkerEnv(1, 2, 1)
    with pytest.raises(DashboardError, match="torchrun"):
        worker_env({})
    assert backend_for(torch.device("cpu")) == "gloo" and backend_for(torch.device("cuda", 1)) == "nccl"
    assert worker_threads(2, cpus=8) == 4 and worker_threads(4, cpus=2) == 1 and worker_threads(2, 3) == 3
    assert worker_devices("cpu", 4, 0) == ["cpu"] and worker_devices("auto", 2, 0) == ["cpu"]
    assert worker_devices("cuda", 2, 2) == ["cuda:0", "cuda:1"] and worker_devices("auto", 1, 1) == ["cuda:0"]
    with pytest.raises(DashboardError, match="3 GPU workers need 3 GPUs"):
        worker_devices("cuda", 3, 2)
    with pytest.raises(DashboardError, match="lecture"):
        check_workers(2, ClassifierConfig(preset="lecture"))
    with pytest.raises(DashboardError, match="between 1 and"):
        check_workers(0, CONFIG)
    command = launcher_command(2, "rt", CONFIG, threads=1)
    assert command[1:6] == ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    assert json.loads(command[command.index("--config") + 1])["batch_size"] == 16


def test_schema_reads_old_and_new_train_objects():
    epoch = TrainEpoch(1, 0.5, 0.4, 0.9, 1.0, allreduce_seconds=0.25)
    run = TrainRun("cpu", 10, 5, 20, (epoch,), 0.9, 1.0, workers=2, backend="gloo")
    back = TrainRun.from_json(run.to_json(), "run")
    assert (back.workers, back.backend, back.epochs[0].allreduce_seconds) == (2, "gloo", 0.25)
    old = TrainRun("cpu", 10, 5, 20, (TrainEpoch(1, 0.5, 0.4, 0.9, 1.0),), 0.9, 1.0).to_json()
    assert not {"workers", "backend"} & set(old) and "allreduce_seconds" not in old["epochs"][0]
    assert TrainRun.from_json(old, "old").workers is None
    with pytest.raises(DashboardError, match="backend"):
        TrainRun.from_json({**run.to_json(), "backend": "mpi"}, "run")


@pytest.mark.slow
def test_two_workers_match_each_other_and_one_worker(toy_folder, tmp_path, capsys):
    weights = tmp_path / "weights"
    progress: list = []
    two = train_with_workers(str(toy_folder), CONFIG, 2, JobHooks(on_progress=progress.append),
                             extra=["--dump-weights", str(weights)])
    assert (two.workers, two.backend, len(two.epochs), two.stopped) == (2, "gloo", 4, False)
    assert [p.item.epoch for p in progress] == [1, 2, 3, 4]
    assert all(e.allreduce_seconds is not None and 0 < e.allreduce_seconds <= e.seconds for e in two.epochs)
    rank0, rank1 = (torch.load(weights / f"rank{r}.pt") for r in range(2))
    assert rank0.keys() == rank1.keys() and all(torch.equal(rank0[k], rank1[k]) for k in rank0)

    # K = 1 at the same global batch, through the CLI's --json
    assert main(["train", "--data", str(toy_folder), "--workers", "1", "--device", "cpu", "--epochs", "4",
                 "--lr", "0.3", "--batch-size", "16", "--hidden", "4", "--ngrams", "1", "--threads", "1",
                 "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["workers"] == 1 and one["backend"] == "gloo" and len(one["epochs"]) == 4
    assert all(isinstance(e["allreduce_seconds"], float) for e in one["epochs"])
    assert abs(one["test_accuracy"] - two.test_accuracy) <= 0.01
    assert two.test_accuracy > 0.9  # the toy set is separable: the run really learned
    # one worker walks the one-process run's batches in its order: the same accuracy as training.train
    single = train(features_for(toy_reviews(60), CONFIG), CONFIG)
    assert abs(single.test_accuracy - one["test_accuracy"]) <= 0.01
    assert _worker_pids() == [] and current_holder("cpu") is None


@pytest.mark.slow
def test_killed_worker_is_one_clear_error_and_frees_the_lock(toy_folder):
    seen: list[int] = []

    def kill_one(step) -> None:
        if not seen:
            seen.extend(_worker_pids())
            os.kill(seen[-1], signal.SIGKILL)

    config = ClassifierConfig(**{**CONFIG.__dict__, "epochs": 5000})
    with pytest.raises(DashboardError, match=r"a training worker failed: the torchrun launcher exited with code \d"):
        train_with_workers(str(toy_folder), config, 2, JobHooks(on_progress=kill_one))
    assert len(seen) == 2
    assert current_holder("cpu") is None
    deadline = time.monotonic() + 10
    while _alive(seen) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive(seen) == []


@pytest.mark.slow
def test_a_hung_worker_fails_the_run_at_the_process_group_timeout(toy_folder):
    """A worker frozen mid-run (SIGSTOP): the other's collective times out, torchrun ends both, one message."""
    seen: list[int] = []

    def freeze_one(step) -> None:
        if not seen:
            seen.extend(_worker_pids())
            os.kill(seen[-1], signal.SIGSTOP)

    config = ClassifierConfig(**{**CONFIG.__dict__, "epochs": 5000})
    started = time.monotonic()
    with pytest.raises(DashboardError, match=r"a training worker failed: the torchrun launcher exited with code \d"):
        train_with_workers(str(toy_folder), config, 2, JobHooks(on_progress=freeze_one), timeout_s=3)
    # The 3 s collective timeout, then torchrun's SIGTERM grace for the stopped worker: ~35 s idle, 60-85 s at
    # load 5-7 here. The job cap (600 s) is the other way it could have ended, so half of it tells them apart.
    assert time.monotonic() - started < DEFAULT_MAX_JOB_S / 2, "found by the 3 s timeout, not by the job cap"
    assert len(seen) == 2 and current_holder("cpu") is None
    deadline = time.monotonic() + 10
    while _alive(seen) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive(seen) == []


@pytest.mark.slow
def test_stop_ends_every_worker_and_keeps_finished_epochs(toy_folder):
    seen: list[int] = []

    def remember(step) -> None:
        if not seen:
            seen.extend(_worker_pids())

    config = ClassifierConfig(**{**CONFIG.__dict__, "epochs": 5000})
    run = train_with_workers(str(toy_folder), config, 2,
                             JobHooks(on_progress=remember, should_stop=lambda: bool(seen)))
    assert run.stopped and 1 <= len(run.epochs) < 5000 and run.workers == 2
    assert len(seen) == 2 and _alive(seen) == [] and _worker_pids() == []
    assert current_holder("cpu") is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_agents_on_loopback_rendezvous_and_train(toy_folder):
    """Two torchrun agents as two "nodes" (--nnodes 2, c10d rendezvous on a loopback port): the README's command."""
    port = _free_port()
    config = json.dumps({**CONFIG.__dict__, "epochs": 2})
    agents = [subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
         "--node-rank", str(node), "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
         "--rdzv-id", "toy", "-m", "core.classifier.distributed", "--data", str(toy_folder), "--config", config,
         "--threads", "1", "--timeout-s", "60"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))) for node in range(2)]
    try:
        outs = [a.communicate(timeout=120) for a in agents]
    finally:
        for a in agents:
            a.kill()
    assert [a.returncode for a in agents] == [0, 0], [err[-2000:] for _, err in outs]
    results = [json.loads(line[len(EVENT_PREFIX):]) for out, _ in outs for line in out.splitlines()
               if line.startswith(EVENT_PREFIX) and '"result"' in line]
    assert len(results) == 1  # only rank 0 reports
    run = TrainRun.from_json(results[0]["run"], "run")
    assert run.workers == 2 and run.backend == "gloo" and len(run.epochs) == 2


def test_a_finished_worker_flushes_then_skips_exit_time_teardown(monkeypatch):
    """exit_now: what was printed reaches the launcher before os._exit drops the process."""
    import core.platform.torchrun as distributed

    calls: list[object] = []
    monkeypatch.setattr(distributed.sys.stdout, "flush", lambda: calls.append("stdout"))
    monkeypatch.setattr(distributed.sys.stderr, "flush", lambda: calls.append("stderr"))
    monkeypatch.setattr(distributed.os, "_exit", lambda code: calls.append(code))
    distributed.exit_now(3)
    assert calls == ["stdout", "stderr", 3]


@pytest.mark.parametrize("env, says", [
    ({"RANK": "0"}, "WORLD_SIZE is not set"), ({"WORLD_SIZE": "2"}, "RANK is not set"),
    ({}, "RANK and WORLD_SIZE are not set"), ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK=2 with WORLD_SIZE=2"),
    ({"RANK": "x", "WORLD_SIZE": "2"}, "RANK='x' is not a whole number"),
    ({"RANK": "0", "WORLD_SIZE": "0"}, "WORLD_SIZE=0"), ({"RANK": "-1", "WORLD_SIZE": "2"}, "RANK='-1'"),
    ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}, "LOCAL_RANK=1"),
])
def test_each_wrong_torchrun_variable_is_named_at_once(env, says):
    """Issue 30: RANK set without WORLD_SIZE said both were unset; RANK >= WORLD_SIZE waited out the timeout."""
    with pytest.raises(DashboardError, match=re.escape(says)):
        worker_env(env)


def test_a_join_that_failed_early_says_when_not_the_timeout():
    from types import SimpleNamespace

    from core.matmul.rank_worker import _join_failed

    rank = SimpleNamespace(env=WorkerEnv(1, 2, 1), host="lab")
    early = _join_failed(rank, 10.0, 2.04, RuntimeError("Connection refused"))
    assert early == "rank 1 on lab: could not join the other ranks after 2.0 s (Connection refused)"
    assert "waited 10 s" in _join_failed(rank, 10.0, 10.01, RuntimeError("timed out"))
