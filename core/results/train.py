"""The classifier training run's result: what `python -m core train --json` prints (kind "train").

Version 2 adds `"kind": "train"` and `"schema_version": 2` to the object; version 1 had neither
and reads the same otherwise. A data-parallel run (`--workers K`, core.classifier.distributed) adds
the optional `"workers"`, `"backend"` and each epoch's `"allreduce_seconds"`; they are written only
when set, so a one-process run's object is unchanged and older files read as before. Each epoch's
`"val_loss"`, `"val_accuracy"` (runs with a validation split) and `"elapsed_s"` are optional in the
same way. A TrainEpoch is also the report a run sends while it trains, every `report_every` batches
a partial one: its `"batches_done"` and `"n_batches"` are written only then, so a saved (finished)
epoch has neither.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, Any, ClassVar

from pydantic import Field, PlainValidator, SerializerFunctionWrapHandler, model_serializer
from pydantic.dataclasses import dataclass

from core.platform.units import percent, seconds
from core.results import fields as f
from core.results.guess import Guess
from core.results.load import MachineLoad
from core.results.result_kind import Frame, ResultKind
from core.results.schema import Declared, Kind, field_names

KIND = "train"
VERSION = 2
PRESETS = ("minibatch", "lecture")  # core.classifier.model.PRESETS; repeated so the schema imports no torch
PRESET_TITLES = {"minibatch": "mini-batch", "lecture": "lecture"}  # how every legend and table row names them


def preset_title(preset: str | None) -> str:
    """'lecture' or 'mini-batch'; a run saved before presets existed trained in mini-batches (the only way then)."""
    return PRESET_TITLES.get(preset or "minibatch", preset or "mini-batch")
BACKENDS = ("gloo", "nccl")  # torch.distributed backends a data-parallel run may name
LATE = Field(default=None, exclude_if=f.omitted_when_none)  # a key a later release added: written only when set


@dataclass(frozen=True)
class TrainEpoch(Declared):
    """One epoch as saved, and the report a run sends while it trains (partial within an epoch)."""

    epoch: f.Count  # 1-based
    train_loss: f.Number  # mean loss over the epoch's batches (weights changing as it goes)
    test_loss: f.Number
    test_accuracy: f.Probability
    seconds: f.Number  # synchronized seconds of this epoch's training steps
    allreduce_seconds: f.Number = LATE  # data-parallel runs: mean over workers of the gradient all-reduce time
    val_loss: f.Number = LATE  # on the held-back training rows; None without a validation split
    val_accuracy: f.Probability = LATE
    batches_done: f.OptionalSize = None  # batches of this epoch done when reported; written only for a partial one
    n_batches: f.OptionalSize = None  # batches in a whole epoch
    elapsed_s: f.Number = LATE  # synchronized seconds since training started, evaluation included

    @property
    def partial(self) -> bool:
        """A report from within an epoch (every `report_every` batches), not a finished epoch."""
        return self.batches_done is not None and self.n_batches is not None and self.batches_done < self.n_batches

    @property
    def progress(self) -> float:
        """Epochs done as a fraction, e.g. 2.5 halfway through the third."""
        if self.batches_done is None or not self.n_batches:
            return float(self.epoch)
        return self.epoch - 1 + self.batches_done / self.n_batches

    @model_serializer(mode="wrap")
    def _batches_only_when_partial(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not self.partial:  # a saved (finished) epoch reads as it did before reports were epochs
            data.pop("batches_done", None)
            data.pop("n_batches", None)
        return data


@dataclass(frozen=True)
class Prediction(Declared):
    """A "try your own review" text and the kept model's p(positive)."""

    text: f.Review
    p_positive: f.Probability


@dataclass(frozen=True)
class TrainRun(Kind):
    """A finished or stopped training run as saved: every epoch, the kept accuracy, the baseline."""

    kind: ClassVar[str] = KIND
    schema_version: ClassVar[int] = VERSION

    device: f.Device
    n_train: f.Size
    n_test: f.Count
    vocab_size: f.Size
    epochs: f.Measured[TrainEpoch]
    test_accuracy: f.Probability  # the kept epoch's
    train_seconds: f.Number
    baseline_accuracy: f.Probability = None  # LogisticRegression on the same split
    predictions: f.Items[Prediction] = ()
    stopped: f.Flag = False
    settings: f.Settings = Field(default_factory=dict)
    preset: Annotated[str | None, PlainValidator(f.one_of(PRESETS))] = None  # None: written before presets existed
    dense_matrix_mb: f.Number = None  # the lecture preset's dense matrix on the device; None otherwise
    workers: f.OptionalSize = LATE  # data-parallel processes (torchrun); None for a one-process run
    backend: Annotated[str | None, PlainValidator(f.one_of(BACKENDS))] = LATE  # 'gloo' or 'nccl'
    load: MachineLoad | None = LATE  # how busy the machine was as it started; None in files older than the field
    guess: Guess | None = LATE  # seconds per epoch or the GPU's speed-up, predicted before the run

    @property
    def devices(self) -> list[str]:
        return [self.device]

    @property
    def headline(self) -> str:
        accuracy = f"accuracy {percent(self.test_accuracy)}" if self.test_accuracy is not None else "no accuracy"
        took = seconds(self.train_seconds or 0)
        return f"{preset_title(self.preset)}: {accuracy} in {took}, {len(self.epochs)} epochs"


# ---- the kind's record (core/results/result_kind.py): what the store's tables, the import and the pages read

# Every column of a saved epoch but a partial report's batch counts; `elapsed_s` is the table's own
# (training seconds summed, for a race by wall time), not the report's (evaluation included).
EPOCH_FIELDS = [c for c in field_names(TrainEpoch) if c not in ("batches_done", "n_batches", "elapsed_s")]


def _rows(run: TrainRun, device_title: Callable[[str], str]) -> Iterator[tuple[str, dict[str, object]]]:
    """One row per epoch; `elapsed_s` sums the epochs' seconds, for a race by wall time."""
    title = device_title(run.device)
    elapsed = 0.0
    for epoch in sorted(run.epochs, key=lambda e: e.epoch):
        elapsed += epoch.seconds or 0.0
        yield f"{title} {preset_title(run.preset)}", {"device": run.device, "device_title": title,
                                                     **{name: getattr(epoch, name) for name in EPOCH_FIELDS},
                                                     "elapsed_s": elapsed}


RESULT_KIND = ResultKind(name=KIND, schema=TrainRun, title="training run", detect=("epochs",),
                         frame=Frame(("device", "device_title", *EPOCH_FIELDS, "elapsed_s"), _rows), board=True)
