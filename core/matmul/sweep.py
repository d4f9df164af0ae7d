"""The sweep's loop: every size of every series of a plan, smallest size first, the series of a size in
alternation, holding the devices throughout.

The page builds a `SweepConfig` (core.matmul.config) from its widgets and the CLI from its flags; the plan
(core.matmul.plan) is computed once from it and passed along. `run_sweep` holds the devices it times
through `core.platform.jobs.run_job`, reports each step as a `Progress` whose item is a `SweepEvent`, can
be stopped between sizes, and never lets one size sink the sweep. Its sizes are decided before any is timed
(core.matmul.sizes: the budget, the devices' memory and this machine's rate card), so the same settings time
the same sizes; a size left out there, one that does not fit in what is free now (core.matmul.guards), a series
that would not fit beside the size's others (core.matmul.round_memory), one that runs out of memory anyway, or
the rest of a series that ran far slower than its card said (`sizes.runaway`) is skipped with a message and the
sweep goes on.

The series of one size are timed in alternation (core.matmul.paired); the saved record, with a verdict per
size and one crossover per comparison, is assembled by core.matmul.report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from core.matmul import rate_card, verdict
from core.matmul.config import SweepConfig
from core.matmul.engine import probe_seconds
from core.matmul.guards import refusal, skipped_size
from core.matmul.out_of_memory import RanOutOfMemory
from core.matmul.paired import time_interleaved
from core.matmul.plan import Plan, plan_series
from core.matmul.rate_card import PROBE_REPEATS
from core.matmul.report import sweep_of
from core.matmul.round_memory import round_refusals
from core.matmul.series import Series
from core.matmul.sizes import runaway, size_plan
from core.platform.hardware import inspect_machine
from core.platform.jobs import JobHooks, Progress, run_job
from core.platform.machine_load import usable_cores
from core.platform.units import quantity, seconds
from core.results.matmul import MatmulPoint, MatmulSweep, SkippedSize


@dataclass(frozen=True)
class SweepEvent:
    """What a progress callback hears: about to time a step, a result, or a skip."""

    kind: str  # "timing", "result" or "skipped"
    done: int  # steps finished (timed or skipped)
    total: int
    series: Series
    n: int
    result: MatmulPoint | None = None
    skipped: SkippedSize | None = None

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 1.0

    @property
    def message(self) -> str:
        where = f"n={self.n:,} on {self.series.label}"
        if self.kind == "timing":
            return f"timing {where} ({self.done} of {self.total} done)"
        if self.result is not None:
            return f"{where}: {seconds(self.result.median_s or 0)}, {quantity(self.result.gflops or 0, 'GFLOP/s')}"
        assert self.skipped is not None, "a skipped event carries its SkippedSize"
        return f"skipped {where}: {self.skipped.message}"

    def as_progress(self) -> Progress[SweepEvent]:
        return Progress(self.done, self.total, self.message, item=self)


def run_sweep(what: SweepConfig | Plan, hooks: JobHooks | None = None) -> MatmulSweep:
    """Time every size of every series, smallest size first, the series of a size in alternation,
    holding the devices throughout.

    `what` is the plan a caller has already made (the page's collector, the CLI), or a config planned
    here; either way a bad choice is refused before waiting in line. `hooks.should_stop` (and the
    per-job cap) is checked before each size; a stopped sweep returns what it has, marked stopped. Every
    step also reaches `hooks.on_progress` (item: a SweepEvent) as it happens, so a caller that is
    interrupted mid-sweep (Streamlit's Stop) keeps the results too.
    """
    plan = what if isinstance(what, Plan) else plan_series(what)
    config, options = plan.config, plan.config.options
    machine = inspect_machine().record()
    results: list[MatmulPoint] = []
    skipped: list[SkippedSize] = []
    stop_reason = ""

    cores = usable_cores()
    needed = max(verdict.cores_needed(s.device != "cpu", s.threads, cores) for s in plan.series)
    with run_job(plan.devices, hooks, label="matmul sweep", measure_load=True, needed_cores=needed) as job:
        plan = plan.under(job.load)  # threads left to choose: the cores free now
        total = len(config.sizes) * len(plan.series)
        sizes = size_plan(plan, lambda s, n: probe_seconds(s, n, seed=options.seed, repeats=PROBE_REPEATS),
                          busy=bool(job.load and job.load.busy), say=lambda line: job.report(Progress(0, total, line)))
        ended: dict[Series, str] = {}  # series the safety stop ended, with why
        timed: dict[Series, dict[int, float]] = {}  # each series' median per size: a card too slow is corrected

        def emit(kind: str, s: Series, n: int, **kw: Any) -> None:
            job.report(SweepEvent(kind, len(results) + len(skipped), total, s, n, **kw).as_progress())

        start = time.perf_counter()
        for n in config.sizes:
            if job.stop_requested():  # the cap stops it like Stop does
                stop_reason = job.stop_reason()
                break
            ready: list[Series] = []
            for s in plan.series:
                emit("timing", s, n)
                skip = sizes.refusal(s, n)  # left out before the race began: the same every race
                if skip is None and s in ended:
                    skip = skipped_size(s, n, "time", ended[s])
                skip = skip or refusal(options, s, n)  # what is free now
                if skip is None:
                    ready.append(s)
                else:
                    skipped.append(skip)
                    emit("skipped", s, n, skipped=skip)
            for s, message in round_refusals(ready, n, options).items():  # held together in the round
                ready.remove(s)
                skipped.append(skipped_size(s, n, "memory", message))
                emit("skipped", s, n, skipped=skipped[-1])
            if not ready:
                continue
            try:
                points = time_interleaved(ready, n, options)
            except RanOutOfMemory as exc:
                for s in ready:
                    skipped.append(skipped_size(s, n, "out_of_memory", str(exc)))
                    emit("skipped", s, n, skipped=skipped[-1])
                continue
            for s, point in zip(ready, points):
                if point.median_s:
                    timed.setdefault(s, {})[n] = point.median_s
                results.append(point)
                emit("result", s, n, result=point)
                if (why := runaway(point, sizes.next_size(s, n), options.budget_s, sizes.rates.get(s))) is not None:
                    ended[s] = why
        wall = time.perf_counter() - start
        rate_card.correct(sizes.rates, timed)  # still holding the devices, as the card is read and written
    return sweep_of(config, plan.series, results, skipped, notes=(*plan.notes, *sizes.notes), stopped=bool(stop_reason),
                    wall_s=wall, machine=machine, finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    stop_reason=stop_reason, load=job.load)
