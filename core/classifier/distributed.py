"""One data-parallel worker of the mini-batch classifier, as `torchrun` starts it: the marbles split among friends.

Every worker builds the same features and the same initial weights from the seed, walks the same
shuffled order (`fit.batch_order`), and takes its strided share of each global batch, the way
`DistributedSampler` splits rows (a short last batch is padded from the epoch's start, as that sampler
pads). `DistributedDataParallel` averages the gradients after every backward, so every worker takes
the same step and ends with the same weights; a global batch of B rows over K workers is the
one-process run's batch of B up to the order in which floats are summed. The loop is core.classifier.
fit's, with this module's batch plan (`Shard`). The all-reduce is timed in a DDP communication hook that
launches it asynchronously, as DDP's own `allreduce_hook` does, so backward goes on beside it: the scaling
chart shows the time an all-reduce was in flight, part of which DDP hides behind backward. Metrics are
summed across workers; only rank 0 prints (one `EVENT_PREFIX` JSON line per event, which the launching job reads through
core.platform.torchrun) and saves.

Run as `python -m core.classifier.distributed --data ... --config JSON` under torchrun, which sets
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; README "More than one machine".
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from core.classifier.datasets import load_source
from core.classifier.features import Features
from core.classifier.fit import EVAL_BATCH, MiniBatches, Step, fit
from core.classifier.model import ClassifierConfig, SparseBatch, build_model, forward, resolve_input_mode
from core.classifier.reports import run_record
from core.classifier.training import features_for
from core.errors import DashboardError
from core.platform import clock
from core.platform.devices import device_key, synchronize
from core.platform.jobs import Progress
from core.platform.timing import torch_threads
from core.platform.torchrun import (DEFAULT_TIMEOUT_S, Emit, WorkerEnv, exit_now, local_gpu_index, process_group,
                                   worker_main)
from core.results.train import TrainEpoch, TrainRun


def worker_device(requested: str, env: WorkerEnv) -> torch.device:
    """One device per worker: the CPU for all of them, or the GPU numbered by the local rank (cuda:0 where
    the launcher gave the worker one GPU of its own: torchrun.local_gpu_index)."""
    kind = "cuda" if requested == "auto" and torch.cuda.is_available() else requested.split(":")[0]
    if kind == "auto" or kind == "cpu":
        return torch.device("cpu")
    if kind == "cuda":
        index = local_gpu_index(env.local_rank, torch.cuda.device_count())
        if index is None:
            raise DashboardError(f"worker {env.local_rank} has no GPU: this machine has {torch.cuda.device_count()}; "
                                 "start at most one worker per GPU")
        return torch.device("cuda", index)
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


def covered(spans: Sequence[tuple[float, float]]) -> float:
    """Seconds covered by at least one of these (start, end) spans: buckets in flight at once count once."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


class AllReduceTimer:
    """DDP communication hook state: the seconds gradient buckets were being averaged since the last reset.

    Each bucket's all-reduce is launched asynchronously, as DDP's default hook does, so backward keeps running
    beside it (a synchronize inside the hook, as here before, took away the overlap DDP exists for, and the
    chart then showed something DDP does not do). A bucket's span runs from its gradients being ready to its
    average being done: on a GPU between CUDA events, the first recorded on the compute stream before the
    all-reduce (NCCL starts after it), the second on the stream the future's callback runs on, which waits for
    NCCL; on the CPU by the host clock, in the callback gloo runs when the all-reduce is done. Read `seconds`
    after the epoch: the spans' union (buckets in flight together count once)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._host: list[tuple[float, float]] = []
        self._events: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []

    def reset(self) -> None:
        self._host, self._events = [], []

    @property
    def seconds(self) -> float:
        if not self._events:
            return covered(self._host)
        synchronize(self.device)
        first = self._events[0][0]
        return covered([(first.elapsed_time(a) / 1e3, first.elapsed_time(b) / 1e3) for a, b in self._events])

    def average(self, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        """Average one bucket without waiting for it (DDP waits for every bucket's future before the step)."""
        tensor, world = bucket.buffer(), dist.get_world_size()
        gpu = self.device.type == "cuda"
        start = torch.cuda.Event(enable_timing=True) if gpu else None
        if start is not None:
            start.record(torch.cuda.current_stream(self.device))
        t0 = clock.read_clock()
        future = dist.all_reduce(tensor, async_op=True).get_future()

        def done(f: torch.futures.Future[list[torch.Tensor]]) -> torch.Tensor:
            if start is not None:
                end = torch.cuda.Event(enable_timing=True)
                end.record(torch.cuda.current_stream(self.device))  # the callback's stream waits for NCCL
                self._events.append((start, end))
            else:
                self._host.append((t0, clock.read_clock()))
            return f.value()[0].div_(world)
        return future.then(done)


class Shard(MiniBatches):
    """The batch plan of one worker: its strided share of every global batch, every sum added over the workers.

    Each worker also scores every world_size-th row of a split; its share of the sums is all-reduced.
    """

    def __init__(self, features: Features, config: ClassifierConfig, device: torch.device, mode: str,
                 env: WorkerEnv, timer: AllReduceTimer) -> None:
        super().__init__(features, config, device, mode)
        self.env = env
        self.timer = timer

    def rows(self, order: np.ndarray, batch: int) -> np.ndarray:
        return shard_rows(order, batch, self.batch_size, self.env.rank, self.env.world_size)

    def epoch(self) -> Iterator[Step]:
        self.timer.reset()
        yield from super().epoch()

    def eval_steps(self, split: str) -> Iterator[Step]:
        x, y = self.split(split)
        mine = np.arange(self.env.rank, x.shape[0], self.env.world_size)
        for start in range(0, len(mine), EVAL_BATCH):
            rows = mine[start:start + EVAL_BATCH]
            yield self.move(x[rows], y[rows])

    def total(self, sums: torch.Tensor) -> list[float]:
        both = sums.double()
        dist.all_reduce(both)
        return [float(v) for v in both.tolist()]

    def timing(self, seconds: float) -> tuple[float, float | None]:
        """The slowest worker's seconds (the epoch ends when its does) and the mean all-reduce seconds."""
        slowest = torch.tensor([seconds], dtype=torch.float64, device=self.device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        (allreduce,) = self.total(torch.tensor([self.timer.seconds], dtype=torch.float64, device=self.device))
        return float(slowest.item()), allreduce / self.env.world_size


class _Worker:
    """The loop's job in a worker: never stopped from inside (the launcher ends the processes), epochs
    emitted by rank 0."""

    def __init__(self, emit: Emit, epochs: int) -> None:
        self.emit = emit
        self.epochs = epochs

    def stop_requested(self) -> bool:
        return False

    def report(self, progress: Progress[TrainEpoch]) -> None:
        record = progress.item
        if record is not None and not record.partial:
            self.emit({"event": "epoch", "epoch": record.to_json(), "val_loss": record.val_loss, "of": self.epochs})


@dataclass(frozen=True, eq=False)
class WorkerResult:
    run: TrainRun  # what rank 0 reports (every rank builds the same)
    model: nn.Sequential  # this worker's final weights, on the CPU


def train_data_parallel(features: Features, config: ClassifierConfig, device: torch.device, env: WorkerEnv,
                        emit: Emit) -> WorkerResult:
    """Train this worker's share under DDP in the one loop; keeps the lowest validation loss, else the last epoch."""
    mode = resolve_input_mode(config.input_mode, device)
    model = build_model(features.vocab_size, config.hidden, config.seed).to(device)
    ddp = DistributedDataParallel(_Net(model), device_ids=[device.index] if device.type == "cuda" else None)
    timer = AllReduceTimer(device)
    # a lambda: DDP inspects the hook's annotations, which `from __future__ import annotations` turns into strings
    ddp.register_comm_hook(None, lambda _state, bucket: timer.average(bucket))
    fitted = fit(ddp, model, Shard(features, config, device, mode, env, timer), _Worker(emit, config.epochs), config)
    run = run_record(features, config, device_key(device), fitted.epochs, fitted.best_epoch,
                     workers=env.world_size, backend=backend_for(device))
    return WorkerResult(run, fitted.kept)


def config_from_json(text: str) -> ClassifierConfig:
    """The launching job's config (`asdict` as JSON); ClassifierConfig checks every value again."""
    values = json.loads(text)
    if not isinstance(values, dict):
        raise DashboardError("--config must be a JSON object of ClassifierConfig fields")
    return ClassifierConfig(**values)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m core.classifier.distributed",
                                description="one data-parallel worker of the review classifier "
                                            "(start it with torchrun)")
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
