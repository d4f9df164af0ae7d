"""Every device of a job at once: the matmul sweep timed on each torchrun rank (kind "cluster").

Version 1. `ranks` holds what each rank measured on its own device: the sweep with every rank timing
at once (`together`, as a data-parallel job runs) and then each rank alone (`alone`), one point per
size with its per-call samples. What the run says about them is derived once, when the run is built
(core.matmul.ranks): per size the `spread` of GFLOP/s across ranks (min / median / max), the
`contention` (median alone over median together: above 1, the devices slowed each other down),
and the `stragglers` at the largest size every rank measured, named only outside the noise;
`straggler_call` says whether one was named, none was, or the noise could not tell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import ClassVar

from pydantic import Field
from pydantic.dataclasses import dataclass

from core.platform.units import number
from core.results import fields as f
from core.results.load import MachineLoad
from core.results.machine import Machine, unknown_machine
from core.results.result_kind import Frame, ResultKind
from core.results.schema import Declared, Kind

KIND = "cluster"
VERSION = 1
NAMED, NONE, UNCLEAR = "named", "none", "unclear"  # straggler_call


@dataclass(frozen=True, kw_only=True)
class RankPoint(Declared):
    """One size on one rank: the median seconds per call, its rate, and the samples behind them."""

    n: f.Size
    seconds: f.Number  # median seconds per call
    gflops: f.Number  # 2 n^3 / seconds / 1e9
    times_s: f.Items[f.Number] = ()  # per-call seconds of each timed block: the noise the straggler rule reads
    others_cores: f.Number = None  # CPU other programs used while the size was timed (this rank's siblings excluded)
    busy: f.Flag = False  # those others took cores this rank needed: its figure is noisy
    spare_cores: f.Number = Field(default=None, exclude_if=f.omitted_when_none)  # cores the job left idle meanwhile


@dataclass(frozen=True, kw_only=True)
class RankRecord(Declared):
    """One torchrun rank: where it ran and what it measured together with the others and alone."""

    rank: f.Count
    hostname: f.Text
    device: f.Device
    device_name: f.Text  # "NVIDIA H100 80GB HBM3", or the CPU's name with this rank's thread count
    threads: f.OptionalSize = None  # a CPU rank's share of the cores; None on a GPU
    # a CPU rank's machine's usable cores: ranks whose threads outnumber them take turns (ranks.oversubscribed)
    cores: f.OptionalSize = Field(default=None, exclude_if=f.omitted_when_none)
    together: f.Items[RankPoint] = ()
    alone: f.Items[RankPoint] = ()


@dataclass(frozen=True, kw_only=True)
class SizeSpread(Declared):
    """GFLOP/s across ranks at one size."""

    n: f.Size
    min: f.Number
    median: f.Number
    max: f.Number


@dataclass(frozen=True, kw_only=True)
class Contention(Declared):
    """How much the ranks slowed each other at one size: median alone over median together (GFLOP/s)."""

    n: f.Size
    alone_gflops: f.Number
    together_gflops: f.Number
    ratio: f.Number  # above 1: slower together than alone


@dataclass(frozen=True, kw_only=True)
class Straggler(Declared):
    """A rank more than 10 % below the median at size n, its slowdown outside the noise."""

    rank: f.Count
    hostname: f.Text
    device: f.Device
    n: f.Size
    below_median: f.Probability  # 0.25: 25 % fewer GFLOP/s than the median rank
    slowdown_low: f.Number = None  # the 95 % interval of its time over the median rank's: the noise it stood out of
    slowdown_high: f.Number = None


@dataclass(frozen=True, kw_only=True)
class ClusterRun(Kind):
    """The matmul sweep on every rank of a torchrun job, together and alone, with the straggler named."""

    kind: ClassVar[str] = KIND
    schema_version: ClassVar[int] = VERSION

    ranks: f.Measured[RankRecord]
    spread: f.Items[SizeSpread] = ()  # together, per size every rank measured
    spread_alone: f.Items[SizeSpread] = ()
    contention: f.Items[Contention] = ()
    stragglers: f.Items[Straggler] = ()
    straggler_call: f.Name = UNCLEAR
    straggler_note: f.Note = ""  # why none could be named, in words
    dtype: f.Name = "float32"
    hosts: f.Size = 1
    mode: f.Name = "one machine"  # or "torchrun": started by the user's own torchrun (--distributed)
    stopped: f.Flag = False
    wall_s: f.Number = None
    finished_at: f.OptionalTimestamp = None
    settings: f.Settings = Field(default_factory=dict)
    machine: Machine = Field(default_factory=unknown_machine)  # rank 0's machine
    load: MachineLoad | None = None  # how busy rank 0's machine was as the run started

    @property
    def devices(self) -> list[str]:
        return list(dict.fromkeys(r.device for r in self.ranks))

    @property
    def largest_common_n(self) -> int | None:
        """The largest size every rank measured together (where stragglers are judged)."""
        common = set.intersection(*({p.n for p in r.together} for r in self.ranks)) if self.ranks else set()
        return max(common) if common else None

    @property
    def headline(self) -> str:
        n = self.largest_common_n
        at = next((s for s in self.spread if s.n == n), None)
        rate = "" if at is None else (f"; n={n}: {number(at.median or 0)} GFLOP/s median "
                                      f"({number(at.min or 0)}-{number(at.max or 0)})")
        where = f"{len(self.ranks)} ranks" + (f" on {self.hosts} hosts" if self.hosts > 1 else "")
        if self.straggler_call == NAMED:
            slow = ", ".join(f"rank {s.rank} ({s.hostname} {s.device}) {s.below_median or 0:.0%} below"
                             for s in self.stragglers)
            return f"{where}{rate}; straggler: {slow}"
        return f"{where}{rate}; straggler: {'none' if self.straggler_call == NONE else 'cannot tell'}"


# ---- the kind's record (core/results/result_kind.py): what the store's tables, the import and the pages read

# A rank's point: `median_s` as a sweep's (the median seconds per call), `phase` together or alone.
RANK_COLUMNS = ("device_title", "device", "rank", "hostname", "phase", "n", "median_s", "gflops", "others_cores",
                "busy")


def _rows(run: ClusterRun, device_title: Callable[[str], str]) -> Iterator[tuple[str, dict[str, object]]]:
    """One row per (rank, phase, n): each rank's line together and alone (its title is its own, not the machine's)."""
    for record in run.ranks:
        title = f"{record.device} ({record.device_name})"
        for phase, points in (("together", record.together), ("alone", record.alone)):
            series = f"rank {record.rank} {record.hostname} {title} {phase}"
            for point in sorted(points, key=lambda p: p.n):
                yield series, {"device_title": title, "device": record.device, "rank": record.rank,
                               "hostname": record.hostname, "phase": phase, "n": point.n, "median_s": point.seconds,
                               "gflops": point.gflops, "others_cores": point.others_cores, "busy": point.busy}


RESULT_KIND = ResultKind(name=KIND, schema=ClusterRun, title="every device at once", detect=("ranks",),
                         frame=Frame(RANK_COLUMNS, _rows))
