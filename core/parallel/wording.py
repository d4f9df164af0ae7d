"""How the Why-parallel sections write their numbers and name a GPU, so every section reads alike."""

from __future__ import annotations


def format_duration(seconds: float) -> str:
    """3 significant digits in ms, or in µs below a millisecond (also used by the charts)."""
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} µs"


def times(x: float) -> str:
    """A ratio as '2.3×' or '150×': two digits say enough for a speed-up measured on a busy machine."""
    return f"{x:.2g}×" if x < 10 else f"{x:.0f}×"


RUNNING_PROCESS = "this running Python process"  # the dashboard's server, or the CLI's own process: true of both


def sync_call(gpu: str | None) -> str:
    return "torch.mps.synchronize()" if gpu == "mps" else "torch.cuda.synchronize()"


def gpu_name(gpu: str | None) -> str:
    """The device string a student would type for this GPU ('cuda' when there is none to name)."""
    return "cuda" if gpu is None or gpu.startswith("cuda") else gpu
