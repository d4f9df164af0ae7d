"""Time one matrix product C = A @ B honestly, for one (device, dtype, size, options).

The lecture's experiment, done right: standard-normal inputs made on the target device before
the clock starts (zeros would let some hardware skip work), a warm-up that is never a sample,
a synchronize before every clock read (all through `core.platform.timing.measure` and `core.platform.clock`),
adaptive repetition within a time budget, and a float64 CPU reference on a few sampled rows so
TF32 and half precision show their price in accuracy next to their gain in speed.

The product writes into a preallocated output (`torch.matmul(a, b, out=c)`), so what is timed
is the arithmetic, not the allocator, and the memory guard (core.matmul.guards) can count exactly:
two inputs, one output and a workspace margin. `time_matmul` and `probe_seconds` pass that guard before
allocating and run through the one out-of-memory wrapper (core.matmul.out_of_memory). What a series is
and which dtypes a device runs are in core.matmul.series; how to time, `MatmulOptions`, in core.matmul.config.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from core.errors import DashboardError
from core.matmul.config import MatmulOptions
from core.matmul.guards import ERROR_ROWS, REFERENCE_COLUMNS, check_memory, memory_need, options_need
from core.matmul.out_of_memory import releasing_on_oom
from core.matmul.series import DTYPES, Series, check_dtype, has_tf32
from core.platform import timing
from core.platform.cache import cache_flush
from core.platform.devices import is_async, resolve_device, synchronize
from core.platform.precision import tf32_state
from core.platform.timing import Measurement
from core.results.matmul import MatmulPoint, PointClock

UNSYNCED_BUDGET_FRACTION = 0.2  # share of the per-size budget for the "forgot to sync" figure
UNSYNCED_MAX_SAMPLES = 5
COPY_BUDGET_FRACTION = 0.25  # share of the per-size budget for each copy direction (end to end)


def measured_point(series: Series, n: int, compute: Measurement, unsynced: Measurement | None,
                   copy_in: Measurement | None, copy_out: Measurement | None, rel_error: float | None,
                   threads: int | None, tf32: bool | None, *, others_cores: float | None = None,
                   clock: PointClock | None = None) -> MatmulPoint:
    """One timed size as the result schema's row, built once: the synchronized samples (its statistics derive
    from them), the side figures, what other programs used meanwhile and the clock it ran at.

    The CPU's copies are 0 (its inputs are already where they are used); a GPU's are None unless
    timed (end to end). A relative error that overflowed (inf/NaN in half precision) is None: not
    measured, as the JSON writes it anyway.
    """
    h2d = copy_in.median_s if copy_in is not None else (None if series.is_gpu else 0.0)
    d2h = copy_out.median_s if copy_out is not None else (None if series.is_gpu else 0.0)
    timed = sum(m.timed_s for m in (compute, unsynced, copy_in, copy_out) if m is not None)
    return MatmulPoint(
        device=series.device, n=n, dtype=series.dtype, series=series.label, tf32=tf32, threads=threads,
        calls_per_block=compute.calls_per_block, first_call_s=compute.first_call_s,
        unsynced_s=None if unsynced is None else unsynced.median_s, h2d_s=h2d, d2h_s=d2h,
        rel_error=rel_error if rel_error is not None and math.isfinite(rel_error) else None,
        times_s=compute.times_s, timed_s=timed, others_cores=others_cores, clock=clock or PointClock(),
    )


# ---------------------------------------------------------------- settings that change the speed


@contextmanager
def tf32_matmul(enabled: bool | None, device: torch.device | None = None) -> Iterator[bool | None]:
    """Hold TF32 for float32 CUDA matmuls at `enabled` for a block, then restore it (None: leave alone).

    TF32 rounds float32 inputs to a 10-bit mantissa inside the tensor cores: several times
    faster on Ampere and newer, and visibly less exact, so it is always an explicit choice. The
    setting is process-wide, so it is held under core.platform.precision's lock (a job on another
    GPU wanting the other setting waits). Yields whether TF32 is in effect; on a `device` without
    TF32 that is False whatever was asked, and nothing is changed or waited for.
    """
    if enabled is None:
        yield None
        return
    if device is not None and device.type == "cuda" and not has_tf32(device):
        yield False
        return
    with tf32_state(enabled) as in_effect:
        yield in_effect


# ---------------------------------------------------------------- operands and timing


@dataclass
class Operands:
    """The matrices of one size; mutable holders because C is overwritten by every call."""

    a: torch.Tensor  # (n, n) on the device
    b: torch.Tensor  # (n, n) on the device
    c: torch.Tensor  # (n, n) on the device, the output buffer
    host: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None  # (A, B, C) in RAM, end to end only


def make_operands(device: torch.device, dtype: torch.dtype, n: int, *, seed: int, end_to_end: bool) -> Operands:
    """Standard-normal A and B made where they are used, before any clock starts.

    For end to end on a GPU the inputs start in RAM (that is the point) and are copied once
    here; the timed copies overwrite the same device buffers.
    """
    if end_to_end and device.type != "cpu":
        gen = torch.Generator().manual_seed(seed)
        a_h = torch.randn(n, n, dtype=dtype, generator=gen)
        b_h = torch.randn(n, n, dtype=dtype, generator=gen)
        c_h = torch.empty(n, n, dtype=dtype)
        return Operands(a_h.to(device), b_h.to(device), torch.empty(n, n, dtype=dtype, device=device), (a_h, b_h, c_h))
    gen = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(n, n, dtype=dtype, device=device, generator=gen)
    b = torch.randn(n, n, dtype=dtype, device=device, generator=gen)
    return Operands(a, b, torch.empty(n, n, dtype=dtype, device=device))


def product(ops: Operands) -> Callable[[], torch.Tensor]:
    """C = A @ B into the preallocated C. A partial, not a lambda: no Python frame per call, so
    at n = 64 (a few microseconds) the loop costs what torch.utils.benchmark's inlined statement does."""
    return functools.partial(torch.matmul, ops.a, ops.b, out=ops.c)


def measure_unsynced(fn: Callable[[], object], device: torch.device, truth: Measurement, *,
                     budget_s: float) -> Measurement:
    """The "forgot to synchronize" figure: the clock read right after the calls are queued.

    Uses the synchronized measurement's block size, so both figures time the same number of
    calls. (`timing.measure(sync=False)` would size its blocks from an unsynced probe of a few
    microseconds and queue up to a million products.) The device is drained after each block,
    outside the timed region.
    """
    block_s = truth.median_s * truth.calls_per_block
    samples = max(1, min(UNSYNCED_MAX_SAMPLES, math.floor(budget_s / max(block_s, 1e-9))))
    times = tuple(timing.time_block(fn, truth.calls_per_block, device, sync=False) / truth.calls_per_block
                  for _ in range(samples))
    return Measurement(times, truth.calls_per_block, first_call_s=0.0, synchronized=False)  # already warm


def measure_product(fn: Callable[[], object], device: torch.device, *, budget_s: float,
                    unsynced: bool, flush: timing.Flush | None = None) -> tuple[Measurement, Measurement | None]:
    """The true (synchronized) time of `fn`, and on an asynchronous device the unsynced one.

    Kept apart from tensor creation so tests can drive it with a fake device and a fake clock.
    With a `flush` (cold caches) the true time is one call per sample, each after a flush; the
    unsynced figure, a demonstration of the bug, stays warm.
    """
    truth = timing.measure(fn, device, budget_s=budget_s, flush=flush)
    if not (unsynced and is_async(device)):
        return truth, None
    return truth, measure_unsynced(fn, device, truth, budget_s=UNSYNCED_BUDGET_FRACTION * budget_s)


def measure_copies(ops: Operands, device: torch.device, *, budget_s: float) -> tuple[Measurement, Measurement]:
    """Host->device copy of both inputs and device->host copy of the result, timed apart.

    Plain (pageable) host memory, as `tensor.to("cuda")` in a user's code would use.
    """
    assert ops.host is not None, "end-to-end timing needs host copies of the operands"
    a_h, b_h, c_h = ops.host

    def copy_in() -> None:
        ops.a.copy_(a_h)
        ops.b.copy_(b_h)

    copy_in_m = timing.measure(copy_in, device, budget_s=budget_s, min_samples=3)
    copy_out_m = timing.measure(lambda: c_h.copy_(ops.c), device, budget_s=budget_s, min_samples=3)
    return copy_in_m, copy_out_m


def relative_error(ops: Operands, *, rows: int = ERROR_ROWS, seed: int = 0) -> float:
    """||C[r] - (A[r] @ B) in float64|| / ||(A[r] @ B) in float64|| over `rows` sampled rows r.

    The reference uses the same (already rounded) inputs converted exactly to float64, so the
    error is the product's own: TF32's rounding, half precision's accumulation and output.
    """
    n = ops.a.shape[0]
    picked = torch.randperm(n, generator=torch.Generator().manual_seed(seed))[:rows]
    a_rows = ops.a[picked.to(ops.a.device)].cpu().double()  # (k, n); .cpu() first: MPS has no float64
    got = ops.c[picked.to(ops.c.device)].cpu().double()  # (k, n)
    ref = torch.empty_like(got)
    for j in range(0, n, REFERENCE_COLUMNS):
        ref[:, j:j + REFERENCE_COLUMNS] = a_rows @ ops.b[:, j:j + REFERENCE_COLUMNS].cpu().double()
    return float(torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref))


def time_matmul(series: Series, n: int, options: MatmulOptions = MatmulOptions()) -> MatmulPoint:
    """Measure C = A @ B for one size of one series.

    Raises DoesNotFit before allocating when the size would not fit, and RanOutOfMemory
    (after releasing what was allocated) when an allocation fails anyway.
    """
    if n < 1:
        raise DashboardError(f"matrix size must be at least 1, got {n}")
    device = resolve_device(series.device)
    check_dtype(device, series.dtype)
    check_memory(options_need(device, series.dtype, n, options))
    return releasing_on_oom(lambda: _time_matmul(series, device, n, options), [device], f"n={n} {series.dtype}")


def _time_matmul(series: Series, device: torch.device, n: int, options: MatmulOptions) -> MatmulPoint:
    cpu_threads = series.threads if device.type == "cpu" else None
    tf32 = series.tf32 if device.type == "cuda" and series.dtype == "float32" else None
    with timing.torch_threads(cpu_threads) as threads, tf32_matmul(tf32, device) as tf32_in_effect:
        ops = make_operands(device, DTYPES[series.dtype], n, seed=options.seed, end_to_end=options.end_to_end)
        synchronize(device)  # randn is queued on a GPU: finish it before the first clock read
        flush = cache_flush(device, options.cache)
        compute, unsynced = measure_product(product(ops), device, budget_s=options.budget_s, unsynced=options.unsynced,
                                            flush=flush)
        copy_in = copy_out = None
        if options.end_to_end and device.type != "cpu":
            copy_in, copy_out = measure_copies(ops, device, budget_s=COPY_BUDGET_FRACTION * options.budget_s)
    rel_error = relative_error(ops, seed=options.seed) if options.check_error else None
    return measured_point(series, n, compute, unsynced, copy_in, copy_out, rel_error,
                          threads if device.type == "cpu" else None, tf32_in_effect)


def probe_seconds(series: Series, n: int, *, seed: int = 0, repeats: int = 1) -> float:
    """Seconds for one warm product of size n, the fastest of `repeats`: the rate card's calibration
    (core.matmul.rate_card), once per series and machine.

    One warm-up call, then `repeats` timed calls; another program's stall only adds time, so the fastest is the
    nearest to the machine's own speed. Cheap at the sizes the calibration uses it with.
    """
    device = resolve_device(series.device)
    check_memory(memory_need(device, series.dtype, n, check_error=False))

    def probe() -> float:
        cpu_threads = series.threads if device.type == "cpu" else None
        tf32 = series.tf32 if device.type == "cuda" and series.dtype == "float32" else None
        with timing.torch_threads(cpu_threads), tf32_matmul(tf32, device):
            ops = make_operands(device, DTYPES[series.dtype], n, seed=seed, end_to_end=False)
            fn = product(ops)
            timing.time_block(fn, 1, device)
            return min(timing.time_block(fn, 1, device) for _ in range(max(1, repeats)))

    return releasing_on_oom(probe, [device], f"probe n={n} {series.dtype}")


# ---------------------------------------------------------------- CUDA events, for the self-check


def cuda_event_seconds(fn: Callable[[], object], device: torch.device, calls: int) -> float:
    """Seconds per call of `fn` measured by CUDA events on the device's current stream.

    Events are timestamps the GPU itself writes between kernels, so they need no host clock;
    the self-check uses them to confirm that sync-then-read-the-clock tells the same story.
    """
    synchronize(device)  # nothing queued before the first event: the calls alone
    return timing.event_seconds(fn, device, calls)
