"""The run history the Review classifier page keeps per user: small records, updated as reports arrive.

A record holds only numbers and the config (no model), so a session can keep many runs; the page
appends a report to the current record from the progress callback, so a Stop or a rerun keeps
everything that had been measured.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from core.classifier.baseline import BaselineResult
from core.classifier.model import ClassifierConfig
from core.classifier.training import EpochReport, TrainResult

RUNNING, DONE, STOPPED = "running", "done", "stopped"


@dataclass(frozen=True)
class RunRecord:
    number: int  # 1, 2, ... in this session
    data: str  # where the reviews came from
    config: ClassifierConfig
    device: str  # the device key once known ('cpu', 'cuda:0'), else the requested name
    reports: tuple[EpochReport, ...] = ()  # every report so far, partial ones included
    baseline: BaselineResult | None = None
    status: str = RUNNING
    best_epoch: int | None = None

    @property
    def label(self) -> str:
        preset = " · lecture" if self.config.preset == "lecture" else ""
        return f"run {self.number} · {self.device}{preset}"

    @property
    def epochs(self) -> tuple[EpochReport, ...]:
        """Completed epochs only."""
        return tuple(r for r in self.reports if not r.partial)

    @property
    def kept(self) -> EpochReport | None:
        done = self.epochs
        if self.best_epoch is not None and self.best_epoch <= len(done):
            return done[self.best_epoch - 1]
        return done[-1] if done else None

    @property
    def seconds_per_epoch(self) -> float | None:
        return statistics.median(r.seconds for r in self.epochs) if self.epochs else None

    def with_report(self, report: EpochReport) -> "RunRecord":
        return replace(self, reports=self.reports + (report,))

    def finished(self, result: TrainResult) -> "RunRecord":
        return replace(self, device=result.device, status=STOPPED if result.stopped else DONE,
                       best_epoch=result.best_epoch)


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
            "test accuracy": None if kept is None else round(kept.test.accuracy, 4),
            "baseline accuracy": None if r.baseline is None else round(r.baseline.accuracy, 4),
            "s / epoch": None if r.seconds_per_epoch is None else round(r.seconds_per_epoch, 4),
        })
    return rows
