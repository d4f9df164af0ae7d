"""Is one series faster than another at a size, the same, or can we not tell?

A chart of two medians always shows one line below the other; on a busy machine that order can
flip from one run to the next. So each size gets a call from its samples:

- the ratio is b's median time over a's (above 1: a is faster);
- its interval is a percentile bootstrap (BOOTSTRAP_RESAMPLES resamples, fixed seed, so the same
  samples always get the same call): each series' samples are resampled on their own and the
  ratio of the two resampled medians taken. Why the bootstrap rather than nvbench's interquartile
  overlap rule: it gives an interval on the very number we report (the ratio), it needs no
  assumption about the shape of the noise (timings are skewed: a descheduled thread makes one block
  slow, never fast), and with the few samples of a large size it widens to the samples' range
  instead of pretending. Samples are not paired one to one: the sweep interleaves the series
  (A, B, B, A, ...), so a change of load hits both, but a block of a fast series and one of a slow
  series do not cover the same instant;
- `same` when the interval lies within SAME_MARGIN of 1 on both sides; `faster` when it lies
  wholly beyond that margin, above 1 + SAME_MARGIN (a faster) or below 1 / (1 + SAME_MARGIN) (b
  faster: the verdict then names b first). Why beyond the margin and not just beyond 1: the
  bootstrap sees the noise within one run, not between runs, and the state of a machine moves from
  one run to the next (three quiet runs on this 2-core machine, others under 0.06 cores, called n =
  64 "2 threads x1.04" with the interval 1.02-1.05 once and "1 thread x1.44 / x1.60" twice); a
  difference smaller than the margin is one a chart or a student cannot tell apart anyway;
  `unclear` when it is neither (it reaches into the margin and beyond it), when either series has fewer than
  MIN_SAMPLES samples, when other programs took cores the comparison needed while the size was
  timed (machine_load.busy_for: at least BUSY_OTHERS_CORES beyond the cores its series left idle;
  a figure from a busy machine is not a fact), or when a GPU was slowed while the size was timed
  and the comparison is not one the slowed GPU won anyway (below);
- below that busy line, what other programs did use still counts: a fraction e of a core taken
  beyond the idle ones can make a series up to 1 / (1 - e) times slower (one stalled thread holds a
  product's other threads back: machine_load.explained_slowdown), so the interval is widened by that
  factor on both sides before the rule above is applied. Measured on this 2-core machine: with a
  quarter of a core taken by others (under the half-core line), two runs of the default race called
  n = 256 both ways, 1 thread x1.28 faster and 2 threads x1.49 faster; the widening (x1.30) leaves the
  first unclear.

A GPU slowed by a thermal or hardware slowdown or a clock drop (core.platform.sensors samples it while
its blocks run; `PointClock.slowed`) makes the size `unclear` rather than re-measured or stripped of
samples, as nvbench does: the samples are not matched to single blocks, so which ran slow is not known,
and dropping all of them leaves nothing to judge; a GPU at its thermal limit stays there for seconds to
minutes, so timing the size again within its budget would most likely throttle again. The size keeps
its figures and says why it has no call. Two exceptions: a comparison the slowed series still wins keeps
its call (at its full clock it would win the more), and a GPU at its power cap is not slowed: a 70 W T4
runs every sustained matmul there, so that is the GPU's speed, said as a fact (core.matmul.sweep's notes).

The crossover of a challenger over a baseline is then an interval of sizes with a call, made from
these verdicts by core.matmul.crossover (`crossover_interval`, `crossover_of`).
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Sequence

import numpy as np

from core.platform.machine_load import busy_for, explained_slowdown, usable_cores
from core.platform.units import number
from core.results.crossover import THROTTLED_WHY, Verdict
from core.results.matmul import POWER_CAP, MatmulPoint

FASTER, SAME, UNCLEAR = "faster", "same", "unclear"
SAME_MARGIN = 0.05  # within 5 % of 1 on both sides is "the same": below what a chart or a student can tell apart
MIN_SAMPLES = 3  # per series: fewer cannot show their own spread
BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95
SEED = 0


def ratio_interval(a_s: Sequence[float], b_s: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES,
                   seed: int = SEED) -> tuple[float, float, float]:
    """(median(b)/median(a), low, high): the ratio and its percentile bootstrap interval."""
    a, b = np.asarray(a_s, dtype=float), np.asarray(b_s, dtype=float)
    rng = np.random.default_rng(seed)
    med_a = np.median(a[rng.integers(0, len(a), (resamples, len(a)))], axis=1)
    med_b = np.median(b[rng.integers(0, len(b), (resamples, len(b)))], axis=1)
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(med_b / med_a, [tail, 1 - tail])
    return statistics.median(b_s) / statistics.median(a_s), float(low), float(high)


def is_busy(others_cores: float | None, spare_cores: int = 0) -> bool:
    """Did other programs take enough CPU during a size to make its figures noisy? `spare_cores`:
    the cores the comparison left idle (0: it needed every core, the strictest rule)."""
    return busy_for(others_cores, cores=spare_cores + 1, needed=1)


def judge(n: int, a: str, b: str, a_s: Sequence[float], b_s: Sequence[float], *,
          others_cores: float | None = None, spare_cores: int = 0, throttle: str | None = None,
          slowed: Collection[str] | None = None) -> Verdict:
    """The call at size n for series a (samples a_s, seconds) against b (b_s). `throttle`: the reasons a GPU
    was slowed while the size was timed ("" when slowed for a reason not given), None if not; `slowed`: the
    labels of the slowed series (None: both), a call one of them wins over one that was not is kept."""
    busy = is_busy(others_cores, spare_cores)
    if min(len(a_s), len(b_s)) < MIN_SAMPLES or min(*a_s, *b_s) <= 0:
        ratio = statistics.median(b_s) / statistics.median(a_s) if a_s and b_s and min(*a_s, *b_s) > 0 else None
        return Verdict(n=n, a=a, b=b, ratio=ratio, low=None, high=None, call=UNCLEAR, busy=busy,
                       why=f"fewer than {MIN_SAMPLES} samples per series: raise the time budget")
    ratio, low, high = ratio_interval(a_s, b_s)
    if busy:
        why = f"the machine was busy: other programs used {others_cores:.1f} cores while this size was timed"
        if spare_cores:
            why += f", more than the {spare_cores} the compared series left idle"
        return Verdict(n=n, a=a, b=b, ratio=ratio, low=low, high=high, call=UNCLEAR, busy=True, why=why)
    called = _called(n, a, b, (ratio, low, high), others_cores, spare_cores)
    hot = {a, b} if slowed is None else set(slowed)
    if throttle is None or (called.call == FASTER and called.a in hot and called.b not in hot):
        return called  # not slowed, or the slowed series won anyway: at its full clock it would win the more
    why = (f"{THROTTLED_WHY} ({throttle or 'reason not given'}) while this size was timed: it ran below its "
           "full clock, so the times are the machine's state, not the series'")
    return Verdict(n=n, a=a, b=b, ratio=ratio, low=low, high=high, call=UNCLEAR, why=why)


def _called(n: int, a: str, b: str, interval: tuple[float, float, float], others_cores: float | None,
            spare_cores: int) -> Verdict:
    """The call from the ratio's interval, widened by what other programs could explain."""
    ratio, low, high = interval
    reach = explained_slowdown(others_cores, spare=spare_cores)
    call = call_of(low / reach, high * reach)
    if call == UNCLEAR and call_of(low, high) != UNCLEAR:  # the samples alone would call it; the neighbour could not
        why = (f"other programs used {number(others_cores or 0)} cores while this size was timed"
               + (f", beyond the {spare_cores} the compared series left idle" if spare_cores else "")
               + f": enough to make a series up to {number(reach)}x slower, and the ratio's interval ({number(low)}-"
               f"{number(high)}) is not clear of that and the {SAME_MARGIN:.0%} margin")
        # busy (the page's "cannot tell on a machine this busy") only where the neighbour's reach is itself
        # beyond the margin; a few hundredths of a core only tipped an interval that was at the edge already
        return Verdict(n=n, a=a, b=b, ratio=ratio, low=low, high=high, call=UNCLEAR,
                       busy=reach > 1 + SAME_MARGIN, why=why)
    if call == SAME or (call == FASTER and low > 1 + SAME_MARGIN):
        return Verdict(n=n, a=a, b=b, ratio=ratio, low=low, high=high, call=call)
    if call == FASTER:  # b is faster: name it first, the ratio and interval turned over with it
        return Verdict(n=n, a=b, b=a, ratio=1 / ratio, low=1 / high, high=1 / low, call=FASTER)
    return Verdict(n=n, a=a, b=b, ratio=ratio, low=low, high=high, call=UNCLEAR,
                   why=f"the samples overlap: the ratio could be anywhere from {number(low)} to {number(high)}, "
                       "not clear of "
                       f"the {SAME_MARGIN:.0%} either side of 1 within which two series count as the same")


def call_of(low: float, high: float) -> str:
    """same / faster (either way) / unclear for an interval of b's time over a's."""
    if 1 / (1 + SAME_MARGIN) <= low and high <= 1 + SAME_MARGIN:
        return SAME
    return FASTER if low > 1 + SAME_MARGIN or high < 1 / (1 + SAME_MARGIN) else UNCLEAR


def samples_settled(series_samples: Sequence[Sequence[float]], *, reach: float = 1.0) -> bool:
    """Can every pair of these series be told apart (faster or the same) from their samples, the interval
    widened by `reach` (the slowdown other programs could explain so far, as `judge` widens it)? The
    interleaved timing samples on while not (core.matmul.paired)."""
    if reach == float("inf"):
        return True  # no number of samples calls it: stop at the budget
    for i, a_s in enumerate(series_samples):
        for b_s in series_samples[i + 1:]:
            if min(len(a_s), len(b_s)) < MIN_SAMPLES or min(*a_s, *b_s) <= 0:
                return False
            _, low, high = ratio_interval(a_s, b_s)
            if call_of(low / reach, high * reach) == UNCLEAR:
                return False
    return True


def cores_used(p: MatmulPoint, cores: int) -> int:
    """Cores a series keeps busy while it runs: its CPU threads; a GPU series one (launching and waiting)."""
    return cores_needed(p.is_gpu, p.threads, cores)


def cores_needed(is_gpu: bool, threads: int | None, cores: int) -> int:
    return 1 if is_gpu else min(cores, threads or cores)


def _throttle(a: MatmulPoint, b: MatmulPoint) -> str | None:
    """The reasons either point was slowed ("" if slowed without one), None when neither was (a power cap
    alone is not a slowdown: PointClock.slowed)."""
    hot = [p for p in (a, b) if p.clock.slowed]
    if not hot:
        return None
    return ", ".join(dict.fromkeys(r for p in hot for r in p.clock.reasons if r != POWER_CAP))


def judge_points(a: MatmulPoint, b: MatmulPoint, *, cores: int | None = None) -> Verdict:
    """The call for two points of one size timed in alternation (one load window for both): the busy
    rule scaled to the cores the pair needed out of `cores` (default: the cores we may use now), and
    unclear where the GPU was slowed, unless the slowed one won. The Matmul race and the Roofline's measured
    crossover both use it."""
    cores = cores or usable_cores()
    others = [p.others_cores for p in (a, b) if p.others_cores is not None]
    spare = max(0, cores - max(cores_used(a, cores), cores_used(b, cores)))
    return judge(a.n, a.label, b.label, _samples(a), _samples(b), others_cores=max(others) if others else None,
                 spare_cores=spare, throttle=_throttle(a, b), slowed=[p.label for p in (a, b) if p.clock.slowed])


def _samples(point: MatmulPoint) -> list[float]:
    """A point's per-call samples (a file may hold null for one not measured)."""
    return [t for t in point.times_s if t is not None]


def pair_verdicts(points: Sequence[MatmulPoint], challenger: str, baseline: str, *,
                  cores: int | None = None) -> list[Verdict]:
    """The pair's call at every size both series measured, smallest first."""
    at = {(p.label, p.n): p for p in points}
    out = []
    for n in sorted({p.n for p in points}):
        a, b = at.get((challenger, n)), at.get((baseline, n))
        if a is not None and b is not None:
            out.append(judge_points(a, b, cores=cores))
    return out


def challenger_wins(v: Verdict, challenger: str) -> bool:
    return v.call == FASTER and v.a == challenger
