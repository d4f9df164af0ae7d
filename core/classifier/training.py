"""Train the lecture's classifier on one device, reporting as it goes, stoppable between batches.

Only the device changes between a CPU run and a GPU run: the same seed gives the same initial
weights (built on the CPU, then moved) and the same batch order (shuffled by a seeded CPU
generator), so two runs differ only in where the arithmetic happens. Batches are cut from the
sparse matrix on the CPU and moved to the device one at a time; the whole matrix never is.
Losses are summed on the device and read once per report, because reading a GPU scalar every
batch would synchronize every batch and hide the GPU's speed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from core.platform import clock
from core.classifier.baseline import BaselineResult, logistic_regression
from core.classifier.model import (
    ClassifierConfig, SparseBatch, build_model, check_model_fits, forward, make_batch, make_sgd, resolve_input_mode,
)
from core.platform.devices import device_key, resolve_device
from core.platform.jobs import JobHooks, Progress, RunningJob, run_job
from core.platform.machine_load import default_threads
from core.platform.timing import torch_threads
from core.results.load import MachineLoad
from core.errors import DashboardError
from core.classifier.loaders import Reviews
from core.classifier.features import Features, Vectorizer, build_features
from core.results.jsonio import to_jsonable
from core.results.train import Prediction, TrainEpoch, TrainRun

DIVERGED = ("training diverged at learning rate {lr:g}: the network's outputs became NaN; "
            "lower the learning rate (the default is 0.03)")
EVAL_BATCH = 2048  # rows per evaluation step: bounded memory, few steps



@dataclass(frozen=True)
class Evaluation:
    loss: float  # mean binary cross-entropy
    accuracy: float  # share of reviews on the right side of p = 0.5


@dataclass(frozen=True)
class EpochReport:
    """One report: at the end of an epoch, or every `report_every` batches within one (partial)."""

    epoch: int  # 1-based
    batches_done: int  # batches of this epoch done so far
    n_batches: int  # batches in a whole epoch
    train_loss: float  # mean loss over this epoch's batches so far (weights changing as it goes)
    val: Evaluation | None  # on the held-back training rows; None without a validation split
    test: Evaluation
    seconds: float  # device-synchronized seconds spent in this epoch's training steps, evaluation excluded
    elapsed_s: float  # device-synchronized seconds since training started, evaluation included

    @property
    def partial(self) -> bool:
        return self.batches_done < self.n_batches

    @property
    def progress(self) -> float:
        """Epochs done as a fraction, e.g. 2.5 halfway through the third."""
        return self.epoch - 1 + self.batches_done / self.n_batches

    def describe(self, epochs: int) -> str:
        """'epoch 2/10: train loss 0.4321, test accuracy 0.812, 0.53 s', the line a page or log shows."""
        return (f"epoch {self.epoch}/{epochs}: train loss {self.train_loss:.4f}, "
                f"test accuracy {self.test.accuracy:.3f}, {self.seconds:.2f} s")

    def to_record(self) -> TrainEpoch:
        return TrainEpoch(epoch=self.epoch, train_loss=self.train_loss, test_loss=self.test.loss,
                          test_accuracy=self.test.accuracy, seconds=self.seconds)

    def to_dict(self) -> dict:
        return self.to_record().to_json()


@dataclass(frozen=True, eq=False)
class TrainResult:
    """A finished (or stopped) run: every epoch's report and the kept epoch's weights on the CPU."""

    config: ClassifierConfig
    device: str  # device key the run used: 'cpu', 'cuda:0', 'mps'
    input_mode: str  # 'sparse' or 'dense'
    epochs: tuple[EpochReport, ...]  # completed epochs only
    best_epoch: int | None  # the kept epoch: lowest validation loss, else the last; None if none completed
    stopped: bool  # the user stopped it before the last epoch
    model: nn.Sequential  # the kept epoch's weights, on the CPU
    vectorizer: Vectorizer
    n_train: int
    n_val: int
    n_test: int
    load: MachineLoad | None = None  # how busy the machine was as the run started
    threads: int | None = None  # the CPU threads torch used
    dense_mb: float | None = None  # the lecture preset's dense matrix on the device, in MB; None for mini-batches

    @property
    def vocab_size(self) -> int:
        return self.vectorizer.vocab_size

    @property
    def best(self) -> EpochReport | None:
        return None if self.best_epoch is None else self.epochs[self.best_epoch - 1]

    @property
    def test_accuracy(self) -> float | None:
        return None if self.best is None else self.best.test.accuracy

    @property
    def train_seconds(self) -> float:
        return sum(e.seconds for e in self.epochs)

    @property
    def seconds_per_epoch(self) -> float | None:
        return statistics.median(e.seconds for e in self.epochs) if self.epochs else None

    @property
    def samples_per_s(self) -> float | None:
        return self.n_train * len(self.epochs) / self.train_seconds if self.epochs and self.train_seconds > 0 else None

    def to_record(self, baseline_accuracy: float | None, texts: Sequence[str] = (),
                  probabilities: Sequence[float] = ()) -> TrainRun:
        """The run as the result schema describes it (core.results.train)."""
        return TrainRun(
            device=self.device, n_train=self.n_train, n_test=self.n_test, vocab_size=self.vocab_size,
            epochs=tuple(e.to_record() for e in self.epochs), test_accuracy=self.test_accuracy,
            train_seconds=self.train_seconds, baseline_accuracy=baseline_accuracy,
            predictions=tuple(Prediction(t, float(p)) for t, p in zip(texts, probabilities)),
            stopped=self.stopped, settings=to_jsonable(asdict(self.config)), load=self.load,
            preset=self.config.preset, dense_matrix_mb=self.dense_mb,
        )

    def to_json(self, baseline_accuracy: float | None, texts: Sequence[str] = (),
                probabilities: Sequence[float] = ()) -> dict[str, Any]:
        """The `python -m core train --json` object, which the result store also saves."""
        return to_jsonable(self.to_record(baseline_accuracy, texts, probabilities))


def _evaluate(model: nn.Sequential, x: sp.csr_matrix, y: np.ndarray, mode: str, device: torch.device) -> Evaluation:
    """Mean BCE and accuracy over all rows, EVAL_BATCH rows at a time (never the whole matrix at once)."""
    if x.shape[0] == 0:
        return Evaluation(float("nan"), float("nan"))
    loss_sum = torch.zeros(()).to(device)  # every placement goes through .to(device), which tests can watch
    correct = torch.zeros(()).to(device)
    with torch.no_grad():
        for start in range(0, x.shape[0], EVAL_BATCH):
            batch = make_batch(x[start:start + EVAL_BATCH], mode).to(device)
            target = torch.from_numpy(y[start:start + EVAL_BATCH]).to(device)
            p = forward(model, batch)
            loss_sum += nn.functional.binary_cross_entropy(p, target, reduction="sum")
            correct += ((p > 0.5).float() == target).sum()
    n = x.shape[0]
    return Evaluation(loss_sum.item() / n, correct.item() / n)


def features_for(reviews: Reviews, config: ClassifierConfig) -> Features:
    """The split and the document-term matrices this config asks for."""
    return build_features(reviews, weighting=config.weighting, ngrams=config.ngrams, max_features=config.max_features,
                          test_size=config.test_size, val_fraction=config.val_fraction, seed=config.seed)


def prepare(reviews: Reviews, config: ClassifierConfig, hooks: JobHooks | None = None) -> tuple[Features, BaselineResult]:
    """The document-term matrices and the LogisticRegression baseline, built while holding the CPU.

    Nothing here is timed, but it keeps both cores busy for seconds, which would skew a
    classmate's CPU sweep running at the same moment. Two steps, each one library call that cannot
    be interrupted: a Stop or the per-job cap takes effect between them (JobCancelled/JobTimedOut),
    and a step that overruns the cap by the lock's grace period loses the CPU to the next job.
    """
    with run_job(["cpu"], hooks, label="building features") as job:
        features = features_for(reviews, config)
        job.check()
        return features, logistic_regression(features)


def batch_order(n: int, seed: int, epochs: int) -> Iterator[np.ndarray]:
    """Each epoch's shuffled row order, from a seeded CPU generator: identical on every device.

    Made one epoch at a time, as training reaches it: a run of many epochs never holds them all.
    """
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        yield torch.randperm(n, generator=gen).numpy()


def train(features: Features, config: ClassifierConfig, hooks: JobHooks | None = None) -> TrainResult:
    """Train on `config.device` while holding it; returns the kept epoch's weights.

    `hooks.on_progress` gets a Progress (item: an EpochReport) after every epoch and every
    `report_every` batches; `hooks.should_stop` is asked before every batch (a page can redraw
    there, which is what lets a Stop click end the run between batches); the per-job cap ends a
    run like Stop does. A stopped run keeps its finished epochs, marked stopped.
    """
    device = resolve_device(config.device)
    mode = resolve_input_mode(config.input_mode, device)
    if features.n_train == 0:
        raise DashboardError("no training reviews; add reviews or lower the test share")
    lecture = config.preset == "lecture"  # the whole dense matrix on the device, full-batch steps
    if lecture:
        from core.classifier.fullbatch import check_dense_fits, dense_size, train_full_batch_locked

        check_dense_fits(dense_size(features, config.hidden), device)
    else:
        check_model_fits(features.vocab_size, config.hidden, device)
    label = "training run (lecture preset)" if lecture else "training run"
    with run_job([device_key(device)], hooks, label=label, measure_load=True) as job:
        with torch_threads(default_threads(config.threads, job.load)) as threads:
            result = (train_full_batch_locked(features, config, device, job) if lecture
                      else _train_locked(features, config, device, mode, job))
        return replace(result, load=job.load, threads=threads)


def _sgd_step(model: nn.Sequential, optimizer: torch.optim.Optimizer, loss_fn: nn.Module,
              batch: SparseBatch | torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """One update; returns the batch's mean loss, detached and still on the device (no sync)."""
    loss = loss_fn(forward(model, batch), target)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.detach()


def _cpu_copy(model: nn.Module) -> dict[str, torch.Tensor]:
    """The weights as they are now, copied to the CPU: the kept epoch survives later epochs."""
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


def _train_locked(features: Features, config: ClassifierConfig, device: torch.device, mode: str,
                  job: RunningJob) -> TrainResult:
    model = build_model(features.vocab_size, config.hidden, config.seed).to(device)
    loss_fn = nn.BCELoss()
    optimizer = make_sgd(model.parameters(), config)
    n = features.n_train
    n_batches = -(-n // config.batch_size)
    y_train = features.y_train.astype(np.float32)
    has_val = features.n_val > 0
    reports: list[EpochReport] = []
    best_state, best_epoch, best_val = None, None, float("inf")
    stopped = False

    def evaluate() -> tuple[Evaluation | None, Evaluation]:
        model.eval()
        val = _evaluate(model, features.x_val, features.y_val, mode, device) if has_val else None
        test = _evaluate(model, features.x_test, features.y_test, mode, device)
        model.train()
        return val, test

    start = clock.now(device)
    for epoch, order in enumerate(batch_order(n, config.seed, config.epochs), start=1):
        loss_sum = torch.zeros(()).to(device)
        seen = 0
        train_s = 0.0
        t0 = clock.now(device)
        for b in range(n_batches):
            if job.stop_requested():
                stopped = True
                break
            rows = order[b * config.batch_size:(b + 1) * config.batch_size]
            batch = make_batch(features.x_train[rows], mode).to(device)  # only these rows, to the device
            target = torch.from_numpy(y_train[rows]).to(device)
            try:
                loss_sum += _sgd_step(model, optimizer, loss_fn, batch, target) * len(rows)
            except RuntimeError as exc:  # BCELoss refuses NaN outputs: the weights overflowed
                if "between 0 and 1" not in str(exc):
                    raise
                raise DashboardError(DIVERGED.format(lr=config.lr)) from None
            seen += len(rows)
            last = b + 1 == n_batches
            if last or (config.report_every and (b + 1) % config.report_every == 0):
                t1 = clock.now(device)
                train_s += t1 - t0
                val, test = evaluate()
                train_loss = loss_sum.item() / seen
                if not math.isfinite(train_loss):
                    raise DashboardError(DIVERGED.format(lr=config.lr))
                report = EpochReport(epoch, b + 1, n_batches, train_loss, val, test, train_s,
                                     clock.now(device) - start)
                if last:
                    reports.append(report)
                job.report(Progress((epoch - 1) * n_batches + b + 1, config.epochs * n_batches,
                                    report.describe(config.epochs), item=report))
                t0 = clock.now(device)
        if stopped:
            break
        epoch_val = reports[-1].val  # None exactly when there is no validation split
        score = epoch_val.loss if epoch_val is not None else -epoch  # without validation: keep the last epoch
        if score < best_val or best_state is None:
            best_val, best_epoch = score, epoch
            best_state = _cpu_copy(model)
    kept = build_model(features.vocab_size, config.hidden, config.seed)
    if best_state is not None:
        kept.load_state_dict(best_state)
    kept.eval()
    return TrainResult(config, device_key(device), mode, tuple(reports), best_epoch, stopped, kept,
                       features.vectorizer, features.n_train, features.n_val, features.n_test)


def predict(result: TrainResult, texts: Sequence[str]) -> np.ndarray:
    """p(positive) for new reviews, with the kept epoch's weights, on the CPU."""
    texts = list(texts)
    if not texts:
        return np.zeros(0, dtype=np.float32)
    x = result.vectorizer.transform(texts)
    cpu = torch.device("cpu")
    out = []
    with torch.no_grad():
        for start in range(0, x.shape[0], EVAL_BATCH):
            out.append(forward(result.model, make_batch(x[start:start + EVAL_BATCH], "sparse").to(cpu)).numpy())
    return np.concatenate(out)


@dataclass(frozen=True)
class DeviceComparison:
    """The same seeded run on two devices: per-epoch losses side by side."""

    devices: tuple[str, str]
    train_losses: tuple[tuple[float, ...], tuple[float, ...]]
    test_losses: tuple[tuple[float, ...], tuple[float, ...]]
    seconds: tuple[float, float]  # total training seconds on each device

    @property
    def max_loss_difference(self) -> float:
        """Largest |difference| between the two devices' train or test loss at any epoch."""
        pairs = list(zip(*self.train_losses)) + list(zip(*self.test_losses))
        return max(abs(a - b) for a, b in pairs)

    def close(self, tolerance: float) -> bool:
        return self.max_loss_difference <= tolerance


LOSS_TOLERANCE = 1e-3  # float32 sums in a different order on a GPU: differences ~1e-6, not ~1e-3


def compare_devices_same_seed(
    features: Features, config: ClassifierConfig, devices: tuple[str, str] = ("cpu", "cuda"), *, epochs: int = 2,
    hooks: JobHooks | None = None,
) -> DeviceComparison:
    """Train `epochs` epochs from the same seed on each of two devices and line up the losses.

    For the GPU self-check: a CUDA run must follow the CPU run's losses closely; a large gap means
    a broken device, driver or kernel, not a different model.
    """
    runs = []
    for name in devices:
        cfg = ClassifierConfig(**{**config.to_dict(), "device": name, "epochs": epochs, "report_every": 0})
        runs.append(train(features, cfg, hooks))
    a, b = runs
    return DeviceComparison(
        devices=(a.device, b.device),
        train_losses=(tuple(e.train_loss for e in a.epochs), tuple(e.train_loss for e in b.epochs)),
        test_losses=(tuple(e.test.loss for e in a.epochs), tuple(e.test.loss for e in b.epochs)),
        seconds=(a.train_seconds, b.train_seconds),
    )
