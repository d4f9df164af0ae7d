"""One sentence that sets a student's training guess beside what was measured.

A guess is seconds per epoch (compared with each device's runs) or the GPU's speed-up over the CPU
(which needs a race: the same run on both). The measured figure is the median over the run's
epochs, given with its range, since one epoch on a shared machine is a sample, not a fact; a run
that started on a busy machine says so instead of passing its figure off as the machine's speed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from core.platform.units import times
from core.results.guess import EPOCH_S, SPEEDUP, Guess
from core.results.train import TrainRun

CLOSE_FACTOR = 1.5  # within 1.5x counts as "close": less than the spread of epoch times on a busy laptop


def epoch_seconds(run: TrainRun) -> list[float]:
    """Each finished epoch's synchronized training seconds (partial reports have none)."""
    return [e.seconds for e in run.epochs if e.seconds is not None and e.seconds > 0]


def _step(run: TrainRun) -> str:
    return "update" if run.preset == "lecture" else "epoch"


def _seconds(value: float) -> str:
    return f"{value * 1e3:.3g} ms" if value < 1 else f"{value:.3g} s"


def _how_far(guessed: float, measured: float, *, larger: str, smaller: str) -> str:
    factor = max(guessed, measured) / min(guessed, measured)
    if factor <= CLOSE_FACTOR:
        return "close" if factor > 1.1 else "right"
    return f"{larger if guessed > measured else smaller} by about {times(factor)}"


def _measured(run: TrainRun) -> tuple[float, str] | None:
    seconds = epoch_seconds(run)
    if not seconds:
        return None
    median = statistics.median(seconds)
    spread = f", {_seconds(min(seconds))}–{_seconds(max(seconds))} over {len(seconds)}" if len(seconds) > 1 else ""
    busy = " on a busy machine" if run.load is not None and run.load.busy else ""
    return median, f"{_seconds(median)} per {_step(run)} on {run.device}{busy}{spread}"


def compare_guess(runs: Sequence[TrainRun], guess: Guess | None = None) -> str | None:
    """'You guessed ...; measured ...: ...' for `guess` (default: the last run's own) against `runs`
    (one run, or a race's CPU and GPU runs); None without a guess or a finished epoch."""
    g = guess or (runs[-1].guess if runs else None)
    measured = [(run, m) for run in runs if (m := _measured(run)) is not None]
    if g is None or g.value is None or not measured:
        return None
    if g.what == EPOCH_S:
        run, (median, text) = measured[-1]
        far = _how_far(g.value, median, larger="too high", smaller="too low")
        return f"You guessed {_seconds(g.value)} per {_step(run)}; measured {text}: {far}."
    if g.what != SPEEDUP:
        return None
    cpu = [m for run, m in measured if run.device == "cpu"]
    gpu = [m for run, m in measured if run.device != "cpu"]
    if not cpu or not gpu:
        only = measured[-1][1][1]
        return (f"You guessed the GPU {g.value:.3g}× faster; this run measured one device only ({only}): "
                "*Race CPU vs GPU* on a machine with a GPU measures the speed-up.")
    speedup = cpu[-1][0] / gpu[-1][0]
    far = _how_far(g.value, speedup, larger="too high", smaller="too low")
    return (f"You guessed the GPU {g.value:.3g}× faster; measured {speedup:.3g}× ({cpu[-1][1]} against "
            f"{gpu[-1][1]}): {far}.")
