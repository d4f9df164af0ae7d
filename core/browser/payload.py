"""What a student's browser may send, checked before anything is judged or saved: the untrusted client's half.

The page's component (core/browser/race.js) hands back one JSON object per run. A browser is anyone's
program, so nothing in it is taken on trust:

- its size (a 10 MB object is refused before it is parsed further) and its keys: measurements only.
  A verdict, a crossover, statistics or a provenance inside it are refused: the server computes those
  (core.browser.judge), and the provenance is always "reported by a browser";
- per point: a known series, a size within `MAX_N`, `MIN_SAMPLES`..`MAX_SAMPLES` samples, each a positive
  finite number of seconds; the rate 2n³/t of every sample under the ceiling of the series' class (a
  WebGPU adapter, a software one, a WebAssembly worker: `ceiling_gflops`), and any GFLOP/s the browser
  shows checked against 2n³ / median;
- a GPU point whose result disagreed with the CPU's (`MAX_REL_ERROR`; f16: `MAX_REL_ERROR_F16`) is refused:
  it was not a product;
- "webgpu f16" only from an adapter that lists `shader-f16`, its ceiling twice float32's (packed halves);
  "webgpu split dispatches" only with its `dispatches`, 2 to one per 16-wide slice of n, at one size;
- at most `MAX_SIZES` sizes, and only sizes the page offers where the caller says (`sizes`): the server's
  bootstrap judges every size of every pair, about 14 ms each, so 296 points of 200 samples at made-up sizes
  cost 4.2 s of the server's CPU per payload; the page's six sizes at most 0.32 s (measured on this 2-core VM);
- every number a plain finite one: an integer of 400 digits (JSON allows it) is refused, not an OverflowError.

Every refusal is one DashboardError line naming the field; nothing is saved.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from core.browser.half import MAX_REL_ERROR_F16
from core.errors import DashboardError
from core.results.browser import (F16_SERIES, GPU_SERIES, GPU_STATES, SPLIT_SERIES, WEBGPU_SERIES, is_software,
                                  workers_series)

MAX_PAYLOAD_CHARS = 256_000  # a run of 20 sizes x 3 series x 50 samples is about 40 kB of JSON
MAX_N = 8192  # a browser tab cannot hold more: three 8192² float32 matrices are 800 MB
MAX_SIZES = 8  # distinct sizes in one run: the page offers six (core.browser.assets.SIZES)
MIN_SAMPLES, MAX_SAMPLES = 3, 200
MAX_REPS = 1_000_000
MAX_WORKERS = 256
MAX_REL_ERROR = 1e-3  # float32 against float32 in another order: ~1e-6; a wrong kernel is ~1
GFLOPS_TOLERANCE = 0.05  # the GFLOP/s a browser shows against 2n³ / median (it rounds)
# GFLOP/s no sample may exceed: the fastest fp32 GPU a browser can reach (~105 TFLOP/s) with room to spare;
# a software adapter and a WebAssembly worker run on CPU cores (128-bit SIMD: ~80 GFLOP/s per core at 5 GHz).
GPU_CEILING_GFLOPS = 150_000.0
SOFTWARE_CEILING_GFLOPS = 3_000.0
WORKER_CEILING_GFLOPS = 100.0
TOP_KEYS = {"run_id", "user_agent", "cores", "workers", "kernel", "gpu", "gpu_note", "adapter", "points", "stopped",
            "secure"}
POINT_KEYS = {"series", "n", "times_s", "reps", "unawaited_s", "rel_error", "gflops", "timestamp_s", "dispatches"}
TILE = 16  # matmul.wgsl's tile: a split call has at most one dispatch per 16-wide slice of the inner dimension
ADAPTER_KEYS = {"vendor", "architecture", "device", "description", "fallback", "limits", "features"}
SERVER_ONLY = {"verdicts", "crossovers", "crossover", "provenance", "source", "median_s", "iqr_s", "kind",
               "schema_version", "machine"}


def refuse(what: str) -> DashboardError:
    """One line: what was wrong, and that nothing was saved."""
    return DashboardError(f"refused the browser's run, nothing saved: {what}")


@dataclass(frozen=True)
class Checked:
    """The payload, checked: plain values the judge builds the run from."""

    raw: Mapping[str, Any]
    software: bool
    workers: int


def check_payload(value: Any, sizes: Collection[int] | None = None) -> Checked:
    """The browser's object, checked whole; a DashboardError (one line) on the first thing wrong. `sizes`: the
    sizes the page offers (a point at any other size was not asked for)."""
    try:
        chars = len(json.dumps(value, allow_nan=True))
    except (TypeError, ValueError):
        raise refuse("it is not plain JSON") from None
    if chars > MAX_PAYLOAD_CHARS:
        raise refuse(f"{chars:,} characters, more than the {MAX_PAYLOAD_CHARS:,} a run needs")
    if not isinstance(value, Mapping):
        raise refuse("it is not a JSON object")
    _keys(value, TOP_KEYS, "payload")
    run_id = value.get("run_id")
    if not isinstance(run_id, str) or not 8 <= len(run_id) <= 64 or not run_id.replace("-", "").isalnum():
        raise refuse("run_id must be 8-64 letters, digits and dashes")
    workers = _whole(value.get("workers", 1), "workers", 1, MAX_WORKERS)
    if value.get("gpu", "ok") not in GPU_STATES:
        raise refuse(f"gpu must be one of {', '.join(GPU_STATES)}")
    adapter = value.get("adapter")
    software, features = False, set()
    if adapter is not None:
        if not isinstance(adapter, Mapping):
            raise refuse("adapter must be an object")
        _keys(adapter, ADAPTER_KEYS, "adapter")
        software = is_software(str(adapter.get("vendor") or ""), str(adapter.get("architecture") or ""),
                               adapter.get("fallback") is True)
        listed = adapter.get("features")
        if listed is not None and (not isinstance(listed, list) or not all(isinstance(f, str) for f in listed)):
            raise refuse("adapter.features must be a list of feature names")
        features = set(listed or ())
    points = value.get("points")
    if not isinstance(points, list) or not points:
        raise refuse("points must be a non-empty list")
    allowed = {GPU_SERIES, SPLIT_SERIES, workers_series(1), workers_series(workers)}
    if "shader-f16" in features:  # an f16 point from an adapter without f16 shaders was not measured
        allowed.add(F16_SERIES)
    seen: set[tuple[str, int]] = set()
    for i, point in enumerate(points):
        key = _point(point, f"points[{i}]", allowed, software, workers, adapter is not None)
        if key in seen:
            raise refuse(f"points[{i}]: {key[0]} at n = {key[1]} twice")
        if sizes is not None and key[1] not in sizes:
            raise refuse(f"points[{i}]: n = {key[1]} is not one of the sizes the page offers")
        if key[0] == SPLIT_SERIES and any(s == SPLIT_SERIES for s, _ in seen):
            raise refuse(f"points[{i}]: a second {SPLIT_SERIES} point (the page splits one size)")
        seen.add(key)
        if len({n for _, n in seen}) > MAX_SIZES:
            raise refuse(f"points[{i}]: more than {MAX_SIZES} sizes in one run")
    return Checked(value, software, workers)


def _keys(obj: Mapping[str, Any], allowed: set[str], path: str) -> None:
    if forged := sorted(set(obj) & SERVER_ONLY):
        raise refuse(f"{path} carries {', '.join(forged)}: a browser sends measurements only; "
                     "statistics, verdicts, crossovers and provenance are the server's")
    if unknown := sorted(set(obj) - allowed):
        raise refuse(f"{path} has unknown key {unknown[0]!r}")


def _whole(value: Any, path: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise refuse(f"{path} must be a whole number from {low} to {high:,}, got {str(value)[:40]}")
    return value


def _finite(value: Any) -> float | None:
    """A number as a finite float, or None: not a number, a bool, NaN, infinite, or an integer too large for a
    float (math.isfinite raises OverflowError on one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _seconds(value: Any, path: str, *, zero: bool = False) -> float:
    """A positive finite time (`zero`: 0 allowed too, a time under the clock's resolution)."""
    number = _finite(value)
    if number is None or number < 0 or (number == 0 and not zero):
        raise refuse(f"{path} is {str(value)[:40]}: a time must be a positive, finite number of seconds")
    return number


def ceiling_gflops(series: str, software: bool, workers: int) -> float:
    """The most GFLOP/s a sample of `series` can honestly show."""
    if series in WEBGPU_SERIES:
        return (SOFTWARE_CEILING_GFLOPS if software else GPU_CEILING_GFLOPS) * (2 if series == F16_SERIES else 1)
    return WORKER_CEILING_GFLOPS * (1 if series == workers_series(1) else workers)


def _point(point: Any, path: str, allowed: set[str], software: bool, workers: int,
           has_adapter: bool) -> tuple[str, int]:
    if not isinstance(point, Mapping):
        raise refuse(f"{path} must be an object")
    _keys(point, POINT_KEYS, path)
    series = point.get("series")
    if series not in allowed:
        raise refuse(f"{path}.series must be one of {', '.join(sorted(allowed))}, got {str(series)[:40]}")
    gpu = series in WEBGPU_SERIES
    if gpu and not has_adapter:
        raise refuse(f"{path}: a WebGPU point without the adapter that measured it")
    n = _whole(point.get("n"), f"{path}.n", 1, MAX_N)
    if series == SPLIT_SERIES:
        _whole(point.get("dispatches"), f"{path}.dispatches", 2, max(2, -(-n // TILE)))
    elif point.get("dispatches") is not None:
        raise refuse(f"{path}.dispatches belongs to a {SPLIT_SERIES} point only")
    _whole(point.get("reps", 1), f"{path}.reps", 1, MAX_REPS)
    times = point.get("times_s")
    if not isinstance(times, list) or not MIN_SAMPLES <= len(times) <= MAX_SAMPLES:
        raise refuse(f"{path}.times_s must hold {MIN_SAMPLES} to {MAX_SAMPLES} samples")
    seconds = [_seconds(t, f"{path}.times_s[{j}]") for j, t in enumerate(times)]
    ceiling = ceiling_gflops(str(series), software, workers)
    if (fastest := 2 * n**3 / min(seconds) / 1e9) > ceiling:
        raise refuse(f"{path}: {fastest:,.0f} GFLOP/s at n = {n} is above the {ceiling:,.0f} a {series} "
                     f"{'(software adapter) ' if software and gpu else ''}can reach")
    shown = point.get("gflops")
    expected = 2 * n**3 / statistics.median(seconds) / 1e9
    if shown is not None and ((number := _finite(shown)) is None
                              or abs(number - expected) > GFLOPS_TOLERANCE * expected):
        raise refuse(f"{path}.gflops is {str(shown)[:40]}, but 2n³ / median time is {expected:.4g}")
    stamps = point.get("timestamp_s")
    if stamps is not None:
        if not gpu or not isinstance(stamps, list) or len(stamps) != len(seconds):
            raise refuse(f"{path}.timestamp_s must be a GPU point's list, one per sample")
        for j, t in enumerate(stamps):  # the GPU's own clock, quantized (100 µs in Chrome): a call may read 0
            if _seconds(t, f"{path}.timestamp_s[{j}]", zero=True) > 0 and 2 * n**3 / t / 1e9 > ceiling:
                raise refuse(f"{path}.timestamp_s[{j}]: {2 * n**3 / t / 1e9:,.0f} GFLOP/s is above the {ceiling:,.0f} "
                             f"a {series} can reach")
    if point.get("unawaited_s") is not None:
        _seconds(point["unawaited_s"], f"{path}.unawaited_s", zero=True)  # submit() alone: may be under a clock step
    error = point.get("rel_error")
    if error is not None and ((number := _finite(error)) is None or number < 0):
        raise refuse(f"{path}.rel_error must be a number >= 0")
    tolerance = MAX_REL_ERROR_F16 if series == F16_SERIES else MAX_REL_ERROR
    if gpu and (error is None or error > tolerance):
        raise refuse(f"{path}: the GPU's product {'was not checked' if error is None else f'differs by {error:.2g}'} "
                     f"against the CPU's (at most {tolerance:g}): a wrong result is not timed")
    return str(series), n
