"""The Class board: the class's latest runs for the projector, read incrementally from the store.

A board refreshes itself every few seconds in every open browser. So that 60 open boards cost the
server little, a refresh first asks the store for its version (`Store.version()`: row count and
highest id, one cheap query) and reads nothing more when it has not changed; when runs were only
added, it reads just the new ids; only a delete (the count falls behind the ids) rereads the newest
MAX_BOARD_RUNS. That reread is untimed heavy work (on a board of 10,000 full sweeps, 0.20-0.33 s of the server's CPU,
in every open board: bench/quiet_load.py), so while a timed job holds or waits for a device it waits (issue 31):
the board keeps the rows it has, says it is behind, and catches up at its first refresh after. Rows are read
from the store's listing summaries (no payload decoded); payloads only for
the sweeps and training runs the board charts, and for one run of a machine that has neither. The board is
ordered by arrival (run id), newest first: a projector shows what just landed, whatever date an imported file
claims, and its "arrived" column is the store's own clock at the insert (`RunSummary.stored_at`), never that date.

What the board shows is derived here, without streamlit or plotly: the rows grouped by name and the browser
session that saved them (a name always carries that session's mark, so a classmate's name or a machine's typed
in another session is a group of its own), or by machine; where each came from (an imported run says so); the
guesses against the measured crossovers and speed-ups (the same `crossover` and `headline` the race page and
Results use), and the CPUs and GPUs in the room.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from core.results.guess import CROSSOVER_N, EPOCH_S, NO_CROSSOVER, SPEEDUP, Guess
from core.results import kinds
from core.results.browser import BrowserRun
from core.results.matmul import MatmulSweep
from core.results.train import TrainRun, preset_title
from core.platform.quiet_work import timed_job_now
from core.store.access import session_mark
from core.store.database import Store
from core.store.records import RunSummary, StoredRun

MAX_BOARD_RUNS = 200  # the newest runs a board keeps: a class of 60 running a few times each
DEFAULT_REFRESH_S = 5.0  # how often an open board asks the store whether anything changed
MIN_REFRESH_S, MAX_REFRESH_S = 1.0, 60.0


def charted_kinds() -> tuple[str, ...]:
    """What the board charts (crossovers, speed-ups, epochs) and guesses, read in full: the kinds whose record
    says so."""
    return tuple(k.name for k in kinds.RESULT_KINDS if k.board)


@dataclass(frozen=True)
class ClassBoard:
    """The runs a board shows, newest first, and the store version they were read at.

    Every row comes from the store's listing summaries (no payload decoded, as the Results page's listing);
    only the runs the board charts (`charted_kinds()`), and one run of any machine that has none of those
    (its hardware), are read in full, into `full`.
    """

    version: tuple[int, int] = (0, 0)  # Store.version(): (rows, highest id)
    runs: tuple[RunSummary, ...] = ()
    reads: int = 0  # rows read from the store over this board's life (the cost a refresh adds)
    full: tuple[StoredRun, ...] = ()  # newest first: the runs read in full, for the charts, guesses and hardware
    behind: tuple[int, int] | None = None  # a store version whose reread waits for the timed jobs (a delete)


def refresh(store: Store, board: ClassBoard | None = None, *,
            busy: Callable[[], bool] = timed_job_now) -> ClassBoard:
    """The board as the store has it now, reading only what changed since `board`; a reread of the whole board
    (after a delete) waits while `busy()` (a timed job holds or waits for a device): `board` comes back with
    `behind` set. A first read does not wait: a board with nothing to show would be worse."""
    version = store.version()
    if board is not None and version == board.version:
        return board
    if board is not None and 0 < version[1] - board.version[1] <= MAX_BOARD_RUNS:
        new_ids = list(range(board.version[1] + 1, version[1] + 1))
        listing = store.read_summaries(run_ids=new_ids)
        added = len(listing.runs) + len(listing.unreadable)
        if board.version[0] + added == version[0]:  # nothing was deleted meanwhile: merge the new rows
            rows = _newest_first([*listing.runs, *board.runs])
            return _read_full(store, ClassBoard(version, rows, board.reads + added, board.full))
    if board is not None and busy():
        return replace(board, behind=version)
    listing = store.read_summaries(limit=MAX_BOARD_RUNS)
    read = len(listing.runs) + len(listing.unreadable)
    return _read_full(store, ClassBoard(version, _newest_first(listing.runs), (board.reads if board else 0) + read))


def _newest_first(runs: list[RunSummary]) -> tuple[RunSummary, ...]:
    return tuple(sorted(runs, key=lambda r: r.run_id, reverse=True)[:MAX_BOARD_RUNS])


def _read_full(store: Store, board: ClassBoard) -> ClassBoard:
    """`board` with the runs it charts read in full (those it has already are kept), and those rows dropped
    whose payload cannot be read: the board shows only runs it can read, as it always has."""
    shown = {row.run_id for row in board.runs}
    full = [run for run in board.full if run.run_id in shown]
    have = {run.run_id for run in full}
    charted = charted_kinds()
    wanted = [row.run_id for row in board.runs if row.kind in charted and row.run_id not in have]
    covered = {run.machine_label for run in full} | {row.machine_label for row in board.runs if row.kind in charted}
    for row in board.runs:  # a machine with no charted run: one of its runs, for the CPUs and GPUs in the room
        if row.machine_label not in covered and row.run_id not in have:
            wanted.append(row.run_id)
            covered.add(row.machine_label)
    if not wanted:
        return replace(board, full=tuple(full))
    listing = store.read_runs(run_ids=wanted)
    full = sorted([*full, *listing.runs], key=lambda r: r.run_id, reverse=True)
    if bad := {run.run_id for run in listing.unreadable}:  # its machine's hardware may be on another of its runs
        rows = tuple(row for row in board.runs if row.run_id not in bad)
        return _read_full(store, replace(board, runs=rows, full=tuple(full)))
    return replace(board, full=tuple(full))


WHO_HELP = ("a name is followed by the mark of the browser session that saved the run ('server': the command "
            "line), so two students typing one name are two groups; runs without a name are grouped by machine")
ARRIVED_HELP = "when the run reached the board, by the server's clock (an imported file's own dates are not used)"
MACHINE_GROUP = "machine: "  # how the board names a group of unnamed runs: by their machine, said to be one


def group_key(run: RunSummary | StoredRun) -> tuple[str, str, str]:
    """Which group a run belongs to on the board: ('name', its name, its session's mark), else ('machine', its
    machine, ''). A name is one person's only within one browser session: two sessions that both type "Ana",
    or a name equal to a machine's, make groups of their own (issue 30)."""
    if run.label:
        return "name", run.label, session_mark(run.owner)
    return "machine", run.machine_label, ""


def who(run: RunSummary | StoredRun) -> str:
    """How the board names a run's group: its name with the mark of the session that saved it ('Ana · 3fa2c1';
    'server' for the command line), else its machine, said to be one ('machine: AMD EPYC'). A name is never
    shown bare, so a student cannot post under a classmate's name, or a machine's, unnoticed."""
    what, name, mark = group_key(run)
    return f"{name} · {mark}" if what == "name" else f"{MACHINE_GROUP}{name}"


def arrived(run: RunSummary) -> str:
    """'HH:MM' (UTC) of when the run reached the store, by the server's clock; '' when the store did not record it
    (runs stored before it did). Never the time the run, or an imported file, claims."""
    return run.stored_at[11:16]


def guess_text(guess: Guess | None) -> str:
    """How the board shows a guess: as typed, or '' for none."""
    if guess is None:
        return ""
    return guess.text or ("no crossover" if guess.what == NO_CROSSOVER else f"{guess.value:g}")


def run_guess(run: StoredRun) -> Guess | None:
    guess = getattr(run.result, "guess", None)  # the kinds a student guesses before (a sweep, a training run)
    return guess if isinstance(guess, Guess) else None


@dataclass(frozen=True)
class BoardRow:
    """One line of the board's table."""

    who: str  # who(): a name with its session's mark, or 'machine: ...'
    run_id: int
    when: str  # arrived(): 'HH:MM' (UTC) by the server's clock
    kind: str
    guess: str  # before the long result, so it stays inside a projector's width (issue 34)
    result: str
    source: str  # 'measured', 'imported', 'imported (notebook)', 'notebook': an imported run says so
    machine: str


def grouped_rows(board: ClassBoard) -> list[BoardRow]:
    """Every run as a row, grouped by name and session, or by machine (the group with the newest run first),
    newest first within."""
    full = {run.run_id: run for run in board.full}
    groups: dict[tuple[str, str, str], list[RunSummary]] = defaultdict(list)
    for run in board.runs:  # newest first, so groups come out ordered by their newest run
        groups[group_key(run)].append(run)
    return [BoardRow(who=who(run), machine=run.machine_label, run_id=run.run_id, when=arrived(run), kind=run.kind,
                     source=run.source, result=run.headline + _shared(full.get(run.run_id)),
                     guess=guess_text(run_guess(full[run.run_id]) if run.run_id in full else None))
            for runs in groups.values() for run in runs]



def _shared(run: StoredRun | None) -> str:
    """' · one race shared by 3' for a copy of a race several sessions joined (counted once among the measured)."""
    shared = getattr(run.result, "shared", None) if run is not None else None
    return f" · one race shared by {shared.watchers}" if shared is not None else ""


@dataclass(frozen=True)
class Spread:
    """Guesses of one quantity against what the class measured, each as plain numbers."""

    guessed: list[float] = field(default_factory=list)
    guessed_by: list[str] = field(default_factory=list)  # who() of each guess: the chart names its dot
    measured: list[float] = field(default_factory=list)  # a point per run (an interval's upper end for matmul)
    intervals: list[tuple[float, float]] = field(default_factory=list)  # matmul: (n_low or n_high/2, n_high]
    none_guessed: int = 0  # "no crossover" guesses
    none_measured: int = 0  # runs that found no crossover (or, for speed-ups, could not tell)
    measured_presets: list[str] = field(default_factory=list)  # training: each measurement's preset, for the legend
    measured_imported: list[bool] = field(default_factory=list)  # each measurement: from an imported run (drawn open)
    cannot_tell_busy: int = 0  # matmul: runs whose headline could not tell because other programs took CPU
    cannot_tell_noisy: int = 0  # and those that could not tell for another reason (noisy samples, a throttled GPU)

    @property
    def empty(self) -> bool:
        return not (self.guessed or self.measured or self.none_guessed or self.none_measured or self.cannot_tell)

    @property
    def cannot_tell(self) -> int:
        return self.cannot_tell_busy + self.cannot_tell_noisy

    @property
    def cannot_tell_lines(self) -> list[str]:
        """'3 runs could not tell: machine busy', '1 run could not tell: too noisy': what the measured row says
        instead of staying empty where runs were measured but could not tell."""
        return [f"{count} run{'s' * (count != 1)} could not tell: {why}"
                for count, why in ((self.cannot_tell_busy, "machine busy"), (self.cannot_tell_noisy, "too noisy"))
                if count]

    @property
    def measured_median(self) -> float | None:
        return statistics.median(self.measured) if self.measured else None


def crossover_spread(board: ClassBoard) -> Spread:
    """Crossover guesses (n) against the crossovers the class's sweeps measured: each sweep's
    `headline_crossover`, the one the race page shows first and Results lists. A race several sessions
    joined (`MatmulSweep.shared`) is one measurement: every copy's guess counts, its crossover once. A run that
    could not tell is counted, busy (other programs took CPU while its sizes were timed) or noisy."""
    guessed, measured, intervals, none_g, none_m, imported, by = [], [], [], 0, 0, [], []
    busy, noisy = 0, 0
    races: set[str] = set()
    for run in board.full:
        sweep = run.result
        if not isinstance(sweep, (MatmulSweep, BrowserRun)):  # a browser's race has the same crossover and guess
            continue
        g = sweep.guess
        if g is not None and g.what == CROSSOVER_N and g.value:
            guessed.append(g.value)
            by.append(who(run))
        none_g += g is not None and g.what == NO_CROSSOVER
        shared = sweep.shared if isinstance(sweep, MatmulSweep) else None  # a browser's race is its own
        if shared is not None:
            if shared.race in races:
                continue  # another copy of a race already counted
            races.add(shared.race)
        c = sweep.headline_crossover
        if c is None or c.call == "none":
            none_m += 1
        elif c.call == "unclear":
            pair = [v for v in sweep.verdicts or () if {v.a, v.b} == {c.challenger, c.baseline}]
            busy += any(v.busy for v in pair)
            noisy += not any(v.busy for v in pair)
        elif c.call == "found" and (n := c.n or c.n_high) is not None:
            measured.append(float(n))
            imported.append(run.imported)
            if c.n_high is not None:
                intervals.append((float(c.n_low or c.n_high / 2), float(c.n_high)))
    return Spread(guessed, by, measured, intervals, none_g, none_m, measured_imported=imported, cannot_tell_busy=busy,
                  cannot_tell_noisy=noisy)


def _epoch_median(run: TrainRun) -> float | None:
    seconds = [e.seconds for e in run.epochs if e.seconds]  # finished epochs' synchronized training seconds
    return statistics.median(seconds) if seconds else None


def speedup_spread(board: ClassBoard) -> Spread:
    """The GPU's speed-up: guesses against each machine's measured CPU over GPU seconds per epoch
    (the newest CPU and GPU runs of one preset on one machine, as a race saves them)."""
    guessed: list[float] = []
    by: list[str] = []
    newest: dict[tuple[str, str | None, bool], tuple[float, bool]] = {}  # (machine, preset, GPU) -> (s/epoch, imported)
    for run in board.full:  # newest first: the first seen is kept
        train = run.result
        if not isinstance(train, TrainRun):
            continue
        if train.guess is not None and train.guess.what == SPEEDUP and train.guess.value:
            guessed.append(train.guess.value)
            by.append(who(run))
        seconds = _epoch_median(train)
        if seconds:
            newest.setdefault((run.machine_label, train.preset, train.device != "cpu"), (seconds, run.imported))
    pairs = [(cpu / newest[(m, p, True)][0], preset_title(p), imported or newest[(m, p, True)][1])
             for (m, p, gpu), (cpu, imported) in newest.items() if not gpu and (m, p, True) in newest]
    return Spread(guessed, by, [s for s, _, _ in pairs], measured_presets=[p for _, p, _ in pairs],
                  measured_imported=[i for _, _, i in pairs])


def epoch_spread(board: ClassBoard) -> Spread:
    """Seconds per epoch: guesses against every training run's median epoch."""
    guessed, measured, presets, imported, by = [], [], [], [], []
    for run in board.full:
        train = run.result
        if not isinstance(train, TrainRun):
            continue
        if train.guess is not None and train.guess.what == EPOCH_S and train.guess.value:
            guessed.append(train.guess.value)
            by.append(who(run))
        if (seconds := _epoch_median(train)) is not None:
            measured.append(seconds)
            presets.append(preset_title(train.preset))
            imported.append(run.imported)
    return Spread(guessed, by, measured, measured_presets=presets, measured_imported=imported)


@dataclass(frozen=True)
class Hardware:
    """One CPU or GPU model in the room and how many machines on the board have it."""

    kind: str  # 'CPU' or 'GPU'
    name: str
    machines: int


NO_GPU = "no GPU"  # the GPU 'model' of a machine without one: the hardware chart draws it apart


def room_hardware(board: ClassBoard) -> list[Hardware]:
    """The CPUs and GPUs of the machines that saved runs, most common first (a machine counted once)."""
    machines = {run.machine_label: run.machine for run in board.full}
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for machine in machines.values():
        counts[("CPU", (machine.cpu.name if machine.cpu is not None else None) or "unknown CPU")] += 1
        gpus = {g.name or "GPU" for g in machine.gpus}
        if machine.mps_available:
            gpus.add("Apple GPU (MPS)")
        for name in gpus or {NO_GPU}:
            counts[("GPU", name)] += 1
    return [Hardware(kind, name, n)
            for (kind, name), n in sorted(counts.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1]))]


def changed(store: Store, board: ClassBoard, *, busy: Callable[[], bool] = timed_job_now) -> bool:
    """Has anything been saved, imported or deleted since `board` was read? One cheap query. A board behind a
    delete has changed once the timed jobs are over (or the store changed again), not at every refresh before."""
    if board.behind is None:
        return store.version() != board.version
    return store.version() != board.behind or not busy()
