"""The Matmul race, joined rather than queued: one run for every session asking for the same race at once.

A classroom's students press Run on the default race within a second of each other. Served one after
another, the sixtieth would wait sixty races for a sixtieth copy of one measurement; joined, every one
of them watches the same race live and gets it at the end (issue 31). `join_race` is what the page
calls instead of `run_sweep`: a race with the same settings and devices already waiting or running in
this server is joined (core.platform.shared_jobs), else one is started; `own=True` ("Run my own")
starts one of the caller's own that waits its turn in the device line.

Every caller's result is the same measurement, marked with a `SharedRace` record (core.results.shared_race):
the race's id, how many sessions got it, and whether this one joined it, so that each copy saved under its
own name and guess is credited on the board without counting as independent evidence.

The instructor's *Measure for the class* (`join_race(..., for_class=asked)`) runs `class_config(asked)`,
the same race with CLASS_BUDGET_FACTOR times the time budget per size, reserved under the settings the
students chose (`asked`): a student pressing Run with those settings joins it, and gets the longer
measurement, rather than starting a race of the same settings behind it; any other race waits its turn in
the device line. More samples come from the longer budget: every size samples in alternating rounds until
its budget is spent (core.matmul.paired), so four times the budget is about four times the samples (up to 200
per series), and the bootstrap interval of each size's ratio should be about half as wide (it narrows
as 1/sqrt(samples)). The result is saved and pinned as the room's reference by the caller
(core.store.database.Store.pin_reference).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from core.matmul.config import MAX_BUDGET_S, SweepConfig
from core.matmul.plan import Plan
from core.matmul.sweep import run_sweep
from core.platform.jobs import JobHooks
from core.platform.shared_jobs import SHARED_JOBS, SharedJobs
from core.results.matmul import MatmulSweep
from core.results.shared_race import SharedRace


CLASS_BUDGET_FACTOR = 4  # the room's measurement: 4x the budget per size, 4x the samples, intervals about half as wide


def class_config(asked: SweepConfig) -> SweepConfig:
    """The instructor's measurement of the race `asked`: the same settings, CLASS_BUDGET_FACTOR times its time
    budget per size (at most MAX_BUDGET_S)."""
    budget_s = min(MAX_BUDGET_S, asked.options.budget_s * CLASS_BUDGET_FACTOR)
    return replace(asked, options=replace(asked.options, budget_s=budget_s))


def race_key(settings: Mapping[str, Any]) -> str:
    """The canonical text of a race's settings (its config's `to_dict()`): equal settings, equal key, whatever
    order or container (tuple or list) they came in. Devices are among the settings, so a race on another
    GPU is another race."""
    return json.dumps(settings, sort_keys=True, separators=(",", ":"), default=list)


def join_race(what: SweepConfig | Plan, hooks: JobHooks | None = None, *, own: bool = False,
              for_class: SweepConfig | None = None, registry: SharedJobs = SHARED_JOBS) -> MatmulSweep:
    """Run the race (a config, or the plan a caller made of it, as `run_sweep` takes), joining one with the
    same settings already waiting or running here (own=False).

    for_class: the settings the students chose, when `what` is the instructor's `class_config` of them: the
    race joins none, and is reserved under `for_class`'s settings, so a student's Run with them joins it.

    The caller's hooks see the race as its own: the waiting line (with an estimate of the wait), every step
    (a late joiner gets the steps so far at once), the start; leaving stops only this caller's watching.
    Returns the race's sweep, marked as shared when more than this caller watched it or it joined one."""
    config = what.config if isinstance(what, Plan) else what
    key = race_key((for_class or config).to_dict())
    watched = registry.run(key, lambda job_hooks: run_sweep(what, job_hooks), hooks, join=not own,
                           reserve=for_class is not None)
    sweep = watched.result
    if watched.watchers <= 1 and not watched.joined:
        return sweep
    return replace(sweep, shared=SharedRace(race=watched.run_id, watchers=watched.watchers, joined=watched.joined))
