"""The one training loop, whichever way the rows reach the device: a batch plan says how.

Three plans feed it (core.classifier.training, fullbatch and distributed build them):

* `MiniBatches`: rows cut from the sparse matrix on the CPU in the seeded order, moved one batch
  at a time; the whole matrix never is.
* fullbatch.FullBatch: the lecture's dense matrix, moved to the device once, one step per epoch.
* distributed.Shard: each data-parallel worker's strided share of the same seeded batches, the
  network wrapped in DistributedDataParallel; every figure is summed over the workers.

The loop never reads the device per batch: the losses are summed on the device and read back once
per report, together with a count of non-finite weights, because on a GPU every read waits for
all queued work and would hide the GPU's speed. The network's outputs go through `nan_to_num`
before the loss, so NaN outputs (diverged weights) never reach BCELoss, which raises on a CPU and
fires a device-side assert on CUDA that kills the process's GPU context; the report then finds
the non-finite weights and raises the one DIVERGED message. `evaluate` is the only evaluation: a
plan only says which rows each split's steps hold and how sums add up over workers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel

from core.classifier.features import Features
from core.classifier.model import (
    ClassifierConfig, SparseBatch, build_model, forward, kept_hidden, make_batch, make_sgd, nb_logit_weight, to_device,
    with_nb_logit,
)
from core.classifier.reports import Evaluation, describe
from core.errors import DashboardError
from core.platform import clock
from core.platform.jobs import Progress
from core.results.train import TrainEpoch

DIVERGED = ("training diverged at learning rate {lr:g}: {why}; "
            "lower the learning rate (the default is 0.03)")
NAN_OUTPUTS = "the network's outputs became NaN"
# A mean BCE above this means the sigmoid is stuck at 0 or 1 on the wrong side for many reviews: a network
# that only guesses scores ln 2 = 0.69, and BCELoss caps one review's loss at 100. Stuck outputs get no
# gradient back (the cap's), so the run never recovers: at the highest rate a user may pick (100) the
# loss sat at ~48 for every epoch on rt-polarity while the run "finished" at 50% accuracy.
DIVERGED_LOSS = 10.0
EVAL_BATCH = 2048  # rows per evaluation step: bounded memory, few steps
FIRST_EPOCH_TELLS = 10  # times the first epoch says how many batches are done: a first sign of life before its loss

Batch = SparseBatch | torch.Tensor
Step = tuple[Batch, torch.Tensor]  # a batch's inputs and labels, on the device
Net = Callable[[Batch], torch.Tensor]  # p(positive) per row: the network, or its DDP wrapper


class Plan(Protocol):
    """How one run's rows reach the device, and how its sums add up."""

    device: torch.device
    n_batches: int  # steps per epoch

    def epoch(self) -> Iterator[Step]:
        """The next epoch's steps in order, each made only when asked for (a Stop wastes none)."""
        ...

    def eval_steps(self, split: str) -> Iterator[Step]:
        """This process's rows of 'val' or 'test', in bounded steps."""
        ...

    def eval_rows(self, split: str) -> int:
        """Rows in the split over all processes: what a sum is divided by."""
        ...

    def total(self, sums: torch.Tensor) -> list[float]:
        """The sums over every process, read back from the device once."""
        ...

    def timing(self, seconds: float) -> tuple[float, float | None]:
        """(seconds of this epoch so far as reported, gradient all-reduce seconds or None)."""
        ...


class Job(Protocol):
    """What the loop asks of its job: core.platform.jobs.RunningJob, or a data-parallel worker's stand-in."""

    def stop_requested(self) -> bool: ...

    def report(self, progress: Progress[TrainEpoch]) -> None: ...


def labels(y: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(y.astype(np.float32, copy=False))


class OneProcess:
    """The sums and seconds of a run in this process alone: as they are, read back once."""

    def total(self, sums: torch.Tensor) -> list[float]:
        return [float(v) for v in sums.tolist()]

    def timing(self, seconds: float) -> tuple[float, float | None]:
        return seconds, None


class MiniBatches(OneProcess):
    """Batches of `batch_size` rows in the seeded order, cut from the CSR matrix on the CPU, moved one at a time."""

    def __init__(self, features: Features, config: ClassifierConfig, device: torch.device, mode: str) -> None:
        self.features = features
        self.device = device
        self.mode = mode
        self.batch_size = config.batch_size
        self.n_batches = -(-features.n_train // config.batch_size)
        self._orders = batch_order(features.n_train, config.seed, config.epochs)
        self._y_train = features.y_train.astype(np.float32)

    def rows(self, order: np.ndarray, batch: int) -> np.ndarray:
        """The rows of step `batch` of an epoch in `order`."""
        return order[batch * self.batch_size:(batch + 1) * self.batch_size]

    def epoch(self) -> Iterator[Step]:
        order = next(self._orders)
        for b in range(self.n_batches):
            rows = self.rows(order, b)
            yield self.move(self.features.x_train[rows], self._y_train[rows])

    def move(self, x: sp.csr_matrix, y: np.ndarray) -> Step:
        """These rows only, as a batch on the device (every placement goes through .to, which tests watch)."""
        batch = make_batch(x, self.mode)
        moved = batch.to(self.device) if isinstance(batch, SparseBatch) else to_device(batch, self.device)
        return moved, to_device(labels(y), self.device)

    def split(self, split: str) -> tuple[sp.csr_matrix, np.ndarray]:
        f = self.features
        return (f.x_val, f.y_val) if split == "val" else (f.x_test, f.y_test)

    def eval_steps(self, split: str) -> Iterator[Step]:
        x, y = self.split(split)
        for start in range(0, x.shape[0], EVAL_BATCH):
            yield self.move(x[start:start + EVAL_BATCH], y[start:start + EVAL_BATCH])

    def eval_rows(self, split: str) -> int:
        return int(self.split(split)[0].shape[0])


def batch_order(n: int, seed: int, epochs: int) -> Iterator[np.ndarray]:
    """Each epoch's shuffled row order, from a seeded CPU generator: identical on every device.

    Made one epoch at a time, as training reaches it: a run of many epochs never holds them all.
    """
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        yield torch.randperm(n, generator=gen).numpy()


def finite(p: torch.Tensor) -> torch.Tensor:
    """Outputs BCELoss accepts: NaN (diverged weights) as 0.5; finite outputs and their gradients unchanged."""
    return p.nan_to_num(nan=0.5)


def evaluate(score: Net, plan: Plan, split: str) -> Evaluation:
    """Mean BCE and accuracy over a split's rows, the sums kept on the device and read once."""
    n = plan.eval_rows(split)
    if n == 0:
        return Evaluation(math.nan, math.nan)
    loss_sum = torch.zeros(()).to(plan.device)
    correct = torch.zeros(()).to(plan.device)
    with torch.no_grad():
        for batch, target in plan.eval_steps(split):
            p = finite(score(batch))
            loss_sum += nn.functional.binary_cross_entropy(p, target, reduction="sum")
            correct += ((p > 0.5).float() == target).sum()
    loss, right = plan.total(torch.stack([loss_sum, correct]))
    return Evaluation(loss / n, right / n)


def _sgd_step(net: Net, optimizer: torch.optim.Optimizer, batch: Batch, target: torch.Tensor) -> torch.Tensor:
    """One update; returns the batch's mean loss, detached and still on the device (no sync)."""
    loss = nn.functional.binary_cross_entropy(finite(net(batch)), target)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.detach()


def _nonfinite(model: nn.Module) -> torch.Tensor:
    """How many weights are NaN or infinite, on the device (no sync): above 0 once training diverged."""
    return torch.stack([(~torch.isfinite(p)).sum() for p in model.parameters()]).sum().float()


def cpu_copy(model: nn.Module) -> dict[str, torch.Tensor]:
    """The weights as they are now, copied to the CPU: the kept epoch survives later epochs."""
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


class EpochAverage:
    """The mean of the weights at the end of every epoch from `first` on (stochastic weight averaging).

    SGD at a constant learning rate ends each epoch at a different point around a good region; their
    mean sits nearer its middle, which scored higher on validation folds of rt-polarity's training rows
    than any one epoch (bench/classifier.py, VALIDATION). It is one network of the same shape, kept on the
    device (torch.optim.swa_utils.AveragedModel: one more copy of the weights) and updated once per
    epoch, so it adds no read of the device and no work per batch. first = 0: no average, the epoch's
    own weights are kept.
    """

    def __init__(self, model: nn.Sequential, first: int) -> None:
        self.first = first
        self._mean: AveragedModel | None = AveragedModel(model, use_buffers=False) if first else None
        self._count = 0

    def add(self, model: nn.Sequential, epoch: int) -> None:
        """Fold in the weights at the end of `epoch` (ignored before `first`)."""
        if self._mean is not None and epoch >= self.first:
            self._mean.update_parameters(model)
            self._count += 1

    def kept(self, model: nn.Sequential) -> nn.Sequential:
        """What a run stopped now keeps: the average once it holds an epoch, else `model` itself."""
        if self._mean is None or not self._count:
            return model
        module = self._mean.module
        if not isinstance(module, nn.Sequential):  # AveragedModel holds a deep copy of `model`
            raise TypeError(f"the average holds {type(module).__name__}, not nn.Sequential")
        return module


@dataclass(frozen=True, eq=False)
class Fitted:
    """What the loop ends with: the finished epochs' reports, the kept epoch and its weights on the CPU."""

    epochs: tuple[TrainEpoch, ...]
    best_epoch: int | None  # lowest validation loss, else the last; None if no epoch finished
    stopped: bool
    kept: nn.Sequential  # the kept epoch's weights (the initial ones if no epoch finished), on the CPU


@dataclass
class _Epoch:
    """One epoch's running figures: the loss sum stays on the device until a report reads it."""

    number: int
    loss_sum: torch.Tensor
    seen: int = 0
    train_s: float = 0.0


def fit(net: Net, model: nn.Sequential, plan: Plan, job: Job, config: ClassifierConfig, *,
        word: str = "epoch") -> Fitted:
    """Train `model` (through `net`, which may wrap it) for `config.epochs` epochs of `plan`.

    Reports a TrainEpoch after every epoch and every `report_every` batches (partial), with
    synchronized training seconds (evaluation excluded); during the first epoch it also says, about
    FIRST_EPOCH_TELLS times, how many batches are done (item None: no loss read, no device wait);
    asks `job.stop_requested()` before every batch. A stopped run keeps its finished epochs.
    """
    optimizer = make_sgd(model.parameters(), config)
    average = EpochAverage(model, config.average_from)
    nb_weight = nb_logit_weight(config)

    def scored() -> nn.Sequential:  # what a run stopped now keeps: the average, naive Bayes's log-odds added
        return with_nb_logit(average.kept(model), nb_weight)

    device = plan.device
    reports: list[TrainEpoch] = []
    best: tuple[float, int, dict[str, torch.Tensor]] | None = None
    stopped = False
    start = clock.now(device)
    every = max(1, -(-plan.n_batches // FIRST_EPOCH_TELLS))  # batches between the first epoch's counts
    for number in range(1, config.epochs + 1):
        steps = plan.epoch()
        epoch = _Epoch(number, torch.zeros(()).to(device))
        t0 = clock.now(device)
        for b in range(plan.n_batches):
            if job.stop_requested():
                stopped = True
                break
            batch, target = next(steps)
            epoch.loss_sum += _sgd_step(net, optimizer, batch, target) * target.shape[0]
            epoch.seen += target.shape[0]
            last = b + 1 == plan.n_batches
            partial = bool(config.report_every) and (b + 1) % config.report_every == 0
            if number == 1 and not (last or partial) and (b + 1) % every == 0:  # no device read, just the count
                job.report(Progress(b + 1, config.epochs * plan.n_batches,
                                    f"{word} 1 of {config.epochs}: {b + 1:,} of {plan.n_batches:,} batches done"))
            if last or partial:
                epoch.train_s += clock.now(device) - t0
                if last:
                    average.add(model, number)
                report = _report(model, scored(), plan, config, epoch, b + 1, start)
                if last:
                    reports.append(report)
                job.report(Progress((number - 1) * plan.n_batches + b + 1, config.epochs * plan.n_batches,
                                    describe(report, config.epochs, word), item=report))
                t0 = clock.now(device)
        if stopped:
            break
        val = reports[-1].val_loss
        score = val if val is not None else -number  # without validation: keep the last epoch
        if best is None or score < best[0]:
            best = (score, number, cpu_copy(scored()))
    kept = build_model(_first_layer(model).in_features, config.hidden if best is None else kept_hidden(config),
                       config.seed)
    if best is not None:
        kept.load_state_dict(best[2])
    kept.eval()
    return Fitted(tuple(reports), None if best is None else best[1], stopped, kept)


def _first_layer(model: nn.Sequential) -> nn.Linear:
    first = model[0]
    if not isinstance(first, nn.Linear):  # build_model's network always starts with one
        raise TypeError(f"the classifier starts with nn.Linear, not {type(first).__name__}")
    return first


def _report(model: nn.Sequential, scored: nn.Sequential, plan: Plan, config: ClassifierConfig, epoch: _Epoch,
            batches_done: int, start: float) -> TrainEpoch:
    """The figures so far: one read of the training sums, one per split scored; DIVERGED if a weight is not finite.

    The training loss is `model`'s (the weights SGD moves); validation and test are `scored`'s, the
    weights a run stopped now would keep (the epochs' average once there is one).
    """
    sums = torch.stack([epoch.loss_sum, _nonfinite(model), epoch.loss_sum.new_tensor(float(epoch.seen))])
    loss_sum, nonfinite, seen = plan.total(sums)
    train_loss = loss_sum / seen
    if nonfinite or not math.isfinite(train_loss):
        raise DashboardError(DIVERGED.format(lr=config.lr, why=NAN_OUTPUTS))
    if train_loss > DIVERGED_LOSS:
        why = (f"the training loss rose to {train_loss:.3g} (a network that only guesses scores 0.69), "
               "its outputs stuck at 0 or 1")
        raise DashboardError(DIVERGED.format(lr=config.lr, why=why))
    seconds, allreduce_s = plan.timing(epoch.train_s)

    def score(batch: Batch) -> torch.Tensor:
        return forward(scored, batch)

    scored.eval()
    val = evaluate(score, plan, "val") if plan.eval_rows("val") else None
    test = evaluate(score, plan, "test")
    model.train()
    if (val is not None and not math.isfinite(val.loss)) or (plan.eval_rows("test") and not math.isfinite(test.loss)):
        raise DashboardError(DIVERGED.format(lr=config.lr, why=NAN_OUTPUTS))  # the last step's weights, unseen yet
    return TrainEpoch(epoch.number, train_loss, test.loss, test.accuracy, seconds, allreduce_seconds=allreduce_s,
                      val_loss=None if val is None else val.loss, val_accuracy=None if val is None else val.accuracy,
                      batches_done=batches_done, n_batches=plan.n_batches,
                      elapsed_s=clock.now(plan.device) - start)

