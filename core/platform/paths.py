"""Where the dashboard keeps files: per-user folders, each overridable by an environment variable.

Overrides exist so that a classroom server, CI or a test can point everything at one
place without touching the user's home folder.
"""

from __future__ import annotations

import os
import tempfile
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


SYSTEM_TREES = (Path("/proc"), Path("/sys"), Path("/dev"))  # kernel views: nothing a command writes belongs there


def output_folder(given: str | Path, option: str) -> Path:
    """The folder an `--out` names, made if missing and proven writable (a file written and removed in it)
    before any work starts; else one DashboardError saying why: a file there or above it, a kernel view
    (/proc, /sys, /dev), a read-only or immutable folder."""
    path = Path(given).expanduser().absolute()
    shown = f"{option} {given}"
    _not_the_kernel(path, shown, option)
    for above in (path, *path.parents):
        if above.exists() and not above.is_dir():
            what = "is a file" if above == path else f"is under {above}, which is a file"
            raise DashboardError(f"{shown} {what}; give {option} a folder (it is made if missing)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise PermissionError(13, "permission denied")
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise DashboardError(f"{shown} cannot be written to ({exc.strerror or type(exc).__name__}); "
                             f"give {option} a writable folder") from None
    return path


def output_file(given: str | Path, option: str) -> Path:
    """The file an `--output` names, checked before any work: not a folder, not in a kernel view, in an
    existing folder where a file can be written (proven by writing one). The file itself is written at the end."""
    path = Path(given).expanduser().absolute()
    _not_the_kernel(path, f"{option} {given}", option)
    if path.is_dir():
        raise DashboardError(f"{option} {given} is a folder; give {option} a file name")
    for above in path.parents:
        if above.exists() and not above.is_dir():
            raise DashboardError(f"{option} {given} is under {above}, which is a file; "
                                 f"give {option} a file in a folder")
    try:
        if not path.parent.is_dir():
            raise FileNotFoundError(2, f"the folder {path.parent} does not exist")
        if not os.access(path.parent, os.W_OK | os.X_OK):
            raise PermissionError(13, "permission denied")
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as exc:
        raise DashboardError(f"cannot write {given}: {exc.strerror or type(exc).__name__}") from None
    return path


def _not_the_kernel(path: Path, shown: str, option: str) -> None:
    for tree in SYSTEM_TREES:
        if path == tree or tree in path.parents:
            raise DashboardError(f"{shown} is inside {tree}, a view of the kernel, not a place for files; "
                                 f"give {option} a path of your own")
