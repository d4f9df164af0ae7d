"""The room's reference on the Class board: the instructor's measurement for the class, with its noise, and the
class's crossover guesses judged against it.

The instructor's *Measure for the class* (the Matmul race page, or `python -m core matmul --for-class`) runs the
race with a longer budget per size (core.matmul.shared_race.class_config), saves it, and pins it in the store
(`Store.pin_reference`: a table of its own, written only with the instructor's access; nothing a run or an
import carries can pin it). The board reads which run is pinned (one small query, `Store.pinned_reference`)
and the run itself only when the pin moved. What it shows is the reference's own noise, never a bare figure:
its headline crossover in the race's words, and per size of that comparison the call (faster, same, or
*cannot tell*), the ratio and its 95 % interval. Each Matmul race guess on the board is judged against it
(core.matmul.guess.guess_call): right, too small or too large by a factor, or *cannot tell* when the reference
itself could not call the crossover. A browser race's guess is about the student's own laptop, so it is judged
against that run only.

The student sees the same judgement on the Matmul race page, and `matmul --guess ... --save` prints it
(`against_reference`): one sentence, "Against the room's reference (run #7, measured 09:12 UTC by the
instructor, 4× your budget per size): your guess n ≈ 500 is too large by about 3.9×: the reference measured a
crossover between n = 64 and n = 128". Like the board, it judges every guess against the reference, whatever
race the guess was made for; when the reference was measured with other settings (sizes, dtypes, threads, ...)
or on another machine than the student's race, the sentence says so, since it then answers another race.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.matmul.cannot_tell import clock_time, parse_stamp, utc_now
from core.matmul.guess import CANNOT_TELL, RIGHT, TOO_LARGE, TOO_SMALL, GuessCall, guess_call, judge_guess
from core.results.crossover import pair_of, sentence
from core.results.guess import CROSSOVER_N, NO_CROSSOVER, Guess
from core.results.machine import Machine
from core.results.matmul import MatmulSweep
from core.store.class_board import ClassBoard, guess_text, who
from core.store.database import Store
from core.store.records import StoredRun

NO_CALL = "it raced no two series against each other, so it has no crossover to judge the guesses against"
UNCLEAR = "unclear"  # core.results.crossover's verdict call, shown as CANNOT_TELL


@dataclass(frozen=True)
class NoiseRow:
    """One size of the reference's headline comparison: its call, and the ratio with its 95 % interval."""

    n: int
    call: str  # 'faster', 'same' or 'cannot tell'
    faster: str  # the faster series, or 'a vs b' when neither is called faster
    ratio: float | None
    low: float | None
    high: float | None
    why: str  # why it cannot tell: the machine busy, too few samples, the interval straddles 1


@dataclass(frozen=True)
class RoomReference:
    """The run pinned as the room's reference, read in full."""

    run: StoredRun

    @property
    def run_id(self) -> int:
        return self.run.run_id

    @property
    def sweep(self) -> MatmulSweep:
        assert isinstance(self.run.result, MatmulSweep)
        return self.run.result

    @property
    def budget_s(self) -> float | None:
        value = self.sweep.settings.get("budget_s")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    @property
    def headline(self) -> str:
        """The headline crossover in the race's own sentence (a busy or noisy one says it cannot tell)."""
        c = self.sweep.headline_crossover
        if c is None:
            return NO_CALL
        return f"{c.title.capitalize()}: {sentence(c, self.sweep.verdicts)}"

    def noise(self) -> list[NoiseRow]:
        """The headline comparison's verdict per size ('cannot tell' where the samples could not call it)."""
        c = self.sweep.headline_crossover
        verdicts = pair_of(c, self.sweep.verdicts) if c is not None else []
        return [NoiseRow(n=v.n, call=CANNOT_TELL if v.call == UNCLEAR else v.call,
                         faster=v.a if v.call == "faster" else f"{v.a} vs {v.b}", ratio=v.ratio, low=v.low,
                         high=v.high, why="machine busy" if v.busy else v.why)
                for v in sorted(verdicts, key=lambda v: v.n)]

    def noise_summary(self) -> str:
        """'6 sizes: 4 faster, 1 same, 1 cannot tell' for the headline comparison; '' without verdicts."""
        rows = self.noise()
        if not rows:
            return ""
        counts = Counter(r.call for r in rows)
        parts = [f"{counts[call]} {call}" for call in ("faster", "same", CANNOT_TELL) if counts[call]]
        return f"{len(rows)} size{'s' * (len(rows) != 1)}: {', '.join(parts)}"


def read_reference(store: Store, known: RoomReference | None = None) -> RoomReference | None:
    """The room's reference as the store has it pinned now; `known` again when the pin has not moved (one small
    query); None when nothing is pinned, or the pinned run cannot be read as a Matmul race."""
    pinned = store.pinned_reference()
    if pinned is None:
        return None
    if known is not None and known.run_id == pinned:
        return known
    listing = store.read_runs(run_ids=[pinned])
    runs = [run for run in listing.runs if isinstance(run.result, MatmulSweep)]
    return RoomReference(runs[0]) if runs else None


@dataclass(frozen=True)
class JudgedGuess:
    """One Matmul race guess on the board, judged against the room's reference."""

    who: str
    run_id: int
    guess: str
    against_reference: str  # guess_call(): right, too small (2.1×), cannot tell, ...


def judged_guesses(board: ClassBoard, reference: RoomReference) -> list[JudgedGuess]:
    """Every crossover guess of a Matmul race on the board (newest first), judged against the reference."""
    judged = []
    for run in board.full:
        sweep = run.result
        if not isinstance(sweep, MatmulSweep) or run.run_id == reference.run_id:
            continue
        g = sweep.guess
        if g is None or g.what not in (CROSSOVER_N, NO_CROSSOVER):
            continue
        judged.append(JudgedGuess(who(run), run.run_id, guess_text(g), guess_call(g, reference.sweep)))
    return judged


def tally(judged: list[JudgedGuess]) -> str:
    """'5 guesses against it: 2 right, 2 too small, 1 too large', or why none can be judged."""
    if not judged:
        return "No Matmul race guess on the board yet to judge against it."
    if all(j.against_reference == CANNOT_TELL for j in judged):
        return (f"{len(judged)} guess{'es' * (len(judged) != 1)}, none judged: the reference cannot tell where the "
                "crossover is (too busy or noisy a machine, or no two series raced), so a guess can be neither "
                "confirmed nor refuted. Measure again on a quieter machine.")
    counts = Counter(_kind(j.against_reference) for j in judged)
    order = (RIGHT, "close", "too small", "too large", "wrong", CANNOT_TELL)
    parts = [f"{counts[k]} {k}" for k in order if counts[k]]
    return f"{len(judged)} guess{'es' * (len(judged) != 1)} against it: {', '.join(parts)}"


def _kind(call: str) -> str:
    """A call's group for the tally: 'close, too small (1.2×)' is close; 'too small (3.0×)' too small."""
    for word in ("close", "too small", "too large", "wrong"):
        if call.startswith(word):
            return word
    return call


ROOM_TITLE = "Against the room's reference"
NOT_COMPARED = ("budget_s", "series", "unsynced")  # the class's budget is longer by design; series follow from
# the settings (a 'free cores' count names other series on a busy machine); unsynced timing changes no crossover
SETTING_WORDS = {"threads": "CPU threads", "tf32": "TF32", "end_to_end": "end to end"}


@dataclass(frozen=True)
class AgainstReference:
    """A student's crossover guess judged against the room's reference, by the board's judge (judge_guess)."""

    run_id: int  # the reference's
    guess: Guess
    call: GuessCall
    measured_at: str  # '09:12 UTC' (another day: with its date); '' when its stamp cannot be read
    budget: str  # '4× your budget per size', 'the same budget per size as yours', '4 s per size' or ''
    other_settings: tuple[str, ...]  # the settings the reference was measured with and the student's race was not
    other_machine: bool  # measured on other hardware than the student's race

    @property
    def text(self) -> str:
        """The one line the race page and the CLI show."""
        when = f"measured {self.measured_at}" if self.measured_at else "measured"
        budget = f", {self.budget}" if self.budget else ""
        head = f"{ROOM_TITLE} (run #{self.run_id}, {when} by the instructor{budget}): "
        yours, call = f"your guess {_guessed(self.guess)}", self.call
        if call.kind == CANNOT_TELL:
            body = (f"cannot tell: the reference itself could not call the crossover (a busy or noisy machine, or no "
                    f"two series raced), so {yours} can be neither confirmed nor refuted")
        elif call.kind in (TOO_SMALL, TOO_LARGE):
            body = (f"{yours} is {'close, but ' if call.close else ''}{call.kind} by about {call.factor:.1f}×: "
                    f"the reference measured {call.measured}")
        else:
            body = f"{yours} is {'right' if call.kind == RIGHT else 'wrong'}: the reference measured {call.measured}"
        return head + body + self._other() + "."

    def _other(self) -> str:
        where = ["on another machine"] if self.other_machine else []
        if self.other_settings:
            where.append(f"with other {', '.join(self.other_settings)} than your race")
        return f". Note: it was measured {' and '.join(where)}, so it answers another race" if where else ""


def against_reference(reference: RoomReference, guess: Guess | None, settings: Mapping[str, Any] | None = None,
                      machine: Machine | None = None, now: datetime | None = None) -> AgainstReference | None:
    """The student's crossover guess (None: no line) judged against the room's reference, for the race of
    `settings` (a SweepConfig's to_dict(), or a sweep's settings) on `machine`; either None when not known, and
    then nothing is said about it."""
    if guess is None or guess.what not in (CROSSOVER_N, NO_CROSSOVER):
        return None
    at = parse_stamp(reference.run.created_at)
    measured_at = "" if at is None else clock_time(at, now or utc_now())
    other_machine = (machine is not None and machine.known and reference.run.machine.known
                     and machine.hardware != reference.run.machine.hardware)
    return AgainstReference(reference.run_id, guess, judge_guess(guess, reference.sweep), measured_at,
                            _budget(reference.budget_s, _number(settings or {}, "budget_s")),
                            _other_settings(reference.sweep.settings, settings or {}), other_machine)


def _guessed(g: Guess) -> str:
    return '"no crossover"' if g.what == NO_CROSSOVER else f"n ≈ {g.value or 0:,.0f}"


def _number(settings: Mapping[str, Any], key: str) -> float | None:
    value = settings.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _budget(reference_s: float | None, own_s: float | None) -> str:
    if reference_s is None or reference_s <= 0:
        return ""
    if own_s is None or own_s <= 0:
        return f"{reference_s:g} s per size"
    ratio = reference_s / own_s
    return "the same budget per size as yours" if abs(ratio - 1) < 1e-9 else f"{ratio:.3g}× your budget per size"


def _other_settings(reference: Mapping[str, Any], own: Mapping[str, Any]) -> tuple[str, ...]:
    """The settings both recorded and recorded differently (a list and a tuple of the same values are equal)."""
    keys = sorted(k for k in reference.keys() & own.keys() if k not in NOT_COMPARED)
    differ = [k for k in keys if json.dumps(reference[k], default=list) != json.dumps(own[k], default=list)]
    return tuple(dict.fromkeys(SETTING_WORDS.get(k, k.replace("_", " ")) for k in differ))
