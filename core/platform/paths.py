"""Where the dashboard keeps files: per-user folders, each overridable by an environment variable.

Overrides exist so that a classroom server, CI or a test can point everything at one
place without touching the user's home folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "gpu-vs-cpu"

CACHE_ENV = "GPU_VS_CPU_CACHE_DIR"  # downloaded data sets
DATA_ENV = "GPU_VS_CPU_DATA_DIR"  # the result store
LOCK_ENV = "GPU_VS_CPU_LOCK_DIR"  # device lock files shared by app and CLI


def _dir(env: str, default: str) -> Path:
    path = Path(os.environ.get(env) or default).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_dir() -> Path:
    """Downloaded data sets; safe to delete, they are fetched again."""
    return _dir(CACHE_ENV, platformdirs.user_cache_dir(APP_NAME))


def data_dir() -> Path:
    """Saved results; not safe to delete."""
    return _dir(DATA_ENV, platformdirs.user_data_dir(APP_NAME))


def lock_dir() -> Path:
    """Lock files; every process on the machine must agree on this folder, so it is per user, not per session."""
    return _dir(LOCK_ENV, os.path.join(platformdirs.user_cache_dir(APP_NAME), "locks"))
