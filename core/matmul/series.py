"""What one line of the race is (`Series`: a device, a dtype and the knobs that change its speed), and which
dtypes and settings a device can run.

Below the engine, the guards and the plan, which all speak of series: the memory guard sizes a dtype,
the rate card keeps a calibration per series (core.matmul.rate_card), the plan turns the choices into series.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.errors import DashboardError
from core.platform.devices import device_key

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}
BF16_MIN_CAPABILITY = 8  # CUDA compute capability major version with native bfloat16 (Ampere)
TF32_MIN_CAPABILITY = 8  # and with TF32 tensor cores


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


def has_tf32(device: torch.device) -> bool:
    """Whether `device` has TF32 tensor cores: CUDA compute capability 8.0 (Ampere) and newer.

    On older GPUs (a T4, a V100) the TF32 setting changes nothing, so a "TF32 on" figure there
    would only repeat the float32 one under a misleading name.
    """
    if device.type != "cuda":
        return False
    return int(torch.cuda.get_device_properties(device.index or 0).major) >= TF32_MIN_CAPABILITY
