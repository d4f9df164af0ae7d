"""This machine's rate card: seconds per warm product of each series at a ladder of sizes, measured once and kept.

The race decides its sizes before timing (core.matmul.sizes) from the time budget and a time per product for
each size. A probe run before every race made that decision noisy: on a busy machine n = 2048 was skipped in
one race and timed in the next, with the same settings. So each series (device model, dtype, threads, TF32) is
calibrated once per machine, the first time a race needs it, and the card is kept in the cache folder
(`card_path()`, one JSON file per user); every later race on the machine reads the same card and so plans the
same sizes. `python -m core matmul --recalibrate` (`forget`) drops this machine's entries, so its next race
calibrates again: after a hardware or driver change, or on a quiet machine after a calibration made while it was
busy (which is never replaced by itself: a quiet race that recalibrated would time other sizes than the busy
races before it, and the board's runs would no longer line up).

Calibration climbs sizes 128, 256, 512, ... until a product takes CALIBRATION_TARGET_S and 4 to 16 times the
size below (CUBIC_RATIO: the n^3 regime the plan extrapolates in; on a busy machine a 2-thread product at
n = 128 can take 40 ms waiting for a descheduled thread, which is no rate), each size one warm-up and the fastest
of PROBE_REPEATS timed products (others' stalls only add time, so the fastest is the nearest to the machine's own
speed), and stops at a size that would not fit in memory. An entry says whether the machine was busy as it was
calibrated, and the race's report says so: such a card may leave out sizes a quiet machine would time. The card
is read and written while the race holds its devices, so a second race waiting in line reads the card the first
one wrote.

A card too slow is taken down by the races themselves (`correct`): a race that timed a calibrated size at least
CORRECTION_FACTOR times faster than the card says (its median: stalls and other work only add time, so no race
is faster than the machine) writes that median into the card for the races after it. Without it, a calibration
made while a student's session kept the server process itself busy (measured: n = 256 at 43 ms instead of
0.24 ms; core.platform.machine_load counts other processes only, so on an otherwise quiet machine the entry is
not marked busy either) left out the large sizes of every later race until someone ran `--recalibrate`. A card
within noise of the races (less than CORRECTION_FACTOR) is kept as it is, so they plan the same sizes.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import filelock
import torch

from core.errors import DashboardError
from core.matmul.series import Series
from core.platform.hardware import cpu_name
from core.platform.paths import cache_dir

CARD_FILE = "matmul_rate_card.json"
CARD_VERSION = 1
CALIBRATION_N = 128  # the ladder's first size
CALIBRATION_TARGET_S = 0.02  # the ladder climbs until one product takes this long (beyond launch and cache effects)
CUBIC_RATIO = (4.0, 16.0)  # ... and took 4 to 16 times the size below: t ~ n^3 (8x a doubling); less is launch
# latency or a stall at the size below, more a stall at this size (a descheduled thread adds tens of ms)
CALIBRATION_LIMIT_S = 1.0  # or, whatever the ratio, until one product takes this long
CALIBRATION_MAX_N = 32768  # and never past this size
PROBE_REPEATS = 3  # timed products per calibration size; the fastest is kept
CORRECTION_FACTOR = 2.0  # a race this many times faster than the card at a calibrated size takes the card down

# seconds per warm product of size n, the fastest of a few (engine.probe_seconds); None: it ran out of memory
Probe = Callable[[Series, int], "float | None"]
Fits = Callable[[Series, int], bool]  # whether size n may be allocated for the calibration


@dataclass(frozen=True)
class Rates:
    """One series' calibration: (n, seconds per warm product) for each size of its ladder, and when."""

    ladder: tuple[tuple[int, float], ...]
    measured_at: str  # UTC, ISO 8601
    busy: bool = False  # other programs kept the machine busy as it was calibrated (core.platform.machine_load)

    def seconds(self, n: int) -> tuple[float, int]:
        """(seconds per product at n, the calibrated size it is reckoned from): t ~ n^3 from the largest
        calibrated size not above n (efficiency changes with size), else from the smallest."""
        below = [(m, t) for m, t in self.ladder if m <= n]
        m, t = max(below) if below else min(self.ladder)
        return t * (n / m) ** 3, m

    def to_json(self) -> dict[str, Any]:
        return {"ladder": [list(step) for step in self.ladder], "measured_at": self.measured_at, "busy": self.busy}

    @classmethod
    def from_json(cls, obj: Any) -> Rates | None:
        """The entry as stored, or None for one that is not a card entry (a hand-edited or damaged file)."""
        try:
            ladder = tuple((int(n), float(t)) for n, t in obj["ladder"])
            measured_at = str(obj["measured_at"])
            busy = bool(obj.get("busy", False))
        except (KeyError, TypeError, ValueError):
            return None
        if not ladder or any(n < 1 or not t > 0 for n, t in ladder):
            return None
        return cls(ladder, measured_at, busy)


def card_path() -> Path:
    return cache_dir() / CARD_FILE


def machine_key() -> str:
    """The machine a card is for: host, CPU model, logical cores and torch version (a new torch is new kernels)."""
    return f"{platform.node()} | {cpu_name()} | {os.cpu_count() or 1} cores | torch {torch.__version__}"


def series_key(series: Series) -> str:
    """A series on this machine, by its device's model: 'NVIDIA H100 80GB HBM3 | cuda:0 float32 TF32 off'."""
    device = torch.device(series.device)
    model = torch.cuda.get_device_properties(device.index or 0).name if device.type == "cuda" else device.type
    return f"{model} | {series.label}"


def _read(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(obj, dict) or obj.get("version") != CARD_VERSION or not isinstance(obj.get("machines"), dict):
        return {}
    return obj


def read_card(path: Path | None = None) -> dict[str, Rates]:
    """This machine's entries, by series key ({} without a card)."""
    machine = _read(path or card_path()).get("machines", {}).get(machine_key(), {})
    entries = {key: Rates.from_json(value) for key, value in machine.items()} if isinstance(machine, dict) else {}
    return {key: rates for key, rates in entries.items() if rates is not None}


def write_entries(entries: Mapping[str, Rates], path: Path | None = None) -> None:
    """Add entries to this machine's card, keeping every other entry; read and written under a file lock (a race
    on another device may be adding its own), written whole, then renamed into place."""
    path = path or card_path()
    with filelock.FileLock(str(path) + ".lock", timeout=30):
        obj = _read(path) or {"version": CARD_VERSION, "machines": {}}
        machine = obj["machines"].setdefault(machine_key(), {})
        machine.update({key: rates.to_json() for key, rates in entries.items()})
        _replace(path, obj)


def _replace(path: Path, obj: dict[str, Any]) -> None:
    """Written whole to a temporary file, then renamed into place: a reader never sees half a card."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".rate_card.")
    with os.fdopen(fd, "w") as out:
        json.dump(obj, out, indent=1)
    os.replace(tmp, path)


def forget(path: Path | None = None) -> int:
    """Drop this machine's entries (other machines' are kept), so its next race calibrates again; how many went."""
    path = path or card_path()
    if not path.exists():
        return 0
    with filelock.FileLock(str(path) + ".lock", timeout=30):
        obj = _read(path)
        gone = obj.get("machines", {}).pop(machine_key(), None)
        if not isinstance(gone, dict):
            return 0
        _replace(path, obj)
    return len(gone)


def calibrate(series: Series, probe: Probe, fits: Fits, *, busy: bool = False) -> Rates:
    """Climb the ladder for one series (see the module's docstring)."""
    ladder: list[tuple[int, float]] = []
    n = CALIBRATION_N
    while n <= CALIBRATION_MAX_N and (not ladder or fits(series, n)):
        seconds = probe(series, n)
        if seconds is None:
            break
        ladder.append((n, max(seconds, 1e-9)))
        low, high = CUBIC_RATIO
        cubic = len(ladder) > 1 and low * ladder[-2][1] <= seconds <= high * ladder[-2][1]
        if (seconds >= CALIBRATION_TARGET_S and cubic) or seconds >= CALIBRATION_LIMIT_S:
            break
        n *= 2
    if not ladder:
        raise DashboardError(f"cannot calibrate {series.label}: not even n={CALIBRATION_N} fits in its memory now; "
                             "free some memory and run again")
    return Rates(tuple(ladder), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), busy)


@dataclass(frozen=True)
class Card:
    """The rates a race plans with, one per series, and which of them it calibrated just now."""

    rates: Mapping[Series, Rates]
    calibrated: tuple[Series, ...] = ()

    def note(self) -> str:
        """What the race's report says about where its sizes came from."""
        kept = [s for s in self.rates if s not in self.calibrated]
        dates = sorted({self.rates[s].measured_at[:10] for s in kept})
        parts = []
        if self.calibrated:
            parts.append(f"calibrated now for {', '.join(s.label for s in self.calibrated)}")
        if kept:
            parts.append(f"the calibration of {', '.join(dates)} for {', '.join(s.label for s in kept)}")
        busy = [s.label for s in self.rates if self.rates[s].busy]
        warning = (f" It was calibrated while other programs kept the machine busy ({', '.join(busy)}), so it may "
                   "leave out sizes a quiet machine would time: `python -m core matmul --recalibrate` on a quiet "
                   "machine measures it again." if busy else "")
        return ("Sizes were decided before timing, from the time budget, the devices' memory and this machine's rate "
                f"card ({'; '.join(parts)}), so a race with the same settings on this machine times the same sizes."
                f"{warning}")


def rates_for(series: Sequence[Series], probe: Probe, fits: Fits, path: Path | None = None, *,
              busy: bool = False, say: Callable[[str], None] = lambda line: None) -> Card:
    """Every series' rates: from the card where it has them, else calibrated now (`busy`: while other programs
    kept the machine busy; `say` hears a line before each) and added to it."""
    stored = read_card(path)
    rates: dict[Series, Rates] = {}
    new: dict[str, Rates] = {}
    for s in series:
        key = series_key(s)
        if key not in stored and key not in new:
            say(f"calibrating {s.label} for this machine's rate card (once per machine)")
            new[key] = calibrate(s, probe, fits, busy=busy)
        rates[s] = stored.get(key) or new[key]
    if new:
        write_entries(new, path)
    return Card(rates, tuple(s for s in series if series_key(s) in new))


def corrected(rates: Rates, timed: Mapping[int, float]) -> Rates | None:
    """`rates` with every calibrated size that a race timed (`timed`: n -> its median seconds per product)
    CORRECTION_FACTOR or more times faster taken down to that median; None when no size was."""
    ladder = tuple((n, timed[n]) if 0 < timed.get(n, 0.0) and timed[n] * CORRECTION_FACTOR <= t else (n, t)
                   for n, t in rates.ladder)
    if ladder == rates.ladder:
        return None
    return Rates(ladder, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), rates.busy)


def correct(rates: Mapping[Series, Rates], timed: Mapping[Series, Mapping[int, float]],
            path: Path | None = None) -> tuple[Series, ...]:
    """Write into the card every entry a race proved too slow (`corrected`); the series corrected."""
    fixed = {s: c for s, r in rates.items() if (c := corrected(r, timed.get(s, {}))) is not None}
    if not fixed:
        return ()
    try:
        write_entries({series_key(s): c for s, c in fixed.items()}, path)
    except (OSError, filelock.Timeout):  # the race's figures stand without it; a later race corrects it
        return ()
    return tuple(fixed)
