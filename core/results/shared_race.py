"""A run several sessions watched at once (issue 31's "join, don't queue"), as each of them saves it.

When students press Run on the same race while one is waiting or running, they join it
(core.platform.shared_jobs) and each saves its own copy of the one measurement, under its own name and
guess, so the board credits every one of them. The copies are not independent evidence: they are one
set of samples. Each copy therefore carries this record, the same `race` id in every copy, so a board
that counts measurements (core.store.class_board's measured crossovers) counts the race once, while the
guesses are counted per student.
"""

from __future__ import annotations

from pydantic.dataclasses import dataclass

from core.results import fields as f
from core.results.schema import Declared


@dataclass(frozen=True, kw_only=True)
class SharedRace(Declared):
    """Which shared run this copy is, how many sessions it was credited to, and whether this one joined it."""

    race: f.Name  # the run's id, the same in every copy: one measurement
    watchers: f.Size  # sessions that watched it to its end and got it (this one included)
    joined: f.Flag = False  # this session joined a run another session started

    @property
    def note(self) -> str:
        """'; one race shared by 3 sessions (you joined it)' for a page's done line; '' for a race watched alone."""
        if self.watchers <= 1 and not self.joined:
            return ""
        whose = " (you joined it)" if self.joined else " (you started it)"
        return f"; one race shared by {self.watchers} sessions{whose}, each saved under its own name and guess"
