"""How the Why-parallel sections write their numbers and name a GPU, so every section reads alike."""

from __future__ import annotations

from core.platform.units import times as units_times
from core.platform.units import seconds as readable_seconds


def format_duration(seconds: float) -> str:
    """3 significant digits in the unit that suits it: '345 µs', '8.46 ms', '1.5 s' (units.seconds, the one
    formatter)."""
    return readable_seconds(seconds)


def times(x: float) -> str:
    """A ratio as '2.3×' or '150×' (units.times, the one formatter)."""
    return units_times(x)


def as_fast_as(speedup: float, one: str) -> str:
    """'1.6× as fast as one', or below a half '290× slower than one': a tiny ratio ('0.0034× as fast') is read as its
    inverse."""
    return f"{times(speedup)} as fast as {one}" if speedup >= 0.5 else f"{times(1 / speedup)} slower than {one}"


RUNNING_PROCESS = "this running Python process"  # the dashboard's server, or the CLI's own process: true of both


def sync_call(gpu: str | None) -> str:
    return "torch.mps.synchronize()" if gpu == "mps" else "torch.cuda.synchronize()"


def gpu_name(gpu: str | None) -> str:
    """The device string a student would type for this GPU ('cuda' when there is none to name)."""
    return "cuda" if gpu is None or gpu.startswith("cuda") else gpu
