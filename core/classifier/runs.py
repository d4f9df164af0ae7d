"""The run history the Review classifier page keeps per user: small records, updated as reports arrive.

A record holds only numbers and the config (no model), so a session can keep many runs; the page
appends a report to the current record from the progress callback, so a Stop or a rerun keeps
everything that had been measured.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from core.classifier.baseline import BaselineResult
from core.classifier.model import ClassifierConfig
from core.classifier.reports import TrainResult, figure, kept_words
from core.platform.units import percent
from core.results.load import MachineLoad
from core.results.train import TrainEpoch, preset_title

RUNNING, DONE, STOPPED = "running", "done", "stopped"
RISE = 1.02  # test loss 2% above its lowest counts as rising, not as noise
ACCURACY_NOISE = 0.005  # half a point: a test accuracy this much lower still "held" (2,133 test reviews: ±0.9 points)


@dataclass(frozen=True)
class RunRecord:
    number: int  # 1, 2, ... in this session
    data: str  # where the reviews came from
    config: ClassifierConfig
    device: str  # the device key once known ('cpu', 'cuda:0'), else the requested name
    reports: tuple[TrainEpoch, ...] = ()  # every report so far, partial ones included
    baseline: BaselineResult | None = None
    status: str = RUNNING
    best_epoch: int | None = None
    load: MachineLoad | None = None  # how busy the machine was as the run started
    threads: int | None = None  # the CPU threads torch used (None until the run finishes): s / epoch depends on it

    @property
    def label(self) -> str:
        return f"run {self.number} · {self.device} · {preset_title(self.config.preset)}"

    @property
    def epochs(self) -> tuple[TrainEpoch, ...]:
        """Completed epochs only."""
        return tuple(r for r in self.reports if not r.partial)

    @property
    def kept(self) -> TrainEpoch | None:
        done = self.epochs
        if self.best_epoch is not None and self.best_epoch <= len(done):
            return done[self.best_epoch - 1]
        return done[-1] if done else None

    @property
    def seconds_per_epoch(self) -> float | None:
        return statistics.median(r.seconds or 0.0 for r in self.epochs) if self.epochs else None

    def with_report(self, report: TrainEpoch) -> "RunRecord":
        return replace(self, reports=self.reports + (report,))

    def finished(self, result: TrainResult) -> "RunRecord":
        return replace(self, device=result.device, status=STOPPED if result.stopped else DONE,
                       best_epoch=result.best_epoch, load=result.load, threads=result.threads)

    @property
    def lowest_test_loss_epoch(self) -> int | None:
        return lowest_test_loss_epoch(self.epochs)

    @property
    def overfitting_note(self) -> str | None:
        validated = self.config.val_fraction > 0
        return overfitting_note(self.epochs, kept_words(self.config, self.best_epoch, validated)
                                if self.status != RUNNING else None)


def lowest_test_loss_epoch(epochs: Sequence[TrainEpoch]) -> int | None:
    """The completed epoch whose test loss was lowest, for the chart's marker only.

    It is never the kept epoch: choosing by test data would make the test accuracy a flattering
    guess. The kept epoch is the last, or the one with the lowest validation loss.
    """
    done = [e for e in epochs if not e.partial]
    return min(done, key=lambda e: (figure(e.test_loss), e.epoch)).epoch if done else None


def overfitting_note(epochs: Sequence[TrainEpoch], kept: str | None = None) -> str | None:
    """A few sentences when test loss rose after its lowest epoch while train loss kept falling, else None: what
    happened, what the test accuracy did meanwhile (on rt-polarity's defaults it held: the loss also grows with
    confidence), and, given `kept` (kept_words), which weights the run keeps and why that is not the lowest test
    loss."""
    done = [e for e in epochs if not e.partial]
    best = lowest_test_loss_epoch(done)
    if best is None or best == done[-1].epoch:
        return None
    low, last = done[best - 1], done[-1]
    low_test, last_test, low_train, last_train = (figure(low.test_loss), figure(last.test_loss),
                                                  figure(low.train_loss), figure(last.train_loss))
    if not last_test >= low_test * RISE or not last_train < low_train:  # NaN: no note
        return None
    text = (f"Overfitting: after epoch {low.epoch} the test loss rose from {low_test:.2f} to "
            f"{last_test:.2f} while the train loss kept falling to {last_train:.2f}, because the network "
            "is learning the training reviews by heart rather than what makes a review positive.")
    low_acc, last_acc = figure(low.test_accuracy), figure(last.test_accuracy)
    if not (math.isnan(low_acc) or math.isnan(last_acc)):
        held = last_acc >= low_acc - ACCURACY_NOISE
        text += (f" Its test accuracy {'held' if held else 'fell'} ({percent(low_acc)} at epoch {low.epoch}, "
                 f"{percent(last_acc)} at epoch {last.epoch})" + (": the loss also grows as the network becomes "
                 "surer of its answers, and a confident mistake costs a lot of it." if held else "."))
    if kept:
        text += (f" The run keeps {kept}: chosen without looking at the test reviews, so its test figures "
                 "stay an honest estimate; the lowest test loss is marked, never kept.")
    return text


def interrupted(records: Sequence[RunRecord]) -> list[RunRecord]:
    """At the start of a script run nothing is training, so a record still 'running' was stopped."""
    return [replace(r, status=STOPPED) if r.status == RUNNING else r for r in records]


def table_rows(records: Sequence[RunRecord]) -> list[dict]:
    """One row per run for st.dataframe: settings that differ between runs and what they reached."""
    rows = []
    for r in records:
        kept = r.kept
        rows.append({
            "run": r.number,
            "device": r.device,
            "preset": r.config.preset,
            "status": r.status,
            "data": r.data,
            "weighting": r.config.weighting,
            "ngrams": r.config.ngrams,
            "hidden": r.config.hidden,
            "lr": r.config.lr,
            "batch": None if r.config.preset == "lecture" else r.config.batch_size,  # lecture: every review
            "epochs done": len(r.epochs),
            "kept epoch": r.best_epoch,
            "test accuracy": percent(None if kept is None else kept.test_accuracy),
            "baseline accuracy": percent(None if r.baseline is None else r.baseline.accuracy),
            "s / epoch": r.seconds_per_epoch,  # three significant figures, as every table shows them
            "CPU threads": r.threads,
            "machine": "busy" if r.load is not None and r.load.busy else "",
        })
    return rows
