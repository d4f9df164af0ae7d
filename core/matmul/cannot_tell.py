"""When a race cannot tell (a busy machine, too noisy): what the class can do instead, and the newest clear
result this machine gave with the same settings, labelled as earlier and with its age.

A "cannot tell" on a shared server is the honest answer, but on its own it leaves a student with nothing
(issue 31). `class_options` names what the class can do: the instructor's one measurement for the room, the
race on the student's own laptop, a Colab run imported on Results. `earlier_clear` finds the newest stored
run of the same machine (`Machine.hardware`: the same CPU, cores, RAM and GPUs) and the same settings
(`race_key`, as a joined race is matched) whose headline was clear, and says when it was measured and how
long ago: "measured 09:12 UTC on a quiet machine, 42 min ago: cpu float32 2 threads beats cpu float32 1 thread
from a size between n = 64 and n = 128 on". The page, the CLI and their tests read these; nothing here draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from core.matmul.shared_race import race_key
from core.results.crossover import COMPUTE, UNCLEAR, Crossover, Verdict, sentence, short
from core.results.machine import Machine
from core.results.matmul import KIND, MatmulSweep
from core.results.runs import MEASURED
from core.store.database import Store
from core.store.records import RunFilter, StoredRun, machine_label

LOOKBACK = 500  # stored runs of this machine looked at in the listing (no payload read), newest first
FULL_READS = 30  # of those, the clear-headed ones read in full at most: ~40 ms on this 2-core server
BATCH = 10  # read in full this many at a time, stopping at the first clear one of these settings
EARLIER_TITLE = "Earlier, on this machine with these settings"


@dataclass(frozen=True)
class ClassOption:
    """One thing the class can do instead of waiting for a quiet server; `page`: where it is, if on a page."""

    text: str
    page: str | None = None
    link: str = ""  # the link's words


CLASS_OPTIONS = (
    ClassOption("Ask the instructor for the measurement for the room (*Measure for the class*): one race on a quiet "
                "server, which every student reads, instead of sixty races that slow each other down."),
    ClassOption("Race on your own laptop, in the browser: the same race on the machine in front of you, which no one "
                "else shares.", "pages/laptop_race.py", "Race on your laptop"),
    ClassOption("Run the race on Colab's free GPU with the Colab kit (Hardware check) and import its file on the "
                "Results page: it lands on the Class board beside the others.", "pages/results.py",
                "Results: import a Colab run"),
)
CLASS_OPTIONS_TITLE = "This machine is too busy to tell. What the class can do instead:"


def cannot_tell(sweep: MatmulSweep) -> bool:
    """Is the headline, the comparison the sweep is summed up by, a "cannot tell"?"""
    c = sweep.headline_crossover
    return c is not None and c.call == UNCLEAR


def class_options() -> tuple[ClassOption, ...]:
    """What the page lists under a "cannot tell", in order: the room's measurement, the laptop, Colab."""
    return CLASS_OPTIONS


def utc_now() -> datetime:
    """The clock an age is counted to (a test sets it)."""
    return datetime.now(timezone.utc)


def _age(seconds: float) -> str:
    """'less than a minute ago', '42 min ago', '3 h ago', '2 days ago'."""
    minutes = max(0, int(seconds // 60))
    if minutes < 1:
        return "less than a minute ago"
    if minutes < 90:
        return f"{minutes} min ago"
    hours = round(minutes / 60)
    return f"{hours} h ago" if hours < 48 else f"{round(hours / 24)} days ago"


def clock_time(at: datetime, now: datetime) -> str:
    """'09:12 UTC' the same day, else '2026-12-01 09:12 UTC'."""
    return f"{at:%H:%M} UTC" if at.date() == now.date() else f"{at:%Y-%m-%d %H:%M} UTC"


@dataclass(frozen=True)
class EarlierClear:
    """The newest stored run of this machine and these settings whose headline was clear."""

    run_id: int
    measured_at: datetime  # when it was measured (UTC)
    now: datetime  # when this was looked up: the age is counted to here
    quiet: bool | None  # the machine's load as it started: quiet, busy (yet clear), or not recorded
    crossover: Crossover  # its headline: found or none
    verdicts: tuple[Verdict, ...] | None
    label: str = ""  # the name it was saved under

    @property
    def age_s(self) -> float:
        return (self.now - self.measured_at).total_seconds()

    @property
    def text(self) -> str:
        """'measured 09:12 UTC on a quiet machine, 42 min ago: cpu float32 2 threads beats cpu float32 1 thread
        from a size between n = 64 and n = 128 on (run #3 on Results)': the sentence the race page showed."""
        load = {True: " on a quiet machine", False: " on a busy machine, yet clear", None: ""}[self.quiet]
        return (f"measured {clock_time(self.measured_at, self.now)}{load}, {_age(self.age_s)}: "
                f"{sentence(self.crossover, self.verdicts)} "
                f"(run #{self.run_id} on Results)")


def _settings_key(settings: Mapping[str, Any]) -> str:
    """The race's settings without the series they became (a thread count 'free cores' names other series on a
    busy machine): the key a joined race is matched by."""
    return race_key({k: v for k, v in settings.items() if k != "series"})


def parse_stamp(stamp: str) -> datetime | None:
    try:
        at = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)


def _clear(run: StoredRun, hardware: tuple[Any, ...], key: str) -> bool:
    sweep = run.result
    if not isinstance(sweep, MatmulSweep) or sweep.stopped or run.machine.hardware != hardware:
        return False
    c = sweep.headline_crossover
    return c is not None and c.call != UNCLEAR and _settings_key(sweep.settings) == key


def earlier_clear(store: Store, sweep: MatmulSweep, machine: Machine | None = None,
                  now: datetime | None = None) -> EarlierClear | None:
    """The newest clear run measured here on the same machine (`machine`, else the sweep's own, else this one)
    with the same settings, among the LOOKBACK newest of that machine (the FULL_READS newest whose listing is not a
    "cannot tell" read in full); None when there is none (or the machine is unknown)."""
    machine = machine or sweep.machine
    if machine is None:  # a stopped sweep is recorded without its machine: it ran on this one
        from core.platform.hardware import inspect_machine

        machine = inspect_machine().record()
    if not machine.known:
        return None
    now = now or utc_now()
    key, hardware = _settings_key(sweep.settings), machine.hardware
    chosen = RunFilter(machines=(machine_label(machine),), kinds=(KIND,), sources=(MEASURED,))
    unclear = short(Crossover(challenger="a", baseline="b", time=COMPUTE, call=UNCLEAR))
    ids = [r.run_id for r in store.read_summaries(chosen, limit=LOOKBACK).runs  # a listing: no payload read
           if not r.headline.endswith(unclear)][:FULL_READS]  # its headline is short()'s, current (SUMMARY_VERSION)
    for start in range(0, len(ids), BATCH):
        for run in store.read_runs(run_ids=ids[start:start + BATCH]).runs:  # newest first
            at = parse_stamp(run.created_at)
            if at is None or at > now or not _clear(run, hardware, key):
                continue
            result = run.result
            assert isinstance(result, MatmulSweep) and result.headline_crossover is not None  # _clear said so
            return EarlierClear(run.run_id, at, now, None if result.load is None else not result.load.busy,
                                result.headline_crossover, result.verdicts, run.label)
    return None
