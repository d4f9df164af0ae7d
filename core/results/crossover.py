"""The crossover as saved: one record per comparison, its sentences, the headline rule, and the upgrade of older files.

A sweep (and a roofline's measured crossover) keeps one `Crossover` per (challenger, baseline, time
column): the verdicts' call, the interval of sizes (n_low, n_high] it lies in, and the estimate `n`
(the medians' log-log interpolation, kept inside the interval). `core.matmul.crossover.crossover_of`
computes it, for the race, the Roofline and an imported file alike; everything else reads it.

Sentences are made when a crossover is shown (`sentence`, `short`), from the record and the pair's
verdicts, never saved: a change of wording reaches every saved run. Files written before version 3
(matmul) or 2 (roofline) held the crossover in up to three older shapes (a `SweepCrossover` with its
sentence, a `crossover` interval beside it, and the floats `crossover_n` / `crossover_end_to_end_n`);
`upgrade_sweep` and `upgrade_roofline` turn each into these records as a file is read, here and only
here, so a view never asks which generation a file is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import PlainValidator, model_validator
from pydantic.dataclasses import dataclass

from core.results import fields as f
from core.results.schema import Declared

TIME_COLUMNS = ("median_s", "end_to_end_s")  # what a crossover may compare: compute time, or with the copies
COMPUTE, END_TO_END = TIME_COLUMNS
VERDICT_CALLS = ("faster", "same", "unclear")  # core.matmul.verdict's calls for one size
CROSSOVER_CALLS = ("found", "none", "unclear")  # and for a comparison's crossover
FOUND, NONE, UNCLEAR = CROSSOVER_CALLS
THROTTLED_WHY = "the GPU throttled"  # how a verdict withheld for throttling starts its reason
BUSY_SENTENCE = "cannot tell on a machine this busy"  # said instead of a wrong story


def _required(names: tuple[str, ...]) -> Any:
    check = f.one_of(names)

    def required(value: Any) -> str:
        if value is None:
            raise f.Expected(f"one of {', '.join(names)}")
        return str(check(value))
    return PlainValidator(required)


@dataclass(frozen=True, kw_only=True)
class Verdict(Declared):
    """At one size: is series `a` faster than `b`, the same, or can we not tell (core.matmul.verdict)?

    With call "faster", `a` is the faster one (the verdict names the winner first); otherwise `a`
    is the comparison's challenger. `ratio` is b's median time over a's, `low`..`high` its interval.
    """

    n: f.Size
    a: f.Text
    b: f.Text
    ratio: f.Number  # b's median time / a's: above 1, a is faster
    low: f.Number  # the ratio's 95 % bootstrap interval
    high: f.Number
    call: Annotated[str, PlainValidator(f.one_of(VERDICT_CALLS))]
    busy: f.Flag = False  # other programs took enough CPU while this size was timed to withhold the call
    why: f.Note = ""  # for "unclear": busy, too few samples, or the interval straddles 1


def is_gpu_label(label: str) -> bool:
    """A series label starts with its device ('cuda:0 float32 TF32 off', 'cpu float32 2 threads')."""
    return label.split(" ", 1)[0].lower() != "cpu"


@dataclass(frozen=True, kw_only=True)
class Crossover(Declared):
    """One comparison: from which size the challenger series beats the baseline for good, with a call.

    found: from some size in (n_low, n_high] (n_low None: at or below n_high), `n` the estimate in it;
    none: the challenger is not ahead at the largest size; unclear: the measurements cannot tell (n_high,
    where set: it wins from there on, but below that nothing is sure). Compute time is called from the
    verdicts; end to end (copies measured apart) and files older than the verdicts take the medians' two
    measured sizes around it as the interval.
    """

    challenger: f.Text  # series label, e.g. 'cuda:0 float32 TF32 off'
    baseline: f.Text  # series label, e.g. 'cpu float32 2 threads'
    time: Annotated[str, _required(TIME_COLUMNS)]  # 'median_s' (compute) or 'end_to_end_s' (with copies)
    call: Annotated[str, _required(CROSSOVER_CALLS)]
    n_low: f.OptionalSize = None  # the crossover lies above this size (None: at or below n_high)
    n_high: f.OptionalSize = None  # and at or below this one
    n: f.OptionalSize = None  # the estimate: the medians' interpolation inside the interval; None unless found

    @model_validator(mode="after")
    def _consistent(self) -> Crossover:
        """What no computation writes: an empty interval, an estimate outside it, a size without a crossover."""
        if self.n_low is not None and (self.n_high is None or self.n_low >= self.n_high):
            raise ValueError(f"n_low ({self.n_low}) must lie below n_high ({self.n_high})")
        if self.n is not None and self.call != FOUND:
            raise ValueError(f"an estimate n = {self.n} with the call {self.call!r} (only a found crossover has one)")
        if self.n is not None and self.n_high is not None and not (self.n_low or 1) <= self.n <= self.n_high:
            raise ValueError(f"the estimate n = {self.n} lies outside its interval ({self.n_low}, {self.n_high}]")
        if self.call == FOUND and self.n is None and self.n_high is None:
            raise ValueError("a found crossover needs its size (n or n_high)")
        return self

    @property
    def gpu_vs_cpu(self) -> bool:
        """A GPU series against a CPU one (the headline), else e.g. 1 vs 2 threads."""
        return is_gpu_label(self.challenger) and not is_gpu_label(self.baseline)

    @property
    def with_copies(self) -> bool:
        return self.time == END_TO_END

    @property
    def winner(self) -> str:
        return "GPU" if self.gpu_vs_cpu else self.challenger

    @property
    def title(self) -> str:
        """'crossover', 'crossover with copies', 'comparison': how a list of them names each."""
        return f"{'crossover' if self.gpu_vs_cpu else 'comparison'}{' with copies' if self.with_copies else ''}"


def pick_headline(crossovers: Sequence[Crossover]) -> Crossover | None:
    """The comparison a sweep is summed up by: the first GPU-vs-CPU one of compute time, else the first of
    compute time (without a GPU: the first thread or dtype comparison). The one rule for every view."""
    compute = [c for c in crossovers if c.time == COMPUTE]
    return next((c for c in compute if c.gpu_vs_cpu), compute[0] if compute else None)


def shown_order(crossovers: Sequence[Crossover]) -> list[Crossover]:
    """The comparisons as a page or the CLI lists them: the headline's first, then the others in order."""
    lead = pick_headline(crossovers)
    return ([lead] if lead else []) + [c for c in crossovers if c is not lead]


def short(c: Crossover | None) -> str:
    """A table cell: 'GPU wins from n≈300', 'no crossover' or 'crossover: cannot tell (...)'."""
    if c is None or c.call == NONE:
        return "no crossover"
    if c.call == UNCLEAR:
        return "crossover: cannot tell (machine busy or too noisy)"
    if c.n is not None:
        return f"{c.winner} wins from n≈{c.n:,}"
    return (f"{c.winner} wins from n ≤ {c.n_high:,}" if c.n_low is None
            else f"{c.winner} wins from n between {c.n_low:,} and {c.n_high:,}")


def pair_of(c: Crossover, verdicts: Sequence[Verdict] | None) -> list[Verdict]:
    """The verdicts of this crossover's pair (either order)."""
    return [v for v in verdicts or () if {v.a, v.b} == {c.challenger, c.baseline}]


def any_throttled(verdicts: Sequence[Verdict]) -> bool:
    """Was a verdict among these withheld because the GPU throttled while its size was timed?"""
    return any(v.call == UNCLEAR and v.why.startswith(THROTTLED_WHY) for v in verdicts)


def sentence(c: Crossover, verdicts: Sequence[Verdict] | None = ()) -> str:
    """The sentence the page, the CLI and the Roofline show for a crossover, given the sweep's verdicts (for
    why an unclear one is unclear: other programs took CPU, or the GPU throttled)."""
    pair = pair_of(c, verdicts)
    a, b, compute = c.challenger, c.baseline, c.time == COMPUTE
    if c.call == FOUND:
        if c.n_high is None:  # a file that kept the estimate alone
            return f"{a} beats {b} from n ≈ {c.n:,} on"
        if c.n_low is None:
            return f"{a} beats {b} at every measured size: the crossover is at or below n = {c.n_high:,}"
        if compute and (pair or c.n is None):  # called from the verdicts: the interval is what the samples can say
            return f"{a} beats {b} from a size between n = {c.n_low:,} and n = {c.n_high:,} on"
        return f"{a} beats {b} from n ≈ {c.n:,} on (between the measured sizes {c.n_low:,} and {c.n_high:,})"
    if c.call == NONE:
        return f"no crossover in this range: {a} does not beat {b} for good at the sizes measured"
    if any(v.busy for v in pair):
        if not compute:
            return f"{BUSY_SENTENCE} (other programs took CPU while sizes were timed)"
        return (f"{BUSY_SENTENCE} where {a} starts to beat {b}: other programs took CPU while sizes were "
                "timed; run it again when the machine is quieter")
    if not compute:
        return f"no size was measured for both {a} and {b}"
    if any_throttled(pair):
        return (f"cannot tell where {a} starts to beat {b}: the GPU throttled while sizes were timed (it ran "
                "below its full clock; the run's details say why); run it again once it has cooled down")
    if c.n_high is not None:
        return (f"cannot tell where {a} starts to beat {b}: it wins from n = {c.n_high:,} on, "
                "but below that the measurements cannot tell")
    return f"cannot tell whether {a} beats {b}: the measurements were too noisy (or the machine too busy) to call"


# ---------------------------------------------------------------- older files, read as these records

OLD_SWEEP_KEYS = ("crossover_n", "crossover_end_to_end_n", "crossover")  # matmul versions 1 and 2
SWEEP_VERSION = 3  # the matmul schema version that writes only `crossovers` of these records
ROOFLINE_VERSION = 2  # and the roofline's, whose `measured_crossover` is one


def _whole(value: Any) -> Any:
    """An old float size as the record's whole number (anything else is left for the record to refuse)."""
    if isinstance(value, float) and math.isfinite(value):
        return max(1, round(value))
    return value


def _old_entry(e: Any) -> Any:
    """A version 1/2 `SweepCrossover` (status, n, lower_n, upper_n, a stored sentence; later call, n_low, n_high)
    as a record: its call as every view read it (without a call: found where it had a size; else, for compute
    time, none, and end to end none only where the medians said so: a busy pair or no common size is unclear)."""
    if not isinstance(e, dict):
        return e
    time, n = e.get("time"), e.get("n")
    if e.get("call") is not None:
        call, low, high = e.get("call"), e.get("n_low"), e.get("n_high")
    else:
        call = FOUND if n is not None else (NONE if time == COMPUTE or e.get("status") == "none" else UNCLEAR)
        low, high = (e.get("lower_n"), e.get("upper_n")) if call == FOUND else (None, None)
    named = {k: e[k] for k in ("challenger", "baseline", "time") if k in e}  # a missing one stays missing
    return {**named, "call": call, "n_low": low, "n_high": high, "n": n if call == FOUND else None}


def _old_interval(interval: dict[str, Any], n: Any) -> dict[str, Any]:
    """A version 2 `crossover` interval ({a, b, n_low, n_high, call}) and the float beside it, as a record."""
    call, low, high, n = interval.get("call"), interval.get("n_low"), interval.get("n_high"), _whole(n)
    if call == FOUND and all(isinstance(x, int) for x in (n, high, low or 1)):
        n = min(max(n, low or 1), high)  # kept inside the interval, as core.matmul.crossover.within keeps it
    return {"challenger": interval.get("a"), "baseline": interval.get("b"), "time": COMPUTE, "call": call,
            "n_low": low, "n_high": high, "n": n if call == FOUND else None}


def _labels(data: dict[str, Any]) -> tuple[str, str]:
    """The GPU and CPU series of a version 1 file that had only `crossover_n` (which was GPU vs CPU)."""
    rows = [r for r in data.get("results") or () if isinstance(r, dict) and isinstance(r.get("device"), str)]
    named = [(str(r.get("series") or f"{r['device']} {r.get('dtype')}"), r["device"] != "cpu") for r in rows]
    gpu = next((label for label, on_gpu in named if on_gpu), "GPU")
    cpu = next((label for label, on_gpu in named if not on_gpu), "CPU")
    return gpu, cpu


def upgrade_sweep(data: Any) -> Any:
    """A matmul object of any version as version 3 has it: the crossovers as records, the old keys gone.

    Which older field held the headline, in the order every view used to reconcile them: a comparison with its
    call, else the `crossover` interval (with `crossover_n` as its estimate), else `crossover_n` alone."""
    if not isinstance(data, dict) or not any(k in data for k in OLD_SWEEP_KEYS) and _is_current(data):
        return data
    old = {k: data.get(k) for k in OLD_SWEEP_KEYS}
    data = {k: v for k, v in data.items() if k not in OLD_SWEEP_KEYS}
    if _is_current(data):
        return data  # the old keys mean nothing in a current file: not kept, not written back
    raw = data.get("crossovers")
    entries = list(raw) if isinstance(raw, list) else []
    if raw is not None and not isinstance(raw, list):
        return data  # the reader names the bad value
    records = [_old_entry(e) for e in entries]
    compute = [i for i, e in enumerate(entries) if isinstance(e, dict) and e.get("time") == COMPUTE]
    lead = next((i for i in compute if entries[i].get("gpu_vs_cpu") is True), compute[0] if compute else None)
    interval = old["crossover"]
    if isinstance(interval, dict) and (lead is None or entries[lead].get("call") is None):
        upgraded = _old_interval(interval, old["crossover_n"])
        records = ([upgraded, *records] if lead is None
                   else [upgraded if i == lead else r for i, r in enumerate(records)])
    elif not entries and old["crossover_n"] is not None:
        gpu, cpu = _labels(data)
        records = [{"challenger": gpu, "baseline": cpu, "time": t, "call": FOUND, "n": _whole(n)}
                   for t, n in ((COMPUTE, old["crossover_n"]), (END_TO_END, old["crossover_end_to_end_n"]))
                   if n is not None]
    return {**data, "crossovers": records} if records or raw is not None else data


def _is_current(data: dict[str, Any]) -> bool:
    version = data.get("schema_version", 1)
    return isinstance(version, int) and version >= SWEEP_VERSION


def upgrade_roofline(data: Any) -> Any:
    """A roofline object of version 1 as version 2 has it: `measured_crossover` one record, carrying the
    estimate that `measured_crossover_n` held beside it (files older than the verdicts: the medians' size)."""
    if not isinstance(data, dict) or "measured_crossover_n" not in data:
        return data
    data = dict(data)
    n = data.pop("measured_crossover_n")
    version = data.get("schema_version", 1)
    if isinstance(version, int) and version >= ROOFLINE_VERSION:
        return data  # means nothing in a current file: not kept, not written back
    interval = data.get("measured_crossover")
    if isinstance(interval, dict):
        data["measured_crossover"] = _old_interval(interval, n)
    elif interval is None and isinstance(data.get("challenger"), str) and isinstance(data.get("baseline"), str):
        data["measured_crossover"] = {"challenger": data["challenger"], "baseline": data["baseline"], "time": COMPUTE,
                                      "call": NONE if n is None else FOUND, "n": _whole(n)}
    return data
