"""The race's guards, which decide before anything is allocated or timed whether a size of a series runs.

- The memory guard (`memory_need`, `check_memory`): the bytes a size needs (two inputs, the preallocated
  output, a workspace margin, the float64 reference, host copies, a cold-cache flush buffer) against what is
  free now. A CPU allocation that does not fit does not raise: the kernel kills the process, so this guard
  comes first and the out-of-memory wrapper (core.matmul.out_of_memory) is only the second line of defence.
- Time: the race's sizes are decided before it starts, from the budget and this machine's rate card
  (core.matmul.sizes, core.matmul.rate_card), so a noisy moment cannot change them; `GUARD_CALLS` is the
  cost a size must fit in its budget.

`refusal` asks the memory guard for one size of one series as the race reaches it and says why it is skipped, as
the saved `SkippedSize`; the Roofline's sweep asks both memory and time through `rate_refusal`, its time guard
reckoned from the best rate so far.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.matmul.config import MatmulOptions
from core.matmul.plan import Plan
from core.matmul.series import DTYPES, Series
from core.errors import DashboardError
from core.platform.cache import flush_bytes
from core.platform.devices import device_key
from core.platform.memory import free_device_bytes
from core.platform.units import byte_size
from core.results.matmul import SkippedSize

WORKSPACE_FRACTION = 0.5  # of the operands' bytes: library workspace, allocator rounding, upcast buffers
WORKSPACE_MIN_BYTES = 64 * 2**20  # 64 MiB: cuBLAS/MKL workspaces do not shrink with n
ERROR_ROWS = 8  # rows of C the engine checks against float64; the error is a norm over k*n entries
REFERENCE_COLUMNS = 512  # the engine builds the float64 reference this many columns at a time to bound RAM
GUARD_CALLS = 2  # a size costs at least its warm-up call and one timed call


class DoesNotFit(DashboardError):
    """A size refused before allocating: it needs more memory than the device has free."""


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


def options_need(device: torch.device, dtype: str, n: int, options: MatmulOptions) -> MemoryNeed:
    """What a size needs timed with `options` (end to end, the float64 check, cold caches)."""
    return memory_need(device, dtype, n, end_to_end=options.end_to_end, check_error=options.check_error,
                       cache=options.cache)


def check_memory(need: MemoryNeed) -> None:
    """Refuse a size that does not fit, naming what it needs and what is free.

    A CPU allocation that does not fit does not raise: the kernel kills the process. So the
    guard has to come first; the out-of-memory handler is only the second line of defence.
    """
    device = torch.device(need.device)
    free = free_device_bytes(device)
    if need.device_bytes > free:
        raise DoesNotFit(
            f"n={need.n} {need.dtype} on {need.device} needs {byte_size(need.device_bytes)} (inputs "
            f"{byte_size(need.inputs_bytes)}, output {byte_size(need.output_bytes)}, "
            f"workspace {byte_size(need.workspace_bytes)}"
            + (f", cold-cache flush buffer {byte_size(need.flush_bytes)}" if need.flush_bytes else "")
            + (f", reference and host copies {byte_size(need.host_bytes)}"
               if need.device == "cpu" and need.host_bytes else "")
            + f") but only {byte_size(free)} is free; choose a smaller size"
        )
    if need.device != "cpu" and need.host_bytes:
        ram = free_device_bytes(torch.device("cpu"))
        if need.host_bytes > ram:
            raise DoesNotFit(
                f"n={need.n} {need.dtype} on {need.device} needs {byte_size(need.host_bytes)} of RAM for the "
                f"float64 check and host copies but only {byte_size(ram)} is available; choose a smaller size "
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


def check_sizes_fit(plan: Plan) -> None:
    """Raise DoesNotFit for the first size that would not fit now (the CLI's up-front check)."""
    for s in plan.series:
        for n in plan.config.sizes:
            check_memory(options_need(torch.device(s.device), s.dtype, n, plan.config.options))


# ---------------------------------------------------------------- both, for one size of one series


def skipped_size(series: Series, n: int, reason: str, message: str) -> SkippedSize:
    """A size of a series not timed: reason "memory" (refused before allocating), "out_of_memory"
    (failed anyway) or "time" (the guard)."""
    return SkippedSize(device=series.device, n=n, dtype=series.dtype, series=series.label, reason=reason,
                       message=message)


def refusal(options: MatmulOptions, s: Series, n: int) -> SkippedSize | None:
    """Why size n of series s cannot be timed now for memory (what is free at this moment), or None: it joins the
    size's round. Time was decided before the race began (core.matmul.sizes)."""
    try:
        check_memory(options_need(torch.device(s.device), s.dtype, n, options))
    except DoesNotFit as exc:
        return skipped_size(s, n, "memory", str(exc))
    return None


def rate_refusal(s: Series, n: int, best_flops: float | None, budget_s: float) -> str | None:
    """The Roofline's sweep: why size n of series s is not timed, or None.

    Its time guard reckons from the best rate the series has reached so far (one stalled size, a descheduled
    thread, must not skip the rest), its memory guard counts the copies a GPU series times end to end.
    """
    guess = 2 * n**3 / best_flops if best_flops is not None else 0.0
    if GUARD_CALLS * guess > budget_s:
        return (f"n={n:,} on {s.label} skipped: at least {guess:.3g} s per product (2n^3 at the best rate so far), "
                f"so warm-up plus one timed product would overrun the {budget_s:g} s budget; "
                "raise the budget to time it")
    try:
        check_memory(memory_need(torch.device(s.device), s.dtype, n, end_to_end=s.is_gpu, check_error=False))
    except DoesNotFit as exc:
        return f"n={n:,} on {s.label} skipped: {exc}"
    return None
