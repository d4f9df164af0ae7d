"""What a run on every rank says: the spread across ranks, the contention, and the straggler, if any.

Pure functions of the ranks' records (core.results.cluster), so the rule is tested without a process.

The straggler rule. In data-parallel training every step waits for the slowest rank, so one slow
device sets the pace of all. At the largest size every rank measured together, a rank is named a
straggler when
- its GFLOP/s are more than STRAGGLER_BELOW (10 %) below the median rank's, and
- that is outside the noise, by the verdicts' rule (core.matmul.verdict): the 95 % bootstrap interval
  of its time over the median rank's time lies wholly above 1 + SAME_MARGIN, each with at least
  MIN_SAMPLES samples; and
- it is more than other programs could explain: while the size was timed they used `others` cores
  (the job's own ranks excluded, read per process), e of them beyond the cores the job left idle; a
  rank's threads meet at the end of every product, so a stranger sharing one of its cores a fraction e
  of the time can make it up to 1 / (1 - e) times slower (machine_load.explained_slowdown, the same
  bound the verdicts widen by), and only an interval whose low end is beyond that names it; from a
  whole core on, "cannot tell". Why not a fixed busy threshold: a neighbour lands on one rank's core,
  not spread over the ranks, so a quarter of a core taken (under the half-core busy rule) can make an
  undisturbed rank 25-30 % slower, while a rank slowed forty-fold is plain even on a busy machine.
A rank more than 10 % below that fails the noise rule makes the call `unclear`, never `none`.

Oversubscribed ranks name no straggler. CPU ranks whose threads outnumber their machine's cores (`--ranks 3`
on 2 cores: three one-thread ranks) take turns on the cores: whichever rank the scheduler leaves waiting is
slow, by the job's own doing and differently every run (3 of 4 such runs named a rank "49 % below the
median", issue 30). Such a run's call is `unclear`, and its note says the ranks were oversubscribed.

The median rank is the middle one by rate (with an even count, the faster of the two middle ones): its
samples are the reference, so the interval compares two real series.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from core.matmul.verdict import MIN_SAMPLES, SAME_MARGIN, ratio_interval
from core.platform.machine_load import explained_slowdown
from core.platform.units import number
from core.results.cluster import (
    NAMED, NONE, UNCLEAR, Contention, RankPoint, RankRecord, SizeSpread, Straggler,
)

STRAGGLER_BELOW = 0.10  # a rank this far below the median rank's GFLOP/s holds a data-parallel job back
CPU_RANK_CAVEAT = ("CPU ranks share one machine's cores: a CPU straggler is the core it ran on at the time (a "
                   "neighbour, or a virtual machine's host, which the CPU counters cannot see), not a device of its "
                   "own; run it again to see whether the same rank is slow")


def gflops(n: int, seconds: float | None) -> float | None:
    """2 n^3 operations in `seconds`, in GFLOP/s; None when not measured."""
    return None if not seconds or seconds <= 0 else 2.0 * n ** 3 / seconds / 1e9


def rank_point(n: int, times_s: Sequence[float], *, others_cores: float | None = None, busy: bool = False,
               spare_cores: int | None = None) -> RankPoint:
    """One size's point on one rank from its per-call samples."""
    seconds = statistics.median(times_s) if times_s else None
    return RankPoint(n=n, seconds=seconds, gflops=gflops(n, seconds), times_s=tuple(times_s),
                     others_cores=others_cores, busy=busy, spare_cores=spare_cores)


def _at(record: RankRecord, n: int, phase: str) -> RankPoint | None:
    points: tuple[RankPoint, ...] = record.together if phase == "together" else record.alone
    return next((p for p in points if p.n == n and p.gflops is not None), None)


def common_sizes(ranks: Sequence[RankRecord], phase: str = "together") -> list[int]:
    """The sizes every rank measured in `phase`, smallest first."""
    if not ranks:
        return []
    sets = [{p.n for p in (r.together if phase == "together" else r.alone) if p.gflops is not None} for r in ranks]
    return sorted(set.intersection(*sets))


def spread(ranks: Sequence[RankRecord], phase: str = "together") -> tuple[SizeSpread, ...]:
    """Min / median / max GFLOP/s across ranks, per size every rank measured."""
    out = []
    for n in common_sizes(ranks, phase):
        rates = [p.gflops for r in ranks if (p := _at(r, n, phase)) is not None and p.gflops is not None]
        out.append(SizeSpread(n=n, min=min(rates), median=statistics.median(rates), max=max(rates)))
    return tuple(out)


def contention(ranks: Sequence[RankRecord]) -> tuple[Contention, ...]:
    """Median alone over median together, per size both phases measured on every rank."""
    together = {s.n: s.median for s in spread(ranks, "together")}
    alone = {s.n: s.median for s in spread(ranks, "alone")}
    out = []
    for n in sorted(set(together) & set(alone)):
        t, a = together[n], alone[n]
        out.append(Contention(n=n, alone_gflops=a, together_gflops=t, ratio=a / t if a and t else None))
    return tuple(out)


def median_rank(ranks: Sequence[RankRecord], n: int) -> RankRecord:
    """The middle rank by rate at n (even count: the faster of the two middle ones), the stragglers'
    reference. Picked by position, not by distance to the median: with two ranks both are equally far
    from it, and which one floating point called nearer decided whether the slow one was checked at all."""
    rated = sorted((p.gflops or 0.0, r.rank) for r in ranks if (p := _at(r, n, "together")) is not None)
    best = rated[len(rated) // 2][1]
    return next(r for r in ranks if r.rank == best)


def oversubscription(ranks: int, threads: int, cores: int, host: str = "") -> str:
    """The sentence for `ranks` CPU ranks running `threads` threads in all on `cores` cores."""
    where = f" of {host}" if host else ""
    return (f"{ranks} CPU ranks run {threads} threads on the {cores} usable cores{where}: oversubscribed, so the "
            f"ranks take turns on the cores and a slow rank is that, not a straggler; use at most {cores} ranks "
            f"(ranks x threads <= {cores})")


def oversubscribed(ranks: Sequence[RankRecord]) -> str:
    """'' or, for the first machine whose CPU ranks' threads outnumber its usable cores, why no straggler can be
    named there (a record without its machine's cores, written before they were kept, is not judged)."""
    hosts: dict[str, list[RankRecord]] = {}
    for r in ranks:
        if r.device == "cpu" and r.cores:
            hosts.setdefault(r.hostname, []).append(r)
    for host, on in hosts.items():
        threads, cores = sum(r.threads or 1 for r in on), min(r.cores or 0 for r in on)
        if len(on) > 1 and threads > cores:
            return oversubscription(len(on), threads, cores, host)
    return ""


def judge_stragglers(ranks: Sequence[RankRecord]) -> tuple[tuple[Straggler, ...], str, str]:
    """(stragglers, call, note) at the largest size every rank measured together (see the module's rule)."""
    sizes = common_sizes(ranks)
    if len(ranks) < 2 or not sizes:
        return (), UNCLEAR, "fewer than two ranks measured a common size" if len(ranks) < 2 else "no size on every rank"
    if crowded := oversubscribed(ranks):
        return (), UNCLEAR, crowded
    n = sizes[-1]
    reference = median_rank(ranks, n)
    ref_point = _at(reference, n, "together")
    assert ref_point is not None and ref_point.gflops is not None
    named: list[Straggler] = []
    doubts: list[str] = []
    for r in ranks:
        p = _at(r, n, "together")
        if r is reference or p is None or p.gflops is None:
            continue
        below = 1.0 - p.gflops / statistics.median(x.gflops or 0.0 for x in (_at(q, n, "together") for q in ranks) if x)
        if below <= STRAGGLER_BELOW:
            continue
        doubt, low, high = _noise(p, ref_point)
        if doubt:
            doubts.append(f"rank {r.rank} is {below:.0%} below the median at n={n}, but {doubt}")
            continue
        named.append(Straggler(rank=r.rank, hostname=r.hostname, device=r.device, n=n, below_median=min(1.0, below),
                               slowdown_low=low, slowdown_high=high))
    if named:
        shared = [s for s in named if s.device == "cpu"
                  and any(r.hostname == s.hostname and r.rank != s.rank for r in ranks)]
        return tuple(named), NAMED, "; ".join(doubts + ([CPU_RANK_CAVEAT] if shared else []))
    if doubts:
        return (), UNCLEAR, "; ".join(doubts)
    return (), NONE, f"every rank within {STRAGGLER_BELOW:.0%} of the median at n={n}"


def _noise(p: RankPoint, ref: RankPoint) -> tuple[str, float | None, float | None]:
    """('' or why it cannot be told, low, high) for a rank's slowdown against the median rank's samples."""
    mine = [t for t in p.times_s if t is not None and t > 0]
    theirs = [t for t in ref.times_s if t is not None and t > 0]
    if min(len(mine), len(theirs)) < MIN_SAMPLES:
        return f"fewer than {MIN_SAMPLES} samples: raise the time budget", None, None
    _, low, high = ratio_interval(theirs, mine)  # median(mine) / median(theirs): above 1, this rank is slower
    if low <= 1 + SAME_MARGIN:
        return f"its samples overlap the median rank's (slowdown {number(low)}-{number(high)}x)", low, high
    reach = explained_slowdown(p.others_cores, spare=p.spare_cores or 0)
    if low <= reach:
        could = "any slowdown" if reach == float("inf") else f"a slowdown up to {number(reach)}x"
        return (f"other programs used {number(p.others_cores or 0)} cores while it was timed, enough for {could} "
                f"(this one: {number(low)}-{number(high)}x): cannot tell on a machine this busy"), low, high
    return "", low, high
