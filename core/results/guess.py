"""A student's prediction, written down before a run and saved with it (the `guess` key of a run).

Students who first predict the outcome of a demonstration understand it better than those who only
watch it (Crouch, Fagen, Callan & Mazur, Am. J. Phys. 72, 835 (2004)), so the Matmul race and the
Review classifier ask for a guess before the Run button and compare it with the measurement after.

What may be guessed, as typed into `Your guess` or given to `--guess`:

- the Matmul race: the crossover size n ("700", "1,024", "2k") or "no crossover";
- the Review classifier: seconds per epoch ("0.5", "0.5 s", "300 ms") or the GPU's speed-up over the
  CPU ("20x", "20×").

The parser lives here, with the type, so the page, the CLI and the notebook read the same text the
same way; the comparison with a measurement belongs to each feature (core.matmul.guess,
core.classifier.guess).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import PlainValidator
from pydantic.dataclasses import dataclass

from core.errors import DashboardError
from core.results import fields as f
from core.results.schema import Declared

CROSSOVER_N, NO_CROSSOVER, EPOCH_S, SPEEDUP = "crossover_n", "no_crossover", "epoch_s", "speedup"
WHATS = (CROSSOVER_N, NO_CROSSOVER, EPOCH_S, SPEEDUP)
MAX_GUESS_N = 1_000_000  # a crossover guess above a million is a typo: such a matrix needs 4 TB in float32
MAX_GUESS_EPOCH_S = 86_400.0  # a day per epoch
MAX_GUESS_SPEEDUP = 100_000.0
NO_CROSSOVER_WORDS = ("no crossover", "none", "never", "no")
MATMUL_EXAMPLE = "e.g. 700, 2k or no crossover"
TRAIN_EXAMPLE = "e.g. 0.5 s per epoch or 20x for the GPU's speed-up"
_NUMBER = r"([0-9][0-9.,]*)"  # a candidate: read by `_number`'s strict grammar, never by float() alone
_NUMBER_FORMS = (  # (pattern, thousands separator, decimal separator): ASCII digits only
    (re.compile(r"[0-9]+", re.ASCII), "", ""),
    (re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?", re.ASCII), ",", "."),  # 1,024 and 1,000,000.5
    (re.compile(r"[0-9]{1,3}(?:\.[0-9]{3}){2,}(?:,[0-9]+)?", re.ASCII), ".", ","),  # 1.000.000 and 1.000.000,5
    (re.compile(r"[0-9]{1,3}(?:\.[0-9]{3})+,[0-9]+", re.ASCII), ".", ","),  # 1.000,5
    (re.compile(r"[0-9]+\.[0-9]+", re.ASCII), "", "."),  # 0.5 and 1.024 (one dot: a decimal point)
    (re.compile(r"[0-9]+,[0-9]+", re.ASCII), "", ","),  # 0,5 (a decimal comma: not three digits after)
)


@dataclass(frozen=True, kw_only=True)
class Guess(Declared):
    """What the student predicted: a crossover size, no crossover, seconds per epoch or a speed-up."""

    what: Annotated[str, PlainValidator(f.one_of(WHATS))]
    value: f.Number = None  # n, seconds per epoch or the speed-up factor; None for "no crossover"
    text: f.AnyText = ""  # as typed, so a board can show it back in the student's words


def _number(text: str) -> float | None:
    """The one grammar of a typed number: ASCII digits, at most one decimal separator, thousands separators
    only every three digits before it. '1,024' -> 1024, '1.000.000' -> 1e6, '0,5' -> 0.5, '1.000,5' -> 1000.5;
    None for anything else ('1,2,3', '1.2.3', '1,00,0')."""
    for pattern, thousands, decimal in _NUMBER_FORMS:
        if pattern.fullmatch(text):
            plain = text.replace(thousands, "") if thousands else text
            return float(plain.replace(decimal, ".") if decimal else plain)
    return None


def _shown(text: str) -> str:
    return text.strip()[:f.MAX_TEXT_CHARS]


def parse_matmul_guess(text: str | None) -> Guess | None:
    """A crossover guess from what was typed; None for an empty box; DashboardError for anything else."""
    typed = (text or "").strip().lower().replace("n =", "").replace("n=", "").strip()
    if not typed:
        return None
    if typed in NO_CROSSOVER_WORDS:
        return Guess(what=NO_CROSSOVER, text=_shown(text or ""))
    found = re.fullmatch(_NUMBER + r"\s*(k?)", typed)
    if found and (number := _number(found.group(1))) is not None:
        n = number * (1000 if found.group(2) else 1)
        if 1 <= n <= MAX_GUESS_N:
            return Guess(what=CROSSOVER_N, value=float(round(n)), text=_shown(text or ""))
    raise DashboardError(f"the guess {_shown(text or '')[:40]!r} is not a matrix size between 1 and "
                         f"{MAX_GUESS_N:,} or 'no crossover'; type {MATMUL_EXAMPLE}")


def parse_train_guess(text: str | None) -> Guess | None:
    """Seconds per epoch or a speed-up from what was typed; None for an empty box; else DashboardError."""
    typed = (text or "").strip().lower()
    if not typed:
        return None
    speedup = re.fullmatch(_NUMBER + r"\s*(x|×|times)( faster)?", typed)
    if speedup and 0 < (value := _number(speedup.group(1)) or 0.0) <= MAX_GUESS_SPEEDUP:
        return Guess(what=SPEEDUP, value=value, text=_shown(text or ""))
    seconds = re.fullmatch(_NUMBER + r"\s*(s|sec|seconds?|ms)?( per epoch| ?/ ?epoch)?", typed)
    if seconds and 0 < (value := (_number(seconds.group(1)) or 0.0)
                        / (1000 if seconds.group(2) == "ms" else 1)) <= MAX_GUESS_EPOCH_S:
        return Guess(what=EPOCH_S, value=value, text=_shown(text or ""))
    raise DashboardError(f"the guess {_shown(text or '')[:40]!r} is neither seconds per epoch nor a speed-up; "
                         f"type {TRAIN_EXAMPLE}")
