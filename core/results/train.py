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

from dataclasses import dataclass, field
from typing import Any

from core.platform.units import percent
from core.results import fields as f
from core.results.load import MachineLoad, read_load

KIND = "train"
VERSION = 2
MAX_REVIEW_CHARS = 100_000  # one "try your own review" text


@dataclass(frozen=True)
class TrainEpoch:
    epoch: int  # 1-based
    train_loss: float | None
    test_loss: float | None
    test_accuracy: float | None
    seconds: float | None  # synchronized seconds of this epoch's training steps
    allreduce_seconds: float | None = None  # data-parallel runs: mean over workers of the gradient all-reduce time
    val_loss: float | None = None  # on the held-back training rows; None without a validation split
    val_accuracy: float | None = None
    batches_done: int | None = None  # batches of this epoch done when it was reported; None in older files
    n_batches: int | None = None  # batches in a whole epoch
    elapsed_s: float | None = None  # synchronized seconds since training started, evaluation included

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

    def to_json(self) -> dict[str, Any]:
        optional = {"allreduce_seconds": self.allreduce_seconds, "val_loss": self.val_loss,
                    "val_accuracy": self.val_accuracy, "elapsed_s": self.elapsed_s,
                    **({"batches_done": self.batches_done, "n_batches": self.n_batches} if self.partial else {})}
        return {"epoch": self.epoch, "train_loss": self.train_loss, "test_loss": self.test_loss,
                "test_accuracy": self.test_accuracy, "seconds": self.seconds,
                **{k: v for k, v in optional.items() if v is not None}}

    @classmethod
    def from_json(cls, value: Any, path: str) -> TrainEpoch:
        e = f.obj(value, path)
        for key in ("epoch", "train_loss", "test_loss", "test_accuracy", "seconds"):
            f.field(e, key, path)
        return cls(epoch=f.count(e["epoch"], f"{path}.epoch"), train_loss=f.number(e["train_loss"], f"{path}.train_loss"),
                   test_loss=f.number(e["test_loss"], f"{path}.test_loss"),
                   test_accuracy=f.probability(e["test_accuracy"], f"{path}.test_accuracy"),
                   seconds=f.number(e["seconds"], f"{path}.seconds"),
                   allreduce_seconds=f.number(e.get("allreduce_seconds"), f"{path}.allreduce_seconds"),
                   val_loss=f.number(e.get("val_loss"), f"{path}.val_loss"),
                   val_accuracy=f.probability(e.get("val_accuracy"), f"{path}.val_accuracy"),
                   batches_done=f.optional_count(e.get("batches_done"), f"{path}.batches_done", 1),
                   n_batches=f.optional_count(e.get("n_batches"), f"{path}.n_batches", 1),
                   elapsed_s=f.number(e.get("elapsed_s"), f"{path}.elapsed_s"))


@dataclass(frozen=True)
class Prediction:
    text: str
    p_positive: float | None

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "p_positive": self.p_positive}

    @classmethod
    def from_json(cls, value: Any, path: str) -> Prediction:
        p = f.obj(value, path)
        return cls(text=f.text(f.field(p, "text", path), f"{path}.text", max_chars=MAX_REVIEW_CHARS, empty=True),
                   p_positive=f.probability(f.field(p, "p_positive", path), f"{path}.p_positive"))


@dataclass(frozen=True)
class TrainRun:
    """A finished or stopped training run as saved: every epoch, the kept accuracy, the baseline."""

    device: str
    n_train: int
    n_test: int
    vocab_size: int
    epochs: tuple[TrainEpoch, ...]
    test_accuracy: float | None
    train_seconds: float | None
    baseline_accuracy: float | None = None
    predictions: tuple[Prediction, ...] = ()
    stopped: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    load: MachineLoad | None = None  # how busy the machine was as it started; None in files older than the field
    preset: str | None = None  # 'lecture' or 'minibatch'; None in files written before presets existed
    dense_matrix_mb: float | None = None  # the lecture preset's dense matrix on the device; None otherwise
    workers: int | None = None  # data-parallel processes (torchrun); None for a one-process run
    backend: str | None = None  # their torch.distributed backend: 'gloo' or 'nccl'
    extra: dict[str, Any] = field(default_factory=dict)  # keys a newer version added, kept as they came

    kind = KIND

    @property
    def devices(self) -> list[str]:
        return [self.device]

    @property
    def headline(self) -> str:
        accuracy = f"accuracy {percent(self.test_accuracy)}" if self.test_accuracy is not None else "no accuracy"
        return f"{accuracy} in {self.train_seconds or 0:.1f} s, {len(self.epochs)} epochs"

    def to_json(self) -> dict[str, Any]:
        return {**self.extra, "kind": KIND, "schema_version": VERSION, "device": self.device, "n_train": self.n_train,
                "n_test": self.n_test, "vocab_size": self.vocab_size, "epochs": [e.to_json() for e in self.epochs],
                "test_accuracy": self.test_accuracy, "train_seconds": self.train_seconds,
                "baseline_accuracy": self.baseline_accuracy, "predictions": [p.to_json() for p in self.predictions],
                "stopped": self.stopped, "settings": self.settings, "preset": self.preset,
                "dense_matrix_mb": self.dense_matrix_mb,
                **({"workers": self.workers} if self.workers is not None else {}),
                **({"backend": self.backend} if self.backend is not None else {}),
                **({"load": self.load.to_json()} if self.load is not None else {})}

    @classmethod
    def from_json(cls, value: dict[str, Any], path: str) -> TrainRun:
        """Read a version 1 or 2 object (the caller checked kind and version)."""
        v = value
        for key in ("device", "n_train", "n_test", "vocab_size", "epochs", "test_accuracy", "train_seconds"):
            f.field(v, key, path)
        known = {"kind", "schema_version", "device", "n_train", "n_test", "vocab_size", "epochs", "test_accuracy",
                 "train_seconds", "baseline_accuracy", "predictions", "stopped", "settings", "load", "preset",
                 "dense_matrix_mb", "workers", "backend"}
        return cls(
            device=f.device(v["device"], f"{path}.device"), n_train=f.count(v["n_train"], f"{path}.n_train", 1),
            n_test=f.count(v["n_test"], f"{path}.n_test"), vocab_size=f.count(v["vocab_size"], f"{path}.vocab_size", 1),
            epochs=f.list_of(v["epochs"], f"{path}.epochs", TrainEpoch.from_json, minimum=1),
            test_accuracy=f.probability(v["test_accuracy"], f"{path}.test_accuracy"),
            train_seconds=f.number(v["train_seconds"], f"{path}.train_seconds"),
            baseline_accuracy=f.probability(v.get("baseline_accuracy"), f"{path}.baseline_accuracy"),
            predictions=f.list_of(v.get("predictions") or [], f"{path}.predictions", Prediction.from_json),
            stopped=f.flag(v.get("stopped", False), f"{path}.stopped"),
            settings=f.optional_object(v.get("settings"), f"{path}.settings"),
            load=read_load(v.get("load"), f"{path}.load"),
            preset=_preset(v.get("preset"), f"{path}.preset"),
            dense_matrix_mb=f.number(v.get("dense_matrix_mb"), f"{path}.dense_matrix_mb"),
            workers=f.optional_count(v.get("workers"), f"{path}.workers", 1),
            backend=_backend(v.get("backend"), f"{path}.backend"),
            extra={k: x for k, x in v.items() if k not in known},
        )


PRESETS = ("minibatch", "lecture")  # core.classifier.model.PRESETS; repeated so the schema imports no torch


def _preset(value: Any, path: str) -> str | None:
    if value is None:
        return None
    if value not in PRESETS:
        raise f.fail(path, f"one of {', '.join(PRESETS)}", value)
    return str(value)


BACKENDS = ("gloo", "nccl")  # torch.distributed backends a data-parallel run may name


def _backend(value: Any, path: str) -> str | None:
    if value is None:
        return None
    if value not in BACKENDS:
        raise f.fail(path, f"one of {', '.join(BACKENDS)}", value)
    return str(value)
