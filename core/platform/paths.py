"""Where the dashboard keeps files: per-user folders, each overridable by an environment variable.

Overrides exist so that a classroom server, CI or a test can point everything at one
place without touching the user's home folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from core.errors import DashboardError

APP_NAME = "gpu-vs-cpu"

CACHE_ENV = "GPU_VS_CPU_CACHE_DIR"  # downloaded data sets
DATA_ENV = "GPU_VS_CPU_DATA_DIR"  # the result store
LOCK_ENV = "GPU_VS_CPU_LOCK_DIR"  # device lock files shared by app and CLI


def _dir(env: str, default: str, what: str) -> Path:
    """The folder, created if needed and writable, or one DashboardError that says which setting to change."""
    path = Path(os.environ.get(env) or default).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file where the folder should be, a read-only parent
        raise DashboardError(f"cannot use {path} for {what} ({exc.strerror or type(exc).__name__}); "
                             f"set {env} to a writable folder") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise DashboardError(f"{path} is not writable, but {what} must be written there; "
                             f"set {env} to a writable folder")
    return path


def cache_dir() -> Path:
    """Downloaded data sets; safe to delete, they are fetched again."""
    return _dir(CACHE_ENV, platformdirs.user_cache_dir(APP_NAME), "downloaded data sets")


def data_dir() -> Path:
    """Saved results; not safe to delete."""
    return _dir(DATA_ENV, platformdirs.user_data_dir(APP_NAME), "saved results")


def lock_dir() -> Path:
    """Lock files; every process on the machine must agree on this folder, so it is per user, not per session."""
    return _dir(LOCK_ENV, os.path.join(platformdirs.user_cache_dir(APP_NAME), "locks"), "device locks")
