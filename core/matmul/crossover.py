"""The crossover: the matrix size from which a challenger (the GPU) beats a baseline (the CPU) for good.

"For good" matters: with noisy timings the GPU can win at one small size, lose at the next and
win from then on. Two readings of that:

- the estimate (`find_crossover`): the smallest size from which the challenger's median is lower at
  every larger measured size, interpolated between the two measured sizes around it on a log-log scale
  (speed-up is close to a power law in n there);
- the call (`crossover_interval`, from core.matmul.verdict's call per size): the interval of sizes in
  which it lies, found only where the samples say so.

`crossover_of` puts them together into the one saved record (core.results.crossover.Crossover), for
every caller: the race (`sweep_crossovers`), the Roofline's measured crossover, and a file being
imported (`recomputed`: what a file says about its crossovers and verdicts is never taken from it,
only its points are; the rest is computed here again, by the same rule).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from core.errors import DashboardError
from core.matmul import verdict
from core.results.crossover import COMPUTE, END_TO_END, FOUND, NONE, UNCLEAR, Crossover, Verdict
from core.results.kinds import Result
from core.results.matmul import MatmulPoint, MatmulSweep
from core.results.roofline import RooflinePoint, RooflineRun
from core.results.runs import RunRecord

INTERPOLATED = "interpolated"  # between two measured sizes
BELOW_RANGE = "below_range"  # the challenger wins at every measured size: at or below the first
NONE_IN_RANGE = "none"  # the challenger is not ahead at the largest measured size
NO_DATA = "no_data"  # no size measured for both


@dataclass(frozen=True)
class Estimate:
    """The medians' crossover: where the challenger's median drops below the baseline's for good."""

    status: str  # one of INTERPOLATED, BELOW_RANGE, NONE_IN_RANGE, NO_DATA
    n: float | None  # the crossover size; the first measured size for BELOW_RANGE; None otherwise
    lower_n: int | None = None  # the measured size just below (where the challenger did not win)
    upper_n: int | None = None  # the measured size from which the challenger wins

    @property
    def n_int(self) -> int | None:
        """Rounded, as the record keeps it."""
        return None if self.n is None else int(round(self.n))


def find_crossover(sizes: Sequence[int], challenger_s: Sequence[float], baseline_s: Sequence[float]) -> Estimate:
    """The estimate from times measured at the same sizes (any order; each size once)."""
    if not (len(sizes) == len(challenger_s) == len(baseline_s)):
        raise ValueError(f"need equal lengths, got {len(sizes)}, {len(challenger_s)}, {len(baseline_s)}")
    points = sorted(zip(sizes, challenger_s, baseline_s))
    if not points:
        return Estimate(NO_DATA, None)
    speedups = [base / chal for _, chal, base in points]  # > 1: the challenger is faster
    first_winning = len(points)
    for i in range(len(points) - 1, -1, -1):
        if speedups[i] <= 1.0:
            break
        first_winning = i
    if first_winning == len(points):
        return Estimate(NONE_IN_RANGE, None)
    if first_winning == 0:
        return Estimate(BELOW_RANGE, float(points[0][0]), None, points[0][0])
    lo, hi = first_winning - 1, first_winning
    n_lo, n_hi = points[lo][0], points[hi][0]
    log_s_lo, log_s_hi = math.log(speedups[lo]), math.log(speedups[hi])  # <= 0 and > 0
    fraction = (0.0 - log_s_lo) / (log_s_hi - log_s_lo)
    n = math.exp(math.log(n_lo) + fraction * (math.log(n_hi) - math.log(n_lo)))
    return Estimate(INTERPOLATED, n, n_lo, n_hi)


@dataclass(frozen=True)
class Interval:
    """Where the verdicts put the crossover, and their call (core.results.crossover.Crossover's fields)."""

    call: str
    n_low: int | None = None
    n_high: int | None = None


def crossover_interval(verdicts: Sequence[Verdict], challenger: str, baseline: str) -> Interval:
    """Where `challenger` starts to beat `baseline` for good, from the verdicts of that pair (any order): from
    n_high on it is called faster at every larger size; n_low is the nearest size below where it was
    confidently not faster. `found` needs both sides (or a win at every size), `none` a confident non-win at
    the largest size, and everything else is `unclear`."""
    ordered = sorted((v for v in verdicts if {v.a, v.b} == {challenger, baseline}), key=lambda v: v.n)
    if not ordered:
        return Interval(UNCLEAR)
    first = len(ordered)  # index from which the challenger wins at every size
    while first > 0 and verdict.challenger_wins(ordered[first - 1], challenger):
        first -= 1
    if first == len(ordered):  # not a win at the largest size: none if that is sure, else unclear
        return Interval(UNCLEAR if ordered[-1].call == verdict.UNCLEAR else NONE)
    n_high = ordered[first].n
    if first == 0:
        return Interval(FOUND, n_high=n_high)
    sure_below = [v for v in ordered[:first]
                  if v.call != verdict.UNCLEAR and not verdict.challenger_wins(v, challenger)]
    if not sure_below:
        return Interval(UNCLEAR, n_high=n_high)
    return Interval(FOUND, n_low=sure_below[-1].n, n_high=n_high)


def within(n: int | None, interval: Interval) -> int | None:
    """An interpolated crossover size kept inside the verdicts' interval (None unless found): a chart's
    "wins from n ≈ ..." never rests on a call the samples could not make."""
    if interval.call != FOUND or interval.n_high is None:
        return None
    low = interval.n_low or 1
    return interval.n_high if n is None else min(max(n, low), interval.n_high)


def crossover_of(points: Sequence[MatmulPoint | RooflinePoint], challenger: str, baseline: str, *, time: str = COMPUTE,
                 verdicts: Sequence[Verdict] | None = None) -> Crossover:
    """The one crossover record of a pair, from its points and its verdicts; every crossover is made here.

    Compute time with verdicts: their interval and call, the medians' estimate kept inside it. End to end
    (copies measured apart: no verdicts of its own) and files older than the verdicts (`verdicts` None): the
    medians' estimate and the two measured sizes around it, except that a pair the verdicts found timed on a
    busy machine gets no size there ("cannot tell")."""
    pair = [v for v in verdicts or () if {v.a, v.b} == {challenger, baseline}]
    medians = {(p.label, p.n): getattr(p, time) for p in points if getattr(p, time) is not None}
    sizes = sorted(n for label, n in medians if label == challenger and (baseline, n) in medians)
    est = find_crossover(sizes, [medians[challenger, n] for n in sizes], [medians[baseline, n] for n in sizes])
    if time == COMPUTE and verdicts is not None:
        interval = crossover_interval(pair, challenger, baseline)
        return Crossover(challenger=challenger, baseline=baseline, time=time, call=interval.call,
                         n_low=interval.n_low, n_high=interval.n_high, n=within(est.n_int, interval))
    if any(v.busy for v in pair):
        return Crossover(challenger=challenger, baseline=baseline, time=time, call=UNCLEAR)
    if est.status in (INTERPOLATED, BELOW_RANGE):
        return Crossover(challenger=challenger, baseline=baseline, time=time, call=FOUND, n_low=est.lower_n,
                         n_high=est.upper_n, n=est.n_int)
    return Crossover(challenger=challenger, baseline=baseline, time=time,
                     call=NONE if est.status == NONE_IN_RANGE else UNCLEAR)


class SeriesLike(Protocol):
    """What a comparison needs of a series: a series.Series, a MatmulPoint, or a label read back."""

    @property
    def label(self) -> str: ...
    @property
    def is_gpu(self) -> bool: ...
    @property
    def dtype(self) -> str: ...
    @property
    def threads(self) -> int | None: ...


def comparisons(series: Sequence[SeriesLike]) -> list[tuple[str, str]]:
    """(challenger, baseline) labels worth a crossover and a speed-up line.

    With a GPU: each GPU series against the CPU series of the same dtype (the one with the
    most threads), else against the CPU's float32. Without: each series against the first.
    """
    cpus = [s for s in series if not s.is_gpu]
    gpus = [s for s in series if s.is_gpu]
    if not gpus:
        return [(s.label, cpus[0].label) for s in cpus[1:]]
    pairs = []
    for g in gpus:
        same = [c for c in cpus if c.dtype == g.dtype] or [c for c in cpus if c.dtype == "float32"]
        if same:
            pairs.append((g.label, max(same, key=lambda c: c.threads or 0).label))
    return pairs


def sweep_verdicts(pairs: Sequence[tuple[str, str]], points: Sequence[MatmulPoint], *,
                   cores: int | None = None) -> list[Verdict]:
    """Every comparison's call at every size both series measured (compute time); `cores`: the cores the
    sweep could use (its load probe's; default: now), against which the busy rule is scaled."""
    return [v for challenger, baseline in pairs
            for v in verdict.pair_verdicts(points, challenger, baseline, cores=cores)]


def sweep_crossovers(pairs: Sequence[tuple[str, str]], points: Sequence[MatmulPoint], *, end_to_end: bool,
                     verdicts: Sequence[Verdict] | None) -> list[Crossover]:
    """Every comparison's crossover, for compute time and, if the copies were timed, end to end."""
    times = (COMPUTE, END_TO_END) if end_to_end else (COMPUTE,)
    return [crossover_of(points, challenger, baseline, time=time, verdicts=verdicts)
            for challenger, baseline in pairs for time in times]


# ---------------------------------------------------------------- an imported file: only its points are taken


@dataclass(frozen=True)
class NamedSeries:
    """A series known only by its label ('cuda:0 float32 TF32 off', 'cpu float32 2 threads'): a sweep's
    settings name every series it planned, measured or not."""

    label: str

    @property
    def is_gpu(self) -> bool:
        return self.label.split(" ", 1)[0] != "cpu"

    @property
    def dtype(self) -> str:
        words = self.label.split()
        return words[1] if len(words) > 1 else ""

    @property
    def threads(self) -> int | None:
        words = self.label.split()
        return next((int(w) for w, unit in zip(words, words[1:]) if unit.startswith("thread") and w.isdigit()), None)


def _series_of(sweep: MatmulSweep) -> list[SeriesLike]:
    """The sweep's series in its order: each measured one by its points, one never measured by its label."""
    measured: dict[str, SeriesLike] = {}
    for p in sweep.results:
        measured.setdefault(p.label, p)
    return [measured.get(label) or NamedSeries(label) for label in dict.fromkeys([*sweep.series, *measured])]


def _cores(sweep: MatmulSweep) -> int | None:
    """The cores the sweep could use, as it probed them (None: not said; the verdicts then assume now's)."""
    if sweep.load is not None:
        return sweep.load.cores
    cpu = sweep.machine.get("cpu") if isinstance(sweep.machine, dict) else None
    cores = cpu.get("logical_cores") if isinstance(cpu, dict) else None
    return cores if isinstance(cores, int) and not isinstance(cores, bool) and cores > 0 else None


def recomputed(sweep: MatmulSweep) -> MatmulSweep:
    """`sweep` with its verdicts and crossovers computed again from its points, as the race computes them.

    What a file says about them is dropped: a hand edit ("GPU wins from n≈100" on a CPU-only run, an interval
    outside the sizes measured, a verdict at a size never timed, a ratio of 1e300) cannot reach a board. A file
    with verdicts is judged again from its samples; one older than the verdicts (none saved) by its medians, the
    rule it was made with. Copies count where its settings say they were timed."""
    pairs = comparisons(_series_of(sweep))
    verdicts = sweep_verdicts(pairs, sweep.results, cores=_cores(sweep)) if sweep.verdicts is not None else None
    timed_copies = sweep.settings.get("end_to_end")
    end_to_end = timed_copies is True or (timed_copies is None and any(p.is_gpu and p.end_to_end_s is not None
                                                                         for p in sweep.results))
    crossovers = sweep_crossovers(pairs, sweep.results, end_to_end=end_to_end, verdicts=verdicts)
    return replace(sweep, verdicts=None if verdicts is None else tuple(verdicts), crossovers=tuple(crossovers))


MAX_SAMPLES_PER_POINT = 200  # core.matmul.paired.MAX_ROUNDS and timing.measure's max_samples: a sweep takes no more
MAX_IMPORT_SAMPLES = 100_000  # samples judged again in one import: about 10 s of bootstrap
REL_TOLERANCE = 1e-6  # a saved ratio against the ratio of the saved medians: the same division, JSON round trip


def recomputed_roofline(run: RooflineRun, path: str = "roofline") -> RooflineRun:
    """`run` with its measured crossover computed again from its points and verdicts, once the verdicts are
    shown to agree with the points (or a DashboardError naming the first that does not).

    A roofline file keeps each size's median, not its samples, so its verdicts cannot be judged again; what
    can be checked is: one per size both series measured and no other, between the run's two series, the
    ratio of their medians, an interval in order, and a call that interval allows."""
    if run.challenger is None or run.baseline is None:
        return replace(run, verdicts=None, measured_crossover=None)
    pair = (run.challenger, run.baseline)
    if run.verdicts is not None:
        _check_verdicts(run, pair, f"{path}.verdicts")
    measured = crossover_of(run.points, *pair, verdicts=run.verdicts)
    return replace(run, measured_crossover=measured)


def _check_verdicts(run: RooflineRun, pair: tuple[str, str], path: str) -> None:
    medians = {(p.label, p.n): p.median_s for p in run.points if p.median_s}
    common = {n for label, n in medians if label == pair[0] and (pair[1], n) in medians}
    seen: set[int] = set()
    for i, v in enumerate(run.verdicts or ()):
        where = f"{path}[{i}]"
        if {v.a, v.b} != set(pair):
            raise _disagrees(f"{where}: a verdict of {v.a!r} against {v.b!r}, not of the run's two series")
        if v.n not in common or v.n in seen:
            raise _disagrees(f"{where}: a verdict at n = {v.n}, " + ("given twice" if v.n in seen else
                                                                      "a size the points do not have for both series"))
        seen.add(v.n)
        ratio = medians[v.b, v.n] / medians[v.a, v.n]
        if v.ratio is not None and not math.isclose(v.ratio, ratio, rel_tol=REL_TOLERANCE):
            raise _disagrees(f"{where}.ratio: {v.ratio:.6g}, but the points' medians give {ratio:.6g}")
        if v.low is not None and v.high is not None and v.low > v.high:
            raise _disagrees(f"{where}: its interval runs backwards ({v.low:.6g} to {v.high:.6g})")
        if v.call != verdict.UNCLEAR and not _allowed(v):
            raise _disagrees(f"{where}.call: {v.call!r} is not what its interval allows")
    if seen != common:
        raise _disagrees(f"{path}: no verdict at n = {min(common - seen)}, a size both series measured")


def _allowed(v: Verdict) -> bool:
    """Does the verdict's interval allow its call ("faster": `a`, named first, is the faster one)?"""
    if v.low is None or v.high is None or verdict.call_of(v.low, v.high) != v.call:
        return False
    return v.call != verdict.FASTER or v.low > 1


def _disagrees(what: str) -> DashboardError:
    return DashboardError(f"{what}; a measured run never says this, so nothing from the file was imported")


def rederived(result: Result, path: str) -> Result:
    """An imported result with what is derived from its points derived again here (see `recomputed`)."""
    if isinstance(result, MatmulSweep):
        return recomputed(result)
    if isinstance(result, RooflineRun):
        return recomputed_roofline(result, path)
    return result


def rederive_imported(records: Sequence[RunRecord]) -> list[RunRecord]:
    """Imported runs as the store keeps them: what each result derives from its points derived here again,
    never taken from the file (core.store.database's import calls this on every file it reads).

    Judging costs about 0.1 ms per sample (a default race: 60 ms), so a file may hold at most
    MAX_SAMPLES_PER_POINT samples a point (no sweep takes more) and MAX_IMPORT_SAMPLES to judge in all
    (a class board of 200 default races holds about 55,000): a forged file cannot buy minutes of the server."""
    paths = ["run"] if len(records) == 1 else [f"runs[{i}]" for i in range(len(records))]
    judged = 0
    for r, path in zip(records, paths):
        if isinstance(r.result, MatmulSweep) and r.result.verdicts is not None:
            for i, p in enumerate(r.result.results):
                if len(p.times_s) > MAX_SAMPLES_PER_POINT:
                    raise DashboardError(f"{path}.payload.results[{i}].times_s: {len(p.times_s):,} samples, more than "
                                         f"a sweep takes ({MAX_SAMPLES_PER_POINT}); nothing from the file was imported")
                judged += len(p.times_s)
    if judged > MAX_IMPORT_SAMPLES:
        raise DashboardError(f"the file holds {judged:,} samples to judge again, over the limit of "
                             f"{MAX_IMPORT_SAMPLES:,} per import; import it in parts (fewer runs per export)")
    return [replace(r, result=rederived(r.result, f"{path}.payload")) for r, path in zip(records, paths)]
