"""One sentence that sets a student's crossover guess beside what the sweep measured.

The measurement is the sweep's headline crossover (core.results.crossover): a guess inside
(n_low, n_high] was right; one outside it is off by the factor to the nearer end. When the
verdicts could not call the crossover (a busy or noisy machine) the sentence says the guess can be
neither confirmed nor refuted, rather than pick a winner from noise.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.platform.units import times
from core.results.guess import CROSSOVER_N, NO_CROSSOVER, Guess
from core.results.crossover import Crossover
from core.results.matmul import MatmulSweep

CLOSE_FACTOR = 1.5  # within 1.5x of the interval's nearer end is "close": a size step a sweep barely resolves


def _guessed(g: Guess) -> str:
    return "no crossover" if g.what == NO_CROSSOVER else f"a crossover at n = {g.value:,.0f}"


def _interval(c: Crossover) -> str:
    return f"at or below n = {c.n_high:,}" if c.n_low is None else f"between n = {c.n_low:,} and n = {c.n_high:,}"


def _n_against(n: float, c: Crossover) -> str:
    """How far a guessed n lies from a found interval, in words."""
    assert c.n_high is not None
    low = c.n_low or 0
    if low < n <= c.n_high:
        return "your guess lies inside it: right"
    factor = n / c.n_high if n > c.n_high else (low / n if n > 0 else float("inf"))
    side = "too large" if n > c.n_high else "too small"
    closeness = "close, but " if factor <= CLOSE_FACTOR else ""
    return f"{closeness}your guess is {side} by about {times(factor)}"


def compare_guess(sweep: MatmulSweep, guess: Guess | None = None) -> str | None:
    """'You guessed ...; measured ...: ...' for `guess` (default: the sweep's own), or None without one.

    Against the sweep's headline crossover (MatmulSweep.headline_crossover), the one the page, Results and
    the Class board show: the guess is judged on the comparison the student sees."""
    g = guess or sweep.guess
    if g is None or g.what not in (CROSSOVER_N, NO_CROSSOVER):
        return None
    c = sweep.headline_crossover
    you = f"You guessed {_guessed(g)}"
    if c is None or c.call == "none":
        largest = max((p.n for p in sweep.results), default=0)
        verdict = "right" if g.what == NO_CROSSOVER else "none was measured"
        if c is None:
            return f"{you}; measured: no crossover between the sizes timed ({verdict})."
        return (f"{you}; measured: {c.challenger} does not beat {c.baseline} at any size up to n = {largest:,} "
                f"(no crossover in this range: {verdict}).")
    if c.call == "unclear":
        return (f"{you}; this run cannot tell where {c.challenger} starts to beat {c.baseline} (the machine was busy "
                "or the timings too noisy), so your guess can be neither confirmed nor refuted: run it again.")
    if c.n_high is None:  # a file older than the verdicts: only the interpolated headline
        assert c.n is not None
        measured = f"measured: the {c.winner} wins from n ≈ {c.n:,}"
        if g.what == NO_CROSSOVER:
            return f"{you}; {measured}, so there is one."
        factor = max(g.value or 1, c.n) / max(min(g.value or 1, c.n), 1)
        return f"{you}; {measured} ({times(factor)} apart)."
    measured = f"measured: {c.challenger} beats {c.baseline} from a size {_interval(c)}"
    if g.what == NO_CROSSOVER:
        return f"{you}; {measured}, so there is one."
    return f"{you}; {measured}; {_n_against(g.value or 0, c)}."


RIGHT, CANNOT_TELL = "right", "cannot tell"
TOO_SMALL, TOO_LARGE = "too small", "too large"
THERE_IS_ONE, NONE_MEASURED = "wrong: there is one", "wrong: none measured"


@dataclass(frozen=True)
class GuessCall:
    """A crossover guess judged against a sweep's headline crossover (`judge_guess`): the one judgement the Class
    board's table and the race page's line about the room's reference both put in words."""

    kind: str  # RIGHT, TOO_SMALL, TOO_LARGE, THERE_IS_ONE, NONE_MEASURED or CANNOT_TELL
    factor: float | None = None  # too small or too large: by how much, to the measured interval's nearer end
    measured: str = ""  # where the sweep put the crossover, in words ('' when it cannot tell)

    @property
    def close(self) -> bool:
        return self.factor is not None and self.factor <= CLOSE_FACTOR

    @property
    def short(self) -> str:
        """'right', 'too small (2.1×)', 'close, too large (1.3×)', 'wrong: there is one', 'cannot tell'."""
        if self.factor is None:
            return self.kind
        return f"{'close, ' if self.close else ''}{self.kind} ({self.factor:.1f}×)"


def judge_guess(g: Guess, sweep: MatmulSweep) -> GuessCall:
    """A crossover guess judged against `sweep`'s headline crossover: right, too small or too large by a factor
    (within CLOSE_FACTOR: close), wrong (there is one, or none was measured), or CANNOT_TELL where the sweep could
    not call it (a busy or noisy machine: neither confirmed nor refuted, as `compare_guess` says) or raced no two
    series."""
    c = sweep.headline_crossover
    if c is None:  # one series alone: nothing was compared
        return GuessCall(CANNOT_TELL)
    if c.call == "none":
        largest = max((p.n for p in sweep.results), default=0)
        none = f"no crossover up to n = {largest:,}"
        return GuessCall(RIGHT if g.what == NO_CROSSOVER else NONE_MEASURED, measured=none)
    if c.call == "unclear":
        return GuessCall(CANNOT_TELL)
    estimate = c.n_high if c.n_high is not None else c.n  # a file older than the verdicts: its estimate alone
    assert estimate is not None
    measured = f"a crossover {_interval(c)}" if c.n_high is not None else f"a crossover at n ≈ {estimate:,}"
    if g.what == NO_CROSSOVER:
        return GuessCall(THERE_IS_ONE, measured=measured)
    n = g.value or 0.0
    high = float(estimate)
    low = float(c.n_low or 0) if c.n_high is not None else high
    if low < n <= high or n == high:
        return GuessCall(RIGHT, measured=measured)
    factor = n / high if n > high else (low / n if n > 0 else float("inf"))
    return GuessCall(TOO_LARGE if n > high else TOO_SMALL, factor, measured)


def guess_call(g: Guess, sweep: MatmulSweep) -> str:
    """A crossover guess judged against `sweep`'s headline crossover in a few words, for a table of the class's
    guesses (the Class board's against the room's reference): `judge_guess`'s call, short."""
    return judge_guess(g, sweep).short
