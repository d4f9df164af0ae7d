"""What a judged browser run says, in words and tables: why the GPU half is missing, the crossovers, the guess
against them, the "forgot to wait" figure, one big dispatch against many small dependent ones, and the verdict
per size. The page shows these as they come."""

from __future__ import annotations

from dataclasses import dataclass

from core.browser.assets import MESSAGES
from core.matmul import verdict
from core.platform.units import number, seconds
from core.results.browser import GPU_SERIES, SOFTWARE, SPLIT_SERIES, BrowserCrossover, BrowserRun
from core.results.guess import CROSSOVER_N, NO_CROSSOVER
from core.platform.units import times

BOX = {"found": "success", "none": "info", "unclear": "warning"}  # the kind of box each call is shown in


@dataclass(frozen=True)
class Line:
    """One sentence and the box it goes in (success, info, warning)."""

    box: str
    text: str


def gpu_line(run: BrowserRun) -> Line | None:
    """Why there is no GPU series (and what to do), or that the adapter is software; None for a real GPU."""
    if run.gpu != "ok":
        said = MESSAGES.get(run.gpu, "").replace(" ({origin})", "")
        return Line("warning", f"{said} {run.gpu_note}".strip() if run.gpu == "lost" else said or run.gpu_note)
    if run.software:
        return Line("info", f"This browser's WebGPU adapter is {run.adapter.title if run.adapter else SOFTWARE}: "
                            "SwiftShader draws on the CPU, so its times say nothing about a GPU.")
    return None


def crossover_lines(run: BrowserRun) -> list[Line]:
    """Every comparison, the headline first."""
    ordered = sorted(run.crossovers, key=lambda c: not c.gpu_vs_cpu)
    return [Line(BOX[c.call], f"**{'Crossover' if c.gpu_vs_cpu else 'Comparison'}:** {c.sentence}") for c in ordered]


def _interval(c: BrowserCrossover) -> str:
    return f"at or below n = {c.n_high:,}" if c.n_low is None else f"between n = {c.n_low:,} and n = {c.n_high:,}"


def guess_line(run: BrowserRun) -> str | None:
    """'You guessed ...; measured ...' against the headline crossover, or None without a guess."""
    g, c = run.guess, run.headline_crossover
    if g is None or g.what not in (CROSSOVER_N, NO_CROSSOVER) or c is None:
        return None
    you = "You guessed " + ("no crossover" if g.what == NO_CROSSOVER else f"a crossover at n = {g.value:,.0f}")
    if c.call == "unclear" or (c.call == "found" and c.n_high is None):
        return f"{you}; this run cannot tell where {c.challenger} starts to beat {c.baseline}: run it again."
    if c.call == "none":
        return f"{you}; measured: no crossover in this range ({'right' if g.what == NO_CROSSOVER else 'none found'})."
    if g.what == NO_CROSSOVER or c.n_high is None:
        return f"{you}; measured: {c.challenger} beats {c.baseline} from a size {_interval(c)}, so there is one."
    inside = (c.n_low or 0) < (g.value or 0) <= c.n_high
    return f"{you}; measured: a size {_interval(c)}: {'right' if inside else 'outside it'}."


def forgot_to_wait(run: BrowserRun) -> str | None:
    """The GPU's awaited time per call beside submit() alone, at the largest size: the classic timing bug."""
    gpu = [p for p in run.points if p.is_gpu and p.unawaited_s is not None and p.median_s]
    if not gpu:
        return None
    p = max(gpu, key=lambda p: p.n)
    assert p.median_s and p.unawaited_s is not None
    head = f"Forgot to wait: at n = {p.n:,} the product takes {p.median_s * 1e3:.3g} ms a call, but submit() alone "
    if not p.unawaited_s:  # under one step of performance.now() for the whole sample
        return head + ("returns before the browser's clock moves: a program that reads the clock without awaiting "
                       "the queue would claim the product is free.")
    return head + (f"returns after {p.unawaited_s * 1e3:.3g} ms: a program that reads the clock without awaiting the "
                   f"queue would claim {times(p.median_s / p.unawaited_s)} the speed.")


def dispatch_line(run: BrowserRun) -> Line | None:
    """One big dispatch against many small dependent ones, at the size the browser split: the ratio of their
    medians with its bootstrap interval and the race's call (faster beyond 5 %, same within, or cannot tell)."""
    split = next((p for p in run.points if p.series == SPLIT_SERIES and p.median_s), None)
    one = next((p for p in run.points if split and p.series == GPU_SERIES and p.n == split.n and p.median_s), None)
    if split is None or one is None or split.median_s is None or one.median_s is None:
        return None
    v = verdict.judge(split.n, GPU_SERIES, SPLIT_SERIES, one.times_s, split.times_s)
    head = (f"One big dispatch against {split.dispatches or 'many'} small dependent ones: at n = {split.n:,} the "
            f"same product took {seconds(one.median_s)} as one dispatch and {seconds(split.median_s)} as "
            f"{split.dispatches or 'many'}, each adding a 16-wide slice to C after the one before")
    if v.call == "unclear" or v.ratio is None:
        return Line("warning", f"{head}: cannot tell them apart ({v.why or 'the samples overlap'}).")
    span = f"{number(v.ratio)}× as long (95 % interval {number(v.low)}–{number(v.high)}×)"
    if v.call == "same":
        return Line("info", f"{head}: {span}, the same within 5 %: on this adapter a dispatch costs little "
                            "next to its work.")
    if v.a == GPU_SERIES:
        return Line("success", f"{head}: {span}. Each small dispatch pays its own launch and waits for the "
                               "one before: give the GPU one big piece of work.")
    return Line("info", f"{head}: the split was faster here ({number(v.ratio)}× the speed), so on this adapter "
                        "the launches cost less than what one big dispatch loses.")


def verdict_rows(run: BrowserRun) -> list[dict[str, object]]:
    """The verdict per size, as the race's table shows it."""
    return [{"n": v.n, "faster": v.a if v.call == "faster" else "", "compared": f"{v.a} vs {v.b}", "call": v.call,
             "ratio": v.ratio, "low": v.low, "high": v.high, "why": v.why} for v in run.verdicts]


def point_rows(run: BrowserRun) -> list[dict[str, object]]:
    """One row per series and size: the server's statistics of the browser's samples."""
    return [{"series": p.series, "n": p.n, "median ms": (p.median_s or 0) * 1e3, "IQR ms": (p.iqr_s or 0) * 1e3,
             "GFLOP/s": p.gflops, "samples": p.samples, "calls per sample": p.reps,
             "GPU timestamps ms": None if p.timestamp_median_s is None else p.timestamp_median_s * 1e3,
             "rel. error": p.rel_error}
            for p in sorted(run.points, key=lambda p: (p.n, p.series))]
