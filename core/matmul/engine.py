"""Time one matrix product C = A @ B honestly, for one (device, dtype, size, options).

The lecture's experiment, done right: standard-normal inputs made on the target device before
the clock starts (zeros would let some hardware skip work), a warm-up that is never a sample,
a synchronize before every clock read (all through `core.platform.timing.measure` and `core.platform.clock`),
adaptive repetition within a time budget, and a float64 CPU reference on a few sampled rows so
TF32 and half precision show their price in accuracy next to their gain in speed.

The product writes into a preallocated output (`torch.matmul(a, b, out=c)`), so what is timed
is the arithmetic, not the allocator, and the memory guard can count exactly: two inputs, one
output and a workspace margin.
"""

from __future__ import annotations

import functools
import gc
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import torch

from core.platform import timing
from core.platform.cache import cache_flush, flush_bytes
from core.platform.devices import dead_context, device_key, is_async, resolve_device, synchronize
from core.errors import DashboardError
from core.platform.memory import free_device_bytes, release_device_memory
from core.platform.precision import tf32_state
from core.platform.timing import Measurement
from core.platform.units import GIB
from core.results.matmul import MatmulPoint, PointClock

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}
WORKSPACE_FRACTION = 0.5  # of the operands' bytes: library workspace, allocator rounding, upcast buffers
WORKSPACE_MIN_BYTES = 64 * 2**20  # 64 MiB: cuBLAS/MKL workspaces do not shrink with n
ERROR_ROWS = 8  # rows of C checked against float64; the error is a norm over k*n entries
REFERENCE_COLUMNS = 512  # the float64 reference is built this many columns at a time to bound RAM
UNSYNCED_BUDGET_FRACTION = 0.2  # share of the per-size budget for the "forgot to sync" figure
UNSYNCED_MAX_SAMPLES = 5
COPY_BUDGET_FRACTION = 0.25  # share of the per-size budget for each copy direction (end to end)
BF16_MIN_CAPABILITY = 8  # CUDA compute capability major version with native bfloat16 (Ampere)
TF32_MIN_CAPABILITY = 8  # and with TF32 tensor cores

T = TypeVar("T")
OutOfMemoryError: type[BaseException] = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)


class DoesNotFit(DashboardError):
    """A size refused before allocating: it needs more memory than the device has free."""


class RanOutOfMemory(DashboardError):
    """An allocation failed anyway; the memory has been released and the caller may go on."""


@dataclass(frozen=True)
class Series:
    """One line on the charts: a device, a dtype, and the knobs that change its speed."""

    device: str  # device key: 'cpu', 'mps', 'cuda:0'
    dtype: str  # a key of DTYPES
    threads: int | None = None  # CPU only: torch threads for the timed calls
    tf32: bool | None = None  # CUDA float32 only: allow TF32 tensor cores

    @property
    def is_gpu(self) -> bool:
        return self.device != "cpu"

    @property
    def label(self) -> str:
        """'cpu float32 2 threads', 'cuda:0 float32 TF32 on', 'cuda:0 bfloat16'."""
        parts = [self.device, self.dtype]
        if self.tf32 is not None:
            parts.append(f"TF32 {'on' if self.tf32 else 'off'}")
        if self.threads is not None:
            parts.append(f"{self.threads} thread{'s' if self.threads != 1 else ''}")
        return " ".join(parts)


@dataclass(frozen=True)
class MatmulOptions:
    """How to time each size; the same for every series of a sweep."""

    budget_s: float = 1.0  # wall-clock budget of the main measurement, warm-up included
    unsynced: bool = True  # also time without synchronizing (CUDA/MPS only: the classic bug)
    end_to_end: bool = False  # also time copying the inputs in and the result out (GPU only)
    check_error: bool = True  # relative error against a float64 CPU reference on ERROR_ROWS rows
    seed: int = 0  # for the inputs and the sampled rows, so a rerun times the same matrices
    cache: str = "warm"  # "cold": evict the caches before each timed call, outside the clock (core.platform.cache)


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


# ---------------------------------------------------------------- what a device can do


def supported_dtypes(device: torch.device) -> tuple[str, ...]:
    """dtypes a matmul on `device` supports at a useful speed.

    MPS has no float64. CUDA bfloat16 needs compute capability 8.0 (Ampere) or newer; older
    GPUs only emulate it, far slower than float32, which would make a misleading race.
    """
    if device.type == "mps":
        return ("float32", "float16", "bfloat16")
    if device.type == "cuda":
        major = torch.cuda.get_device_properties(device.index or 0).major
        base = ("float32", "float64", "float16")
        return base + ("bfloat16",) if major >= BF16_MIN_CAPABILITY else base
    return tuple(DTYPES)


def check_dtype(device: torch.device, dtype: str) -> torch.dtype:
    if dtype not in DTYPES:
        raise DashboardError(f"unknown dtype {dtype!r}; choose one of: {', '.join(DTYPES)}")
    if dtype not in supported_dtypes(device):
        raise DashboardError(
            f"{dtype} is not supported on {device_key(device)}; choose one of: {', '.join(supported_dtypes(device))}"
        )
    return DTYPES[dtype]


# ---------------------------------------------------------------- the memory guard


@dataclass(frozen=True)
class MemoryNeed:
    """Bytes one size needs, on its device and on the host, before anything is allocated."""

    device: str
    n: int
    dtype: str
    inputs_bytes: int  # A and B
    output_bytes: int  # C
    workspace_bytes: int
    host_bytes: int  # RAM besides the operands: the float64 reference, host copies for end to end
    flush_bytes: int = 0  # cold caches: the buffer core.platform.cache touches before each call, on the device

    @property
    def device_bytes(self) -> int:
        total = self.inputs_bytes + self.output_bytes + self.workspace_bytes + self.flush_bytes
        return total + self.host_bytes if self.device == "cpu" else total


def memory_need(device: torch.device, dtype: str, n: int, *, end_to_end: bool = False,
                check_error: bool = True, cache: str = "warm") -> MemoryNeed:
    element = torch.empty((), dtype=DTYPES[dtype]).element_size()
    matrix = n * n * element
    operands = 3 * matrix
    workspace = max(WORKSPACE_MIN_BYTES, int(WORKSPACE_FRACTION * operands))
    host = 0
    if check_error:
        host += 8 * n * min(n, REFERENCE_COLUMNS) + 3 * 8 * ERROR_ROWS * n  # (n, cols) chunk + row blocks
    if end_to_end and device.type != "cpu":
        host += operands  # host copies of A, B and C
    return MemoryNeed(device_key(device), n, dtype, 2 * matrix, matrix, workspace, host, flush_bytes(device, cache))


def _gib(n_bytes: int) -> str:
    """'1.50 GiB'; past a million GiB (a mistyped size) '1.68e+32 GiB', not a 33-digit number."""
    value = n_bytes / GIB
    return f"{value:.2f} GiB" if value < 1e6 else f"{value:.3g} GiB"


def check_memory(need: MemoryNeed) -> None:
    """Refuse a size that does not fit, naming what it needs and what is free.

    A CPU allocation that does not fit does not raise: the kernel kills the process. So the
    guard has to come first; the out-of-memory handler is only the second line of defence.
    """
    device = torch.device(need.device)
    free = free_device_bytes(device)
    if need.device_bytes > free:
        raise DoesNotFit(
            f"n={need.n} {need.dtype} on {need.device} needs {_gib(need.device_bytes)} (inputs "
            f"{_gib(need.inputs_bytes)}, output {_gib(need.output_bytes)}, workspace {_gib(need.workspace_bytes)}"
            + (f", cold-cache flush buffer {_gib(need.flush_bytes)}" if need.flush_bytes else "")
            + (f", reference and host copies {_gib(need.host_bytes)}" if need.device == "cpu" and need.host_bytes else "")
            + f") but only {_gib(free)} is free; choose a smaller size"
        )
    if need.device != "cpu" and need.host_bytes:
        ram = free_device_bytes(torch.device("cpu"))
        if need.host_bytes > ram:
            raise DoesNotFit(
                f"n={need.n} {need.dtype} on {need.device} needs {_gib(need.host_bytes)} of RAM for the "
                f"float64 check and host copies but only {_gib(ram)} is available; choose a smaller size "
                "or turn off end to end"
            )


def largest_fitting_size(device: torch.device, dtype: str, candidates: list[int], *, end_to_end: bool = False,
                         check_error: bool = True, cache: str = "warm") -> int | None:
    """The largest of `candidates` that passes the memory guard now, or None."""
    fitting = None
    for n in sorted(candidates):
        try:
            check_memory(memory_need(device, dtype, n, end_to_end=end_to_end, check_error=check_error, cache=cache))
        except DoesNotFit:
            break
        fitting = n
    return fitting


# ---------------------------------------------------------------- settings that change the speed


def has_tf32(device: torch.device) -> bool:
    """Whether `device` has TF32 tensor cores: CUDA compute capability 8.0 (Ampere) and newer.

    On older GPUs (a T4, a V100) the TF32 setting changes nothing, so a "TF32 on" figure there
    would only repeat the float32 one under a misleading name.
    """
    if device.type != "cuda":
        return False
    return int(torch.cuda.get_device_properties(device.index or 0).major) >= TF32_MIN_CAPABILITY


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


def measure_unsynced(fn: Callable[[], object], device: torch.device, truth: Measurement, *, budget_s: float) -> Measurement:
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


OUT_OF_MEMORY_TEXTS = (
    "out of memory",  # CUDA's caching allocator (torch.OutOfMemoryError), MPS
    "can't allocate memory",  # the CPU allocator
    "cublas_status_alloc_failed",  # cuBLAS could not allocate its workspace
    "cublas_status_not_initialized",  # cuBLAS could not create its handle: on a full GPU, for want of memory
)


def is_out_of_memory(exc: BaseException) -> bool:
    """torch's OOM error, or the RuntimeErrors the CPU and MPS allocators and cuBLAS raise instead."""
    if isinstance(exc, OutOfMemoryError):
        return True
    text = str(exc).lower()
    if isinstance(exc, RuntimeError) and "cublas_status" in text and (dead := dead_context(exc)) is not None:
        raise dead from exc  # a context broken by an earlier error: not a lack of memory (issue 33)
    return isinstance(exc, RuntimeError) and any(t in text for t in OUT_OF_MEMORY_TEXTS)


def time_matmul(series: Series, n: int, options: MatmulOptions = MatmulOptions()) -> MatmulPoint:
    """Measure C = A @ B for one size of one series.

    Raises DoesNotFit before allocating when the size would not fit, and RanOutOfMemory
    (after releasing what was allocated) when an allocation fails anyway.
    """
    if n < 1:
        raise DashboardError(f"matrix size must be at least 1, got {n}")
    device = resolve_device(series.device)
    check_dtype(device, series.dtype)
    check_memory(memory_need(device, series.dtype, n, end_to_end=options.end_to_end, check_error=options.check_error,
                             cache=options.cache))
    return _releasing_on_oom(lambda: _time_matmul(series, device, n, options), device, f"n={n} {series.dtype}")


def _releasing_on_oom(work: Callable[[], T], device: torch.device, what: str) -> T:
    """Run `work`; turn an out-of-memory error into RanOutOfMemory after freeing the memory."""
    try:
        return work()
    except Exception as exc:  # noqa: BLE001 - only out-of-memory is handled, the rest re-raised
        if not is_out_of_memory(exc):
            raise
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    # Leaving the except block dropped the traceback and with it the frames holding the tensors.
    gc.collect()
    release_device_memory(device)
    raise RanOutOfMemory(f"{what} on {device_key(device)} ran out of memory ({reason}); "
                         "the memory was released; choose a smaller size")


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


def probe_seconds(series: Series, n: int, *, seed: int = 0) -> float:
    """Seconds for one warm product of size n: the time guard's calibration for a new series.

    One warm-up call, then one timed call; cheap at the sizes the guard uses it with.
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
            return timing.time_block(fn, 1, device)

    return _releasing_on_oom(probe, device, f"probe n={n} {series.dtype}")


# ---------------------------------------------------------------- CUDA events, for the self-check


def cuda_event_seconds(fn: Callable[[], object], device: torch.device, calls: int) -> float:
    """Seconds per call of `fn` measured by CUDA events on the device's current stream.

    Events are timestamps the GPU itself writes between kernels, so they need no host clock;
    the self-check uses them to confirm that sync-then-read-the-clock tells the same story.
    """
    stream = torch.cuda.current_stream(device)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    synchronize(device)
    start.record(stream)
    for _ in range(calls):
        fn()
    end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) / 1000.0 / calls  # elapsed_time is in milliseconds
