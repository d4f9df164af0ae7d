"""One data-parallel worker of the mini-batch classifier, as `torchrun` starts it: the marbles split among friends.

Every worker builds the same features and the same initial weights from the seed, walks the same
shuffled order (`training.batch_order`), and takes its strided share of each global batch, the way
`DistributedSampler` splits rows (a short last batch is padded from the epoch's start, as that sampler
pads). `DistributedDataParallel` averages the gradients after every backward, so every worker takes
the same step and ends with the same weights; a global batch of B rows over K workers is the
one-process run's batch of B up to the order in which floats are summed. The all-reduce is timed in a
DDP communication hook, which is the communication cost the scaling chart shows. Metrics are summed
across workers; only rank 0 prints (one `EVENT_PREFIX` JSON line per event, which the launching job
reads through core.platform.torchrun) and saves.

Run as `python -m core.classifier.distributed --data ... --config JSON` under torchrun, which sets
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; README "More than one machine".
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from core.classifier.datasets import load_source
from core.classifier.features import Features
from core.classifier.model import (
    ClassifierConfig, SparseBatch, build_model, forward, make_batch, make_sgd, resolve_input_mode,
)
from core.classifier.training import DIVERGED, EVAL_BATCH, batch_order, features_for
from core.errors import DashboardError
from core.platform import clock
from core.platform.devices import device_key
from core.platform.timing import torch_threads
from core.platform.torchrun import DEFAULT_TIMEOUT_S, Emit, WorkerEnv, exit_now, process_group, worker_main
from core.results.jsonio import to_jsonable
from core.results.train import TrainEpoch, TrainRun


def worker_device(requested: str, env: WorkerEnv) -> torch.device:
    """One device per worker: the CPU for all of them, or the GPU numbered by the local rank."""
    kind = "cuda" if requested == "auto" and torch.cuda.is_available() else requested.split(":")[0]
    if kind == "auto" or kind == "cpu":
        return torch.device("cpu")
    if kind == "cuda":
        if env.local_rank >= torch.cuda.device_count():
            raise DashboardError(f"worker {env.local_rank} has no GPU: this machine has {torch.cuda.device_count()}; "
                                 "start at most one worker per GPU")
        return torch.device("cuda", env.local_rank)
    raise DashboardError(f"data-parallel workers run on cpu or cuda, not {requested}")


def backend_for(device: torch.device) -> str:
    """NCCL between GPUs (it moves gradients GPU to GPU), gloo between CPU processes."""
    return "nccl" if device.type == "cuda" else "gloo"


def shard_rows(order: np.ndarray, batch: int, batch_size: int, rank: int, world_size: int) -> np.ndarray:
    """This worker's rows of global batch `batch`: every world_size-th, padded so every worker gets as many."""
    rows = order[batch * batch_size:(batch + 1) * batch_size]
    pad = (-len(rows)) % world_size
    if pad:
        rows = np.concatenate([rows, order[:pad]])
    return rows[rank::world_size]


class _Net(nn.Module):
    """The lecture's network behind one `forward(batch)`, the call DDP wraps to sync gradients."""

    def __init__(self, model: nn.Sequential) -> None:
        super().__init__()
        self.model = model

    def forward(self, batch: SparseBatch | torch.Tensor) -> torch.Tensor:
        return forward(self.model, batch)


class AllReduceTimer:
    """DDP communication hook state: seconds spent averaging gradient buckets since the last reset."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.seconds = 0.0

    def average(self, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        """Average one bucket, synchronously so its time is its own (no overlap with backward to blur it)."""
        tensor = bucket.buffer()
        t0 = time.perf_counter()
        dist.all_reduce(tensor)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.seconds += time.perf_counter() - t0
        tensor.div_(dist.get_world_size())
        done: torch.futures.Future[torch.Tensor] = torch.futures.Future()
        done.set_result(tensor)
        return done


def _sum(values: list[float], device: torch.device) -> list[float]:
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return [float(v) for v in t.cpu()]


def _evaluate(model: nn.Sequential, x: sp.csr_matrix, y: np.ndarray, mode: str, device: torch.device,
              env: WorkerEnv) -> tuple[float, float]:
    """(mean loss, accuracy) over all rows: each worker scores every world_size-th row, the sums are added."""
    mine = np.arange(env.rank, x.shape[0], env.world_size)
    loss_sum, correct = 0.0, 0.0
    with torch.no_grad():
        for start in range(0, len(mine), EVAL_BATCH):
            rows = mine[start:start + EVAL_BATCH]
            p = forward(model, make_batch(x[rows], mode).to(device))
            target = torch.from_numpy(y[rows].astype(np.float32)).to(device)
            loss_sum += float(nn.functional.binary_cross_entropy(p, target, reduction="sum"))
            correct += float(((p > 0.5).float() == target).sum())
    loss_sum, correct = _sum([loss_sum, correct], device)
    n = x.shape[0]
    return (loss_sum / n, correct / n) if n else (math.nan, math.nan)


@dataclass(frozen=True, eq=False)
class WorkerResult:
    run: TrainRun  # what rank 0 reports (every rank builds the same)
    model: nn.Sequential  # this worker's final weights, on the CPU


def train_data_parallel(features: Features, config: ClassifierConfig, device: torch.device, env: WorkerEnv,
                        emit: Emit) -> WorkerResult:
    """Train this worker's share under DDP; keeps the last epoch (or the lowest validation loss, as training.py)."""
    mode = resolve_input_mode(config.input_mode, device)
    model = build_model(features.vocab_size, config.hidden, config.seed).to(device)
    ddp = DistributedDataParallel(_Net(model), device_ids=[device.index] if device.type == "cuda" else None)
    timer = AllReduceTimer(device)
    # a lambda: DDP inspects the hook's annotations, which `from __future__ import annotations` turns into strings
    ddp.register_comm_hook(None, lambda _state, bucket: timer.average(bucket))
    optimizer = make_sgd(ddp.parameters(), config)
    loss_fn = nn.BCELoss()
    y_train = features.y_train.astype(np.float32)
    n_batches = -(-features.n_train // config.batch_size)
    epochs: list[TrainEpoch] = []
    best: tuple[float, int, dict[str, torch.Tensor]] | None = None
    for epoch, order in enumerate(batch_order(features.n_train, config.seed, config.epochs), start=1):
        timer.seconds = 0.0
        loss_sum, seen = 0.0, 0
        t0 = clock.now(device)
        for b in range(n_batches):
            rows = shard_rows(order, b, config.batch_size, env.rank, env.world_size)
            batch = make_batch(features.x_train[rows], mode).to(device)
            target = torch.from_numpy(y_train[rows]).to(device)
            try:
                loss = loss_fn(ddp(batch), target)
            except RuntimeError as exc:  # BCELoss refuses NaN outputs: the weights overflowed
                if "between 0 and 1" not in str(exc):
                    raise
                raise DashboardError(DIVERGED.format(lr=config.lr)) from None
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += float(loss.detach()) * len(rows)
            seen += len(rows)
        seconds = clock.now(device) - t0
        loss_total, seen_total, allreduce_total = _sum([loss_sum, float(seen), timer.seconds], device)
        slowest = torch.tensor([seconds], dtype=torch.float64, device=device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)  # the epoch ends when the slowest worker's does
        train_loss = loss_total / seen_total
        if not math.isfinite(train_loss):
            raise DashboardError(DIVERGED.format(lr=config.lr))
        model.eval()
        val_loss = (_evaluate(model, features.x_val, features.y_val, mode, device, env)[0]
                    if features.n_val else None)
        test_loss, test_acc = _evaluate(model, features.x_test, features.y_test, mode, device, env)
        model.train()
        record = TrainEpoch(epoch, train_loss, test_loss, test_acc, float(slowest.item()),
                            allreduce_seconds=allreduce_total / env.world_size)
        epochs.append(record)
        emit({"event": "epoch", "epoch": record.to_json(), "val_loss": val_loss, "of": config.epochs})
        score = val_loss if val_loss is not None else -epoch
        if best is None or score < best[0]:
            best = (score, epoch, {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()})
    kept = build_model(features.vocab_size, config.hidden, config.seed)
    best_epoch = None
    if best is not None:
        kept.load_state_dict(best[2])
        best_epoch = best[1]
    run = TrainRun(device=device_key(device), n_train=features.n_train, n_test=features.n_test,
                   vocab_size=features.vocab_size, epochs=tuple(epochs),
                   test_accuracy=epochs[best_epoch - 1].test_accuracy if best_epoch else None,
                   train_seconds=sum(e.seconds or 0.0 for e in epochs), settings=to_jsonable(asdict(config)),
                   preset=config.preset, workers=env.world_size, backend=backend_for(device))
    final = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
    last = build_model(features.vocab_size, config.hidden, config.seed)
    last.load_state_dict(final)
    return WorkerResult(run, last)


def config_from_json(text: str) -> ClassifierConfig:
    """The launching job's config (`asdict` as JSON); ClassifierConfig checks every value again."""
    values = json.loads(text)
    if not isinstance(values, dict):
        raise DashboardError("--config must be a JSON object of ClassifierConfig fields")
    return ClassifierConfig(**values)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m core.classifier.distributed",
                                description="one data-parallel worker of the review classifier (start it with torchrun)")
    p.add_argument("--data", required=True, help="the data set: a built-in name already downloaded, or a path")
    p.add_argument("--config", required=True, help="ClassifierConfig fields as a JSON object")
    p.add_argument("--threads", type=int, default=1, help="CPU threads of this worker")
    p.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S,
                   help="fail when a collective waits this long for a worker (a hung or lost worker)")
    p.add_argument("--dump-weights", metavar="DIR", help="save every rank's final weights as DIR/rank<R>.pt (checks)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def body(env: WorkerEnv, emit: Emit) -> dict[str, object]:
        config = config_from_json(args.config)
        device = worker_device(config.device, env)
        if device.type == "cuda":
            torch.cuda.set_device(device)
        with process_group(backend_for(device), args.timeout_s), torch_threads(args.threads):
            features = features_for(load_source(args.data, allow_download=False), config)
            emit({"event": "start", "n_train": features.n_train, "n_val": features.n_val,
                  "n_test": features.n_test, "vocab_size": features.vocab_size, "workers": env.world_size,
                  "backend": backend_for(device), "threads": torch.get_num_threads()})
            result = train_data_parallel(features, config, device, env, emit)
        if args.dump_weights:
            Path(args.dump_weights).mkdir(parents=True, exist_ok=True)
            torch.save(result.model.state_dict(), Path(args.dump_weights) / f"rank{env.rank}.pt")
        return {"event": "result", "run": result.run.to_json()}

    return worker_main(body)


if __name__ == "__main__":
    exit_now(main())
