"""What a sweep has measured so far, kept where an interrupted caller can still read it.

Streamlit ends a running script when the user presses Stop (or anything else that reruns), so
`run_sweep` never returns there; a page keeps a `SweepCollector` in its session, passes `add` as
`JobHooks.on_progress`, and after the rerun `result()` is the sweep so far, marked stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from core.matmul.config import SweepConfig
from core.matmul.plan import Plan, plan_series
from core.matmul.report import sweep_of
from core.matmul.series import Series
from core.matmul.sweep import SweepEvent
from core.platform.jobs import Progress
from core.results.guess import Guess
from core.results.matmul import MatmulPoint, MatmulSweep, SkippedSize


@dataclass
class SweepCollector:
    """One sweep's plan (its config and series), every result and skip as it arrives, and the returned result
    once there."""

    plan: Plan  # made once by `start`, and passed to run_sweep
    results: list[MatmulPoint] = field(default_factory=list)
    skipped: list[SkippedSize] = field(default_factory=list)
    final: MatmulSweep | None = None  # what run_sweep returned; None while running or after an interruption
    saved_run: int | None = None  # its run number on the Results page, once saved
    guess: Guess | None = None  # the student's prediction, saved with the sweep

    @classmethod
    def start(cls, config: SweepConfig, guess: Guess | None = None) -> SweepCollector:
        """Plan the sweep (a bad choice raises DashboardError here, before anyone waits in line)."""
        return cls(plan_series(config), guess=guess)

    @property
    def config(self) -> SweepConfig:
        return self.plan.config

    @property
    def series(self) -> tuple[Series, ...]:
        return self.plan.series

    def add(self, progress: Progress[SweepEvent]) -> None:
        """The `on_progress` hook: keep each result and skip the moment it is measured."""
        event = progress.item
        if event is None:
            return
        if event.result is not None:
            self.results.append(event.result)
        if event.skipped is not None:
            self.skipped.append(event.skipped)

    def finish(self, result: MatmulSweep) -> MatmulSweep:
        self.final = self._with_guess(result)
        return self.final

    def _with_guess(self, result: MatmulSweep) -> MatmulSweep:
        return result if self.guess is None else replace(result, guess=self.guess)

    @property
    def steps_total(self) -> int:
        return len(self.config.sizes) * len(self.series)

    @property
    def steps_done(self) -> int:
        return len(self.results) + len(self.skipped)

    @property
    def has_steps(self) -> bool:
        return self.steps_done > 0

    def result(self) -> MatmulSweep:
        """The returned result, or (interrupted) what arrived before the interruption, marked stopped."""
        if self.final is not None:
            return self.final
        return self._with_guess(sweep_of(self.config, self.series, self.results, self.skipped, stopped=True))

    def stop_summary(self) -> str | None:
        """'Stopped after 3 of 12 steps (why); ...' for a stopped sweep, None for a finished one."""
        shown = self.result()
        if not shown.stopped:
            return None
        why = f" ({shown.stop_reason})" if shown.stop_reason else ""
        return f"Stopped after {self.steps_done} of {self.steps_total} steps{why}; what was measured is kept below."

    @property
    def can_save(self) -> bool:
        """Something was measured and it is not saved yet (a stopped sweep is saved only on request)."""
        return self.saved_run is None and bool(self.result().results)

    def save_note(self) -> str:
        """What the page says about the Results page: saved as #N, nothing to save, or why it is not saved."""
        if self.saved_run is not None:
            return f"Saved as run #{self.saved_run}: the **Results** page can overlay it with other machines' runs."
        shown = self.result()
        if not shown.results:
            return "Nothing was measured, so nothing was saved to the Results page."
        why = "an incomplete sweep is saved only on request." if shown.stopped else "the save did not go through."
        return f"Not saved to the Results page: {why}"
