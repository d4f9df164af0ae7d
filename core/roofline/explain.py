"""The roofline run in plain words: the crossover predicted beside the measured one, and how far off the model is."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from core.platform.units import number, seconds
from core.results.crossover import FOUND, UNCLEAR, sentence
from core.results.roofline import RooflineRun
from core.roofline.model import SEARCH_MAX_N
from core.roofline.spread import names_of

MODEL_MIN_N = 256  # below this the products fit in cache and the fixed cost dominates: reported, not scored


@dataclass(frozen=True)
class ModelErrors:
    min_n: int
    count: int
    median_abs: float | None  # median |predicted - measured| / measured over points with n >= min_n
    worst: tuple[str, int, float] | None  # (series, n, signed error) of the worst point
    left_out: tuple[str, ...] = ()  # series whose constants were flagged noisy: their points are not scored


def whole_percent(share: float) -> str:
    """'9%', '-12%', '70,700%': a model's error in whole percent, at most three significant figures."""
    return f"{number(float(round(share * 100)))}%"


def model_errors(run: RooflineRun, min_n: int = MODEL_MIN_N) -> ModelErrors:
    """The model's error on the sweep, leaving out series with a noisy constant: a prediction from a
    busy machine's start-up cost says nothing about the model (it once read +70739 %)."""
    left_out = tuple(run.noisy_series)
    errors = [(p.series or p.device, p.n, (p.predicted_s - p.median_s) / p.median_s) for p in run.points
              if p.n >= min_n and p.predicted_s is not None and p.median_s and (p.series or p.device) not in left_out]
    if not errors:
        return ModelErrors(min_n, 0, None, None, left_out)
    worst = max(errors, key=lambda e: abs(e[2]))
    return ModelErrors(min_n, len(errors), statistics.median(abs(e[2]) for e in errors), worst, left_out)


def left_out_text(run: RooflineRun, errors: ModelErrors) -> str:
    """'Not scored: cpu float32 2 threads (noisy: thread wake-up cost).' or ''."""
    if not errors.left_out:
        return ""
    roofs = {d.series: d for d in run.devices_roofs}
    named = "; ".join(f"{s} (noisy: {names_of(roofs[s].noisy or ())})" for s in errors.left_out if s in roofs)
    return f"Not scored, their constants were too noisy to test the model with: {named}."


def model_error_text(run: RooflineRun) -> str:
    """How far the model is from the sweep, and the two reasons it misses where it does; '' without points."""
    errors = model_errors(run)
    skipped = left_out_text(run, errors)
    if errors.median_abs is None or errors.worst is None:
        return skipped
    series, n, worst = errors.worst
    return (f"Model against the sweep for n ≥ {errors.min_n}: median |error| "
            f"{whole_percent(errors.median_abs)} over {errors.count} products; "
            f"worst {'+' if worst > 0 else ''}{whole_percent(worst)} ({series}, n = {n:,}). "
            "Small products fit in cache, so the "
            "bandwidth roof (measured from RAM) overstates their cost, and mid-size ones run below the peak the "
            "largest reach; on a busy machine a second thread can stall for milliseconds, which no constant predicts."
            + (" " + skipped if skipped else ""))


def crossover_ratio(run: RooflineRun) -> float | None:
    """Predicted / measured crossover size; None unless both exist (measured: only where the verdicts found it)."""
    if run.predicted_crossover_n is None or run.measured_crossover_n is None:
        return None
    return run.predicted_crossover_n / run.measured_crossover_n


def measured_text(run: RooflineRun) -> str:
    """What the sweep says about the crossover, by the Matmul race's verdicts; older files (no verdicts) by their
    size."""
    c, n = run.measured_crossover, run.measured_crossover_n
    if c is None or run.verdicts is None:
        return "the sweep found none in its range" if n is None else f"the sweep measured it at n ≈ {n:,}"
    if c.call == FOUND and n is not None:
        return f"the sweep measured it at n ≈ {n:,} ({sentence(c, run.verdicts)})"
    return f"the sweep: {sentence(c, run.verdicts)}"


def cannot_tell(run: RooflineRun) -> bool:
    """Should the page show the reading as a warning: a noisy constant, or a measured crossover the verdicts
    could not call?"""
    unclear = run.measured_crossover is not None and run.measured_crossover.call == UNCLEAR
    return bool(run.noisy_series) or unclear


def predicted_range(run: RooflineRun) -> str:
    """' (the constants' spread allows n ≈ 60 to 110)', or '' where the run has no interval (older files)."""
    low, high = run.predicted_crossover_low, run.predicted_crossover_high
    if low is None or (low == high == run.predicted_crossover_n):
        return ""
    upper = f"beyond {SEARCH_MAX_N:,}" if high is None else f"{high:,}"
    return f" (the constants' spread allows n ≈ {low:,} to {upper})"


def prediction_flips(run: RooflineRun) -> bool:
    """Does the constants' noise allow both a crossover and none (one run 'n ≈ 1,127', the next 'no crossover up
    to n = 131,072')? Then the model's figure is one draw of the noise and is never stated as its prediction."""
    return run.prediction_flips


def noisy_caveat(run: RooflineRun) -> str:
    """'Cannot tell on a machine this busy: some of the constants are noisy (...)', or '' when none is."""
    roofs = {d.series: d for d in run.devices_roofs}
    noisy = [f"{d.series}: {names_of(d.noisy or ())}" for s in (run.challenger, run.baseline)
             if (d := roofs.get(s or "")) is not None and d.noisy]
    if not noisy:
        return ""
    return (f"Cannot tell on a machine this busy: some of the constants are noisy ({'; '.join(noisy)}; see their "
            "ranges in the table), so any crossover the model draws from them is uncertain.")


def prediction_text(run: RooflineRun) -> str:
    """What the model says about the crossover: its figure with the range the spread allows, or, where the noise
    allows both a crossover and none, only that range."""
    if prediction_flips(run):
        return (f"the model cannot say where: with each constant anywhere in its measured range it puts the "
                f"crossover anywhere from n ≈ {run.predicted_crossover_low:,} to none up to n = {SEARCH_MAX_N:,}")
    predicted = (f"the model predicts no crossover up to n = {SEARCH_MAX_N:,}" if run.predicted_crossover_n is None
                 else f"the model predicts the crossover at n ≈ {run.predicted_crossover_n:,}")
    return predicted + predicted_range(run)


def crossover_sentence(run: RooflineRun) -> str:
    """One paragraph: where the model puts the crossover, where the sweep found it, and why it is there.

    When the run cannot tell (a noisy constant, a measured crossover the verdicts could not call) the paragraph
    leads with it, and a prediction the noise allows to flip is given as its range only, after that caveat."""
    if run.challenger is None or run.baseline is None:
        return ("Only one series was measured, so there is no crossover to predict "
                "(choose a GPU, or a machine with 2+ cores).")
    roofs = {d.series: d for d in run.devices_roofs}
    fast, slow = roofs.get(run.challenger), roofs.get(run.baseline)
    gpu = fast is not None and fast.device != "cpu"
    who = "the GPU" if gpu else f"{fast.threads if fast else 'more'} threads"
    start = "to start (launch and synchronize)" if gpu else "to start (waking the other threads)"
    measured, predicted = measured_text(run), prediction_text(run)
    ratio = None if prediction_flips(run) else crossover_ratio(run)
    end = f" (ratio {number(ratio)})." if ratio is not None else "."
    if cannot_tell(run):  # the caveat first, then the sweep, then what the model can still say
        caveat = noisy_caveat(run)
        text = (f"{caveat} " if caveat else "") + f"{measured[0].upper()}{measured[1:]}. "
        text += f"{predicted[0].upper()}{predicted[1:]}{end}"
    else:
        text = f"{predicted}; {measured}{end}"
    if fast is not None and slow is not None and fast.overhead_s is not None and slow.overhead_s is not None:
        parts = ("" if fast.wake_s is None or fast.launch_s is None else
                 f" ({seconds(fast.launch_s)} for a product too small to split, plus {seconds(fast.wake_s)} "
                 "to wake the other threads)")
        text += (f" Starting one product costs {seconds(fast.overhead_s)} with {who}{parts} against "
                 f"{seconds(slow.overhead_s)} for {run.baseline}; its roof is {number(fast.peak_gflops or 0)} GFLOP/s "
                 f"against {number(slow.peak_gflops or 0)}.")
    pays, its = ("pays", "its") if gpu else ("pay", "their")
    if prediction_flips(run):
        text += (f" Below the crossover, {who} {pays} more {start} than {its} faster arithmetic saves; how much "
                 "more is what the noise hides.")
    elif run.predicted_crossover_n is not None and run.predicted_crossover_n > 1:
        text += (f" Below n ≈ {run.predicted_crossover_n:,}, {who} {pays} more {start} than {its} faster arithmetic "
                 "saves; above it the work grows like n³ and the faster roof wins.")
    return text[0].upper() + text[1:]
