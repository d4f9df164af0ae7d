"""Which devices exist, how to name them, and how to wait for them.

Every device decision goes through here so tests can fake a GPU by monkeypatching
`torch.cuda` / `torch.backends.mps` in one place.
"""

from __future__ import annotations

import torch

from core.errors import DashboardError

GET_A_GPU = (  # the Hardware check page, `devices` and a refused GPU device all say this
    "No GPU is visible to PyTorch. To borrow one for free from Google Colab, take this project's notebook and "
    "wheel: the Download for Colab buttons (at the bottom of the Hardware check page), or `python -m core "
    "colab-kit --out DIR` on the command line. In Colab, File > Upload notebook (colab.ipynb), drop the .whl "
    "into the Files panel on the left, choose Runtime > Change runtime type > T4 GPU, then Run all: the "
    "notebook runs these measurements on Colab's GPU and downloads a file for the Results page (README: \"No "
    "GPU? Use Colab\"). If Colab says too many sessions are active, close your other Colab sessions and try again."
)
NEEDS_GPU = "needs a GPU, and PyTorch sees none on this machine"  # why a GPU-only control is disabled


def cuda_count() -> int:
    """Number of visible CUDA devices; 0 when CUDA is absent or broken, never an exception."""
    try:
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - a broken driver raises from device_count; treat as no GPU
        return 0


def mps_available() -> bool:
    try:
        return bool(torch.backends.mps.is_available())
    except Exception:  # noqa: BLE001 - as for CUDA: a broken backend means no MPS device, never a crash
        return False


def available_devices() -> list[str]:
    """Names a user may pick, fastest first: 'cuda:0', ..., 'mps', 'cpu'."""
    names = [f"cuda:{i}" for i in range(cuda_count())]
    if mps_available():
        names.append("mps")
    return names + ["cpu"]


def has_gpu() -> bool:
    return cuda_count() > 0 or mps_available()


def resolve_device(name: str) -> torch.device:
    """Turn a user's choice ('auto', 'cpu', 'cuda', 'cuda:1', 'mps') into a present torch.device.

    'auto' picks CUDA, then MPS, then the CPU. An unknown or absent device is a DashboardError
    whose message lists what is present.
    """
    key = name.strip().lower()
    if key == "auto":
        return torch.device(available_devices()[0])
    index_text = key[len("cuda:"):] if key.startswith("cuda:") else ""
    if index_text.isdecimal() and int(index_text) >= cuda_count():  # before torch, which keeps 8 bits: cuda:256 is 0
        count = cuda_count()
        where = f"only {count} CUDA device(s) are visible (cuda:0 to cuda:{count - 1})" if count else GET_A_GPU
        raise DashboardError(f"device {name[:40]!r} is not available: {where}")
    try:
        device = torch.device(key)
    except (RuntimeError, ValueError):
        raise DashboardError(
            f"unknown device {name!r}; choose one of: auto, {', '.join(available_devices())}"
        ) from None
    if device.type == "cpu":
        return torch.device("cpu")
    if device.type == "cuda":
        count = cuda_count()
        index = 0 if device.index is None else device.index
        if index < count:
            return torch.device("cuda", index)
        where = f"only {count} CUDA device(s) are visible" if count else GET_A_GPU
        raise DashboardError(f"device {name!r} is not available: {where}")
    if device.type == "mps":
        if mps_available():
            return torch.device("mps")
        raise DashboardError(f"device {name!r} is not available: Apple MPS needs a Mac with Apple silicon")
    raise DashboardError(f"unknown device {name!r}; choose one of: auto, {', '.join(available_devices())}")


def device_key(device: torch.device) -> str:
    """Stable name for locks, tables and JSON: 'cpu', 'mps', 'cuda:0'."""
    if device.type == "cuda":
        return f"cuda:{0 if device.index is None else device.index}"
    return device.type


def has_cuda_context(index: int) -> bool:
    """Whether this process has created a CUDA context on GPU `index` already (asking creates none)."""
    check = getattr(torch._C, "_cuda_hasPrimaryContext", None)  # absent from CPU builds of torch
    if check is None:
        return False
    try:
        return bool(check(index))
    except Exception:  # noqa: BLE001 - a broken driver: no context to speak of
        return False


class DeadContext(DashboardError):
    """A CUDA context an earlier error broke for good (a device-side assert, an illegal address): every later
    CUDA call of this process fails, whatever it asks; only a new process gets a working GPU."""


def dead_context(cause: BaseException) -> DeadContext | None:
    """The error to raise instead of `cause` where a GPU this process has a context on is broken (its
    synchronize fails), else None. cuBLAS says CUBLAS_STATUS_NOT_INITIALIZED both on a full GPU and after
    a sticky error: read as out of memory, every later size would say "choose a smaller size" in vain."""
    for index in range(cuda_count()):
        if not has_cuda_context(index):
            continue
        try:
            torch.cuda.synchronize(index)
        except Exception as exc:  # noqa: BLE001 - any error here is the context's own, raised again for good
            sticky = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
            failed = str(cause).splitlines()[0][:120] if str(cause) else type(cause).__name__
            return DeadContext(f"CUDA on cuda:{index} was broken by an earlier error ({sticky}), so it fails "
                               f"everything now ({failed}); this is not a lack of memory. Restart the dashboard (or "
                               "run the command again) to get a working GPU")
    return None


def is_async(device: torch.device) -> bool:
    """True where a call returns before the work is done, so a clock read needs a sync first."""
    return device.type in ("cuda", "mps")


def synchronize(device: torch.device) -> None:
    """Wait until every queued kernel on `device` has finished; a no-op on the CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
