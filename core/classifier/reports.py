"""What a training run gives back: each report is the saved epoch record, the result carries the saved run.

A report while training and an epoch in a saved file are one type, core.results.train.TrainEpoch,
and a finished run's record is core.results.train.TrainRun: nothing is converted by hand between
what a page shows and what the result store keeps. TrainResult adds only what is never saved: the
kept weights, the vectorizer and the config object. This module imports none of the training loops,
so the loops (core.classifier.fit, training, fullbatch, distributed) all import it without a circle.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass

from torch import nn

from core.classifier.features import Features, Vectorizer
from core.classifier.model import ClassifierConfig, nb_logit_weight
from core.results.jsonio import to_jsonable
from core.results.load import MachineLoad
from core.results.train import TrainEpoch, TrainRun


@dataclass(frozen=True)
class Evaluation:
    """One split scored by the network as it is now."""

    loss: float  # mean binary cross-entropy
    accuracy: float  # share of reviews on the right side of p = 0.5


def kept_words(config: ClassifierConfig, best_epoch: int | None, validated: bool) -> str:
    """What the kept epoch is, in words: 'epoch 10 (the last; the mean of the weights after epochs 5-10, plus
    naive Bayes's log-odds)'. Beside a chart whose lowest test loss is epoch 1, "kept epoch 10" read as a mistake:
    it is chosen by validation loss, or is the last, never by test loss, and from `average_from` on it is the
    mean of the epochs' weights."""
    if best_epoch is None:
        return "no epoch (none finished)"
    parts = ["the lowest validation loss" if validated else "the last"]
    if config.average_from and best_epoch > config.average_from:
        parts.append(f"the mean of the weights after epochs {config.average_from}–{best_epoch}")
    if nb_logit_weight(config):
        parts.append("plus naive Bayes's log-odds")
    return f"epoch {best_epoch} ({'; '.join(parts)})"


def describe(report: TrainEpoch, epochs: int, word: str = "epoch") -> str:
    """'epoch 2/10: train loss 0.4321, test accuracy 0.812, 0.53 s', the line a page or log shows.

    An 'update' (the lecture's full-batch step) gets milliseconds: on a GPU one takes a few.
    """
    seconds = _shown(report.seconds, ".3f" if word == "update" else ".2f")
    return (f"{word} {report.epoch}/{epochs}: train loss {_shown(report.train_loss, '.4f')}, "
            f"test accuracy {_shown(report.test_accuracy, '.3f')}, {seconds} s")


def _shown(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def figure(value: float | None) -> float:
    """A report's figure as a plain float: NaN where it was not measured (no rows in that split)."""
    return math.nan if value is None else value


def run_record(features: Features, config: ClassifierConfig, device: str, epochs: tuple[TrainEpoch, ...],
               best_epoch: int | None, *, stopped: bool = False, dense_matrix_mb: float | None = None,
               workers: int | None = None, backend: str | None = None) -> TrainRun:
    """The saved record of a run: its epochs, the kept epoch's accuracy, the settings."""
    kept = epochs[best_epoch - 1] if best_epoch is not None else None
    return TrainRun(device=device, n_train=features.n_train, n_test=features.n_test,
                    vocab_size=features.vocab_size, epochs=epochs,
                    test_accuracy=None if kept is None else kept.test_accuracy,
                    train_seconds=sum(e.seconds or 0.0 for e in epochs), stopped=stopped,
                    settings=to_jsonable(asdict(config)), preset=config.preset, dense_matrix_mb=dense_matrix_mb,
                    workers=workers, backend=backend)


@dataclass(frozen=True, eq=False)
class TrainResult:
    """A finished (or stopped) run: its saved record and, not saved, the kept epoch's weights on the CPU.

    The record leaves the baseline and the predictions empty: they come from the caller
    (`dataclasses.replace(result.run, baseline_accuracy=...)`), which computed them.
    """

    run: TrainRun  # every completed epoch, the kept accuracy, load, dense_matrix_mb: what the store saves
    config: ClassifierConfig
    input_mode: str  # 'sparse' or 'dense'
    best_epoch: int | None  # the kept epoch: lowest validation loss, else the last; None if none completed
    model: nn.Sequential  # the kept epoch's weights, on the CPU
    vectorizer: Vectorizer
    n_val: int
    threads: int | None = None  # the CPU threads torch used

    @property
    def device(self) -> str:
        """Device key the run used: 'cpu', 'cuda:0', 'mps'."""
        return self.run.device

    @property
    def epochs(self) -> tuple[TrainEpoch, ...]:
        return self.run.epochs

    @property
    def stopped(self) -> bool:
        return self.run.stopped

    @property
    def n_train(self) -> int:
        return self.run.n_train

    @property
    def n_test(self) -> int:
        return self.run.n_test

    @property
    def vocab_size(self) -> int:
        return self.run.vocab_size

    @property
    def load(self) -> MachineLoad | None:
        """How busy the machine was as the run started."""
        return self.run.load

    @property
    def dense_mb(self) -> float | None:
        """The lecture preset's dense matrix on the device, in MB; None for mini-batches."""
        return self.run.dense_matrix_mb

    @property
    def best(self) -> TrainEpoch | None:
        return None if self.best_epoch is None else self.epochs[self.best_epoch - 1]

    @property
    def test_accuracy(self) -> float | None:
        return self.run.test_accuracy

    @property
    def train_seconds(self) -> float:
        return self.run.train_seconds or 0.0

    @property
    def seconds_per_epoch(self) -> float | None:
        return statistics.median(e.seconds or 0.0 for e in self.epochs) if self.epochs else None

    @property
    def samples_per_s(self) -> float | None:
        return self.n_train * len(self.epochs) / self.train_seconds if self.epochs and self.train_seconds > 0 else None


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


def compare(a: TrainResult, b: TrainResult) -> DeviceComparison:
    """Two runs' losses lined up epoch by epoch."""
    return DeviceComparison(
        devices=(a.device, b.device),
        train_losses=(tuple(figure(e.train_loss) for e in a.epochs), tuple(figure(e.train_loss) for e in b.epochs)),
        test_losses=(tuple(figure(e.test_loss) for e in a.epochs), tuple(figure(e.test_loss) for e in b.epochs)),
        seconds=(a.train_seconds, b.train_seconds),
    )
