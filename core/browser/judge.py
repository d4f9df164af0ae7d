"""The server judges what the browser measured: statistics, verdicts and crossovers by the Matmul race's rules.

The browser sends raw samples (core.browser.payload checks them); here they become a `BrowserRun` whose
statistics derive from the samples (core.results.browser), whose verdicts are `core.matmul.verdict.judge`'s
per size (the same bootstrap, margin and sample rule as the race), and whose crossovers are the verdicts'
interval with the medians' log-log estimate kept inside it, as the race computes its own. Comparisons:
WebGPU against k workers (the headline), WebGPU against one worker, k workers against one, and WebGPU's f16
against its float32 where the adapter offered f16. (The split dispatches are judged by core.browser.story.)

A browser's run id makes a second copy of one run the same run: `Inbox` remembers the ids it took, so the
component's value, which persists across the page's reruns, is judged and saved once.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.browser.assets import SIZES
from core.browser.payload import Checked, check_payload, refuse
from core.errors import DashboardError
from core.matmul import verdict
from core.matmul.crossover import crossover_interval, find_crossover, within
from core.results.browser import (F16_SERIES, GPU_SERIES, ONE_WORKER, PROVENANCE, Adapter, BrowserCrossover,
                                  BrowserPoint, BrowserRun, workers_series)
from core.results.crossover import Verdict
from core.results.machine import Machine, read_machine
from core.results.guess import Guess
from core.results.runs import RunRecord

MAX_SEEN = 1000  # run ids an inbox remembers (a session runs a few dozen)
BROWSERS = (("Edge", r"Edg/(\d+)"), ("Firefox", r"Firefox/(\d+)"), ("Chrome", r"Chrom(?:e|ium)/(\d+)"),
            ("Safari", r"Version/(\d+).*Safari"))  # the first that matches: Edge's agent names Chrome too
SYSTEMS = (("Windows", "Windows"), ("Android", "Android"), ("iOS", "iPhone"), ("macOS", "Mac OS"),
           ("ChromeOS", "CrOS"), ("Linux", "Linux"))


def comparisons(workers: int, series: Sequence[str]) -> list[tuple[str, str]]:
    """(challenger, baseline) pairs among the measured series, the headline first."""
    k = workers_series(workers)
    pairs = [(GPU_SERIES, k), (GPU_SERIES, ONE_WORKER)] + ([(k, ONE_WORKER)] if k != ONE_WORKER else [])
    pairs.append((F16_SERIES, GPU_SERIES))
    return [p for p in dict.fromkeys(pairs) if p[0] in series and p[1] in series]


def verdicts_of(points: Sequence[BrowserPoint], pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
    """The race's call per size and pair, from the samples alone (a browser reports no machine load)."""
    at = {(p.series, p.n): p for p in points}
    out = []
    for a, b in pairs:
        for n in sorted({p.n for p in points}):
            if (a, n) in at and (b, n) in at:
                out.append(verdict.judge(n, a, b, at[a, n].times_s, at[b, n].times_s))
    return out


def crossover_of(points: Sequence[BrowserPoint], verdicts: Sequence[Verdict], challenger: str,
                 baseline: str) -> BrowserCrossover:
    """The race's crossover of one pair: the verdicts' interval and call, the medians' estimate inside it."""
    pair = [v for v in verdicts if {v.a, v.b} == {challenger, baseline}]
    interval = crossover_interval(pair, challenger, baseline)
    medians = {(p.series, p.n): p.median_s or 0.0 for p in points if p.median_s}
    sizes = sorted(n for s, n in medians if s == challenger and (baseline, n) in medians)
    est = find_crossover(sizes, [medians[challenger, n] for n in sizes], [medians[baseline, n] for n in sizes])
    return BrowserCrossover(challenger=challenger, baseline=baseline, call=interval.call, n_low=interval.n_low,
                            n_high=interval.n_high, n=within(est.n_int, interval))


def browser_name(user_agent: str) -> str:
    """'Chrome 140 on Linux' from a user agent, for the machine's name; 'a browser' when it says nothing known."""
    name = next((f"{b} {m.group(1)}" for b, pat in BROWSERS if (m := re.search(pat, user_agent))), "a browser")
    system = next((s for s, key in SYSTEMS if key in user_agent), "")
    return f"{name} on {system}" if system else name


def machine_of(raw: Mapping[str, Any], adapter: Adapter | None) -> Machine:
    """The student's laptop as the browser describes it: no GPU listed for a software adapter."""
    cores = raw.get("cores")
    cpu = {"name": f"{browser_name(str(raw.get('user_agent') or ''))}, {cores or '?'} threads",
           "logical_cores": cores if isinstance(cores, int) else None}
    gpus = [{"index": 0, "name": f"WebGPU: {adapter.title}"}] if adapter is not None and not adapter.software else []
    notes = [PROVENANCE] + ([f"WebGPU adapter: {adapter.title}"] if adapter and adapter.software else [])
    return read_machine({"cpu": cpu, "gpus": gpus, "notes": notes}, "machine")  # written with these keys only


def judged(value: Any, *, guess: Guess | None = None, settings: Mapping[str, Any] | None = None) -> BrowserRun:
    """The browser's object, checked (one-line DashboardError if not) and judged into a run; its sizes only among
    those the page offers (the settings' own may have changed while the browser ran the race)."""
    checked = check_payload(value, sizes=SIZES)
    try:
        return _judged(checked, guess, settings)
    except (DashboardError, ValueError) as exc:  # a field the declared types refuse (pydantic's errors are ValueErrors)
        raise refuse(str(exc).splitlines()[0]) from None


def _judged(checked: Checked, guess: Guess | None, settings: Mapping[str, Any] | None) -> BrowserRun:
    raw = checked.raw
    adapter = Adapter.from_json(raw["adapter"], "adapter") if raw.get("adapter") is not None else None
    points = tuple(BrowserPoint(series=p["series"], n=p["n"], times_s=tuple(float(t) for t in p["times_s"]),
                                reps=p.get("reps", 1), unawaited_s=p.get("unawaited_s"), rel_error=p.get("rel_error"),
                                timestamp_s=tuple(float(t) for t in p.get("timestamp_s") or ()),
                                dispatches=p.get("dispatches"))
                   for p in raw["points"])
    run = BrowserRun(run_id=raw["run_id"], user_agent=str(raw.get("user_agent") or "")[:200], cores=raw.get("cores"),
                      workers=checked.workers, kernel=str(raw.get("kernel") or "")[:200], gpu=raw.get("gpu", "ok"),
                      gpu_note=str(raw.get("gpu_note") or "")[:2000],
                      adapter=adapter, points=points, guess=guess,
                      stopped=raw.get("stopped") is True, settings=dict(settings or {}),
                      machine=machine_of(raw, adapter))
    return rejudged(run)


def rejudged(run: BrowserRun) -> BrowserRun:
    """A saved or imported run judged again from its own samples: what a file says about its verdicts and
    crossovers is never taken from it (its statistics already derive from the samples when it is read)."""
    pairs = comparisons(run.workers, run.series)
    verdicts = verdicts_of(run.points, pairs)
    crossovers = tuple(crossover_of(run.points, verdicts, a, b) for a, b in pairs)
    return dataclasses.replace(run, verdicts=tuple(verdicts), crossovers=crossovers)


def rejudge_imported(records: Sequence[RunRecord]) -> list[RunRecord]:
    """An import's browser runs, each judged again from its samples; one whose verdicts or crossovers are not
    what its samples give was edited, and the whole import is refused in one line (imports are all or nothing)."""
    for i, record in enumerate(records):
        if isinstance(record.result, BrowserRun):
            again = rejudged(record.result)
            if (again.verdicts, again.crossovers) != (record.result.verdicts, record.result.crossovers):
                raise DashboardError(f"run {i + 1} of the file, a race in the browser: its verdicts or crossovers are "
                                     "not what its own samples give (an edited file?); nothing was imported")
    return list(records)


@dataclass
class Inbox:
    """The run ids this session has taken: the component hands its last run back on every rerun."""

    seen: list[str] = field(default_factory=list)

    def is_new(self, value: Any) -> bool:
        """Is this a run not taken yet (anything without a run id is new: the check will refuse it)?"""
        run_id = value.get("run_id") if isinstance(value, Mapping) else None
        return not isinstance(run_id, str) or run_id not in self.seen

    def take(self, value: Any, *, guess: Guess | None = None,
             settings: Mapping[str, Any] | None = None) -> BrowserRun | None:
        """The judged run if new (None if this id was taken already); a refused one is remembered too."""
        if not self.is_new(value):
            return None
        run_id = value.get("run_id") if isinstance(value, Mapping) else None
        if isinstance(run_id, str):
            self.seen = [*self.seen[-MAX_SEEN + 1:], run_id]
        return judged(value, guess=guess, settings=settings)
