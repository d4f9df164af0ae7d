"""How the Why-parallel sections write their numbers and name a GPU, so every section reads alike."""

from __future__ import annotations

from core.platform.units import number
from core.platform.units import seconds as readable_seconds


def format_duration(seconds: float) -> str:
    """3 significant digits in the unit that suits it: '345 µs', '8.46 ms', '1.5 s' (units.seconds, the one
    formatter)."""
    return readable_seconds(seconds)


def times(x: float) -> str:
    """A ratio as '2.3×' or '150×': two digits say enough for a speed-up measured on a busy machine (three from
    100 on: '1,230×')."""
    return f"{x:.2g}×" if x < 10 else f"{number(float(round(x)))}×"


RUNNING_PROCESS = "this running Python process"  # the dashboard's server, or the CLI's own process: true of both


def sync_call(gpu: str | None) -> str:
    return "torch.mps.synchronize()" if gpu == "mps" else "torch.cuda.synchronize()"


def gpu_name(gpu: str | None) -> str:
    """The device string a student would type for this GPU ('cuda' when there is none to name)."""
    return "cuda" if gpu is None or gpu.startswith("cuda") else gpu
