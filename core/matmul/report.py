"""A sweep as saved and shown, from what was measured: the `MatmulSweep` record with its verdicts and
crossovers (found here, once), the notes on throttling, the results frame the charts draw, and the line
on the clock it ran at.

Used by the loop (core.matmul.sweep) for a finished sweep, by the collector for an interrupted one, and
by the page, the CLI and the notebook to show it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from core.matmul.config import SweepConfig
from core.matmul.crossover import comparisons, sweep_crossovers, sweep_verdicts
from core.matmul.series import Series
from core.platform.units import number
from core.results import table
from core.results.load import MachineLoad
from core.results.machine import Machine
from core.results.matmul import MatmulPoint, MatmulSweep, SkippedSize

RESULT_COLUMNS = [c.key for c in table.columns(MatmulPoint)]  # the results frame's: the point's, clock flattened


def results_frame(results: Sequence[MatmulPoint]) -> pd.DataFrame:
    """One row per timed size of each series, columns RESULT_COLUMNS even when empty."""
    return pd.DataFrame([table.flat_row(r) for r in results], columns=RESULT_COLUMNS)


def throttle_notes(results: Sequence[MatmulPoint]) -> list[str]:
    """One note per series whose GPU was slowed while sizes were timed (core.platform.sensors), and one per
    series whose GPU ran at its power limit: a fact about the GPU (its speed under sustained work), not noise."""
    notes = []
    for label in dict.fromkeys(p.label for p in results if p.clock.power_limited):
        capped = ", ".join(f"{p.n:,}" for p in results if p.label == label and p.clock.power_limited)
        notes.append(f"{label}: the GPU was at its power limit while n = {capped} ran (sw_power_cap): the clock "
                     "it runs sustained work at, so those figures are its speed under load; their verdicts stand")
    for label in dict.fromkeys(p.label for p in results if p.clock.slowed):
        hot = [p for p in results if p.label == label and p.clock.slowed]
        reasons = ", ".join(dict.fromkeys(r for p in hot for r in (p.clock.throttle or "").split(", ") if r))
        sizes = ", ".join(f"{p.n:,}" for p in hot)
        one = len(hot) == 1
        notes.append(f"{label}: the GPU throttled ({reasons or 'reason not given'}) while n = {sizes} "
                     f"{'was' if one else 'were'} timed, so {'that size ran' if one else 'those sizes ran'} "
                     "below its full clock; marked in the table's 'throttled' column")
    return notes


def _span(values: Sequence[float | None], unit: str) -> str | None:
    known = [v for v in values if v is not None]
    if not known:
        return None
    lo, hi = number(min(known)), number(max(known))  # '2,600 MHz', three figures like every other
    return f"{lo} {unit}" if lo == hi else f"{lo}-{hi} {unit}"


def clock_summary(results: Sequence[MatmulPoint]) -> str | None:
    """'Clock during the run: CPU 2,600 MHz; cuda:0 SM 1,410-1,980 MHz, 45-70 °C, 120-300 W', or None
    where nothing was read (older files, an OS that does not say)."""
    parts = []
    if cpu := _span([p.clock.cpu_mhz for p in results if not p.is_gpu], "MHz"):
        parts.append(f"CPU {cpu}")
    for device in dict.fromkeys(p.device for p in results if p.is_gpu):
        rows = [p for p in results if p.device == device]
        spans = [_span([p.clock.gpu_sm_mhz for p in rows], "MHz"),
                 _span([p.clock.gpu_temperature_c for p in rows], "°C"),
                 _span([p.clock.gpu_power_w for p in rows], "W")]
        if any(spans):
            parts.append(f"{device} SM " + ", ".join(x for x in spans if x))
    return "Clock during the run: " + "; ".join(parts) if parts else None


def sweep_of(config: SweepConfig, series: Sequence[Series], results: Sequence[MatmulPoint],
             skipped: Sequence[SkippedSize] = (), *, notes: Sequence[str] = (), stopped: bool = False,
             wall_s: float | None = None, machine: Machine | None = None, finished_at: str | None = None,
             stop_reason: str = "", load: MachineLoad | None = None) -> MatmulSweep:
    """The sweep as saved, from what was measured: its verdicts and crossovers are found here, once
    (core.matmul.crossover, the rule an imported file is read by too)."""
    pairs = comparisons(series)
    verdicts = sweep_verdicts(pairs, results, cores=None if load is None else load.cores)
    crossovers = sweep_crossovers(pairs, results, end_to_end=config.options.end_to_end, verdicts=verdicts)
    return MatmulSweep(
        results=tuple(results), crossovers=tuple(crossovers), skipped=tuple(skipped),
        notes=(*notes, *throttle_notes(results)), settings={**config.to_dict(), "series": [s.label for s in series]},
        stopped=stopped,
        wall_s=wall_s, timed_s=sum(r.timed_s or 0.0 for r in results), finished_at=finished_at, machine=machine,
        stop_reason=stop_reason, load=load, verdicts=tuple(verdicts) if pairs else None, cache=config.options.cache)
