"""What one size's round holds at once: every series' operands on each device, counted together.

The memory guard (core.matmul.guards.check_memory) answers for one series. But a size's series are timed in
alternation (core.matmul.paired), so they are all prepared first and held together: each GPU TF32
setting and each dtype has its own A, B and C, and each device one cold-cache flush buffer. A size
where every series fits alone can then run out of memory together: "float32, TF32 off and on, and
bfloat16" at n = 32768 needs three sets of matrices on the GPU, not one. Here the series are added
in the plan's order, and one whose operands would take its device past what is free is refused
before anything is allocated, like a series that does not fit alone.

Which series share operands follows paired._contenders: series of one device and dtype share them,
except that on a CUDA GPU each TF32 setting has its own (so C checked against float64 is its own).
The cuBLAS workspace and the reference check's host memory are counted once per device (one series
runs at a time, its reference after the rounds), the flush buffer once per device (paired makes one).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from core.matmul import guards
from core.matmul.config import MatmulOptions
from core.matmul.guards import MemoryNeed
from core.matmul.series import Series
from core.platform.units import byte_size


def operands_key(s: Series) -> tuple[str, str, bool | None]:
    """Series with the same key share one set of operands in a size's round (paired._contenders)."""
    return s.device, s.dtype, s.tf32 if s.device.startswith("cuda") else None


def held_bytes(needs: Sequence[MemoryNeed]) -> int:
    """Device bytes a round holds for these operand sets of one device: each set's matrices, the largest
    workspace and flush buffer, and on the CPU the largest reference check."""
    matrices = sum(n.inputs_bytes + n.output_bytes for n in needs)
    once = max(n.workspace_bytes + n.flush_bytes + (n.host_bytes if n.device == "cpu" else 0) for n in needs)
    return matrices + once


def round_refusals(series: Sequence[Series], n: int, options: MatmulOptions) -> dict[Series, str]:
    """The series of size n that would take their device past its free memory beside the series before
    them (each already fits alone), with the message saying so; the rest can be held together."""
    kept: dict[str, dict[tuple[str, str, bool | None], MemoryNeed]] = {}
    free: dict[str, int] = {}
    refused: dict[Series, str] = {}
    for s in series:
        device = torch.device(s.device)
        held = kept.setdefault(s.device, {})
        key = operands_key(s)
        if key in held:
            continue  # shares operands already counted
        need = guards.options_need(device, s.dtype, n, options)
        together = held_bytes([*held.values(), need])
        if s.device not in free:
            free[s.device] = guards.free_device_bytes(device)
        if held and together > free[s.device]:
            refused[s] = (f"n={n} on {s.device}: {s.label} beside the size's other series there "
                          f"({len(held)} set{'s' if len(held) > 1 else ''} of operands) needs {byte_size(together)} "
                          f"at once but only {byte_size(free[s.device])} is free; each fits alone: race fewer "
                          "series at this size")
            continue
        held[key] = need
    return refused

