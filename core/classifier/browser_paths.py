"""Which files on the server a browser user may read reviews from: only those under configured roots.

The dashboard serves a classroom of strangers. A path box that read any file the server can
read would let any of them probe the server's disk (does /home/x/.ssh exist?) and, through the
parsers' error messages, read parts of files. So a path typed in a browser is resolved (symlinks
followed) and must land inside one of the roots named by GPU_VS_CPU_DATA_ROOTS (default: the
data-set cache folder alone); everything else gets the same message, whether the path is
missing, unreadable or forbidden. The CLI is a local user's own tool and reads any path it is given.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from core.classifier.datasets import BUILTIN_DATASETS, ProgressCallback, load_source
from core.classifier.loaders import (
    ARCHIVE_SUFFIXES, RT_NEG, RT_POS, TABLE_SUFFIXES, Reviews, find_imdb_root, find_rt_folder, load_uploads,
)
from core.errors import DashboardError
from core.platform.paths import cache_dir

DATA_ROOTS_ENV = "GPU_VS_CPU_DATA_ROOTS"  # folders, separated by os.pathsep, a browser user may read from
# Folders that hold the system or everyone's homes: naming one would open the whole disk (or every
# user's files) to a browser, so it is refused rather than obeyed.
SYSTEM_FOLDERS = frozenset(Path(p) for p in ("/", "/etc", "/proc", "/sys", "/dev", "/root", "/home", "/boot", "/usr",
                                             "/var", "/bin", "/sbin", "/lib", "/lib64", "/run", "/tmp", "/Users"))


def data_roots() -> tuple[Path, ...]:
    """The folders a browser user may read reviews from, resolved; the data-set cache by default."""
    raw = os.environ.get(DATA_ROOTS_ENV, "")
    named = [Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip()]
    roots = tuple(p.resolve() for p in (named or [cache_dir() / "datasets"]))
    for root in roots:
        if root in SYSTEM_FOLDERS or root == Path.home().resolve():
            raise DashboardError(f"the server's {DATA_ROOTS_ENV} names {root}, a system or home folder, which would "
                                 "let every browser read it; name the folder that holds the review files instead "
                                 "(e.g. /srv/reviews)")
    return roots


def refusal(roots: Sequence[Path]) -> str:
    """The one message for every path a browser user may not read, so it reveals nothing about the disk."""
    where = ", ".join(str(r) for r in roots)
    return ("that path is not available here. Upload the file instead (choose \"upload a file\"), or, on the "
            "server, add a copy of a built-in data set you already have with `python -m core data add rt-polarity "
            "PATH` (or `imdb`): it then shows as a choice above, no download needed. A path typed here is read only "
            f"under {where} (the server's {DATA_ROOTS_ENV} setting)")


def allowed_path(text: str, roots: Sequence[Path] | None = None) -> Path:
    """The resolved path if it lies under one of `roots` and exists, else DashboardError(refusal)."""
    roots = data_roots() if roots is None else tuple(roots)
    try:
        path = Path(text.strip()).expanduser().resolve()
        inside = any(path == root or path.is_relative_to(root) for root in roots)
        readable = path.is_dir() or path.name.lower().endswith(TABLE_SUFFIXES + ARCHIVE_SUFFIXES)
        if inside and path.exists() and readable:  # any other file: the same refusal as a missing one
            return path
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte, an unreadable parent
        pass
    raise DashboardError(refusal(roots))


def load_for_browser(source: str, *, progress: ProgressCallback | None = None,
                     roots: Sequence[Path] | None = None) -> Reviews:
    """A built-in data set by name, or a path under the allowed roots: what the page's path box accepts."""
    text = source.strip()
    if text in BUILTIN_DATASETS or not text:
        return load_source(text, progress=progress)
    return load_source(str(allowed_path(text, roots)), progress=progress)


# ---------------------------------------------------------------- what reading a choice costs the server
# Measured by bench/quiet_load.py on the 2-core VM (docs/classifier.md): an archive costs its members (an
# aclImdb-like one of 20,000 reviews, 7.5 MB: 0.94 s of CPU), a table or a .pos/.neg pair its text (a CSV of
# 20.9 MB: 0.52 s); rt-polarity's archive, folder or upload costs 0.01-0.03 s, its `data add` 0.11 s.
ARCHIVE_CPU_S_PER_MB = 0.13
TEXT_CPU_S_PER_MB = 0.025
QUIET_LOAD_CPU_S = 0.2  # a read estimated at more than this runs as quiet work on a server (core.platform.quiet_work)


def _cost_s(name: str, size: int) -> float:
    rate = ARCHIVE_CPU_S_PER_MB if name.lower().endswith(ARCHIVE_SUFFIXES) else TEXT_CPU_S_PER_MB
    return rate * size / 1e6


def read_cost_s(upload: bool, text: str, files: Sequence[tuple[str, bytes]]) -> float:
    """The server's CPU seconds `read_choice` would take, estimated from sizes alone (nothing is read). A path
    the browser may not read costs 0: `read_choice` refuses it at once, in the server."""
    if upload:
        return sum(_cost_s(name, len(data)) for name, data in files)
    text = text.strip()
    if text in BUILTIN_DATASETS:
        ds = BUILTIN_DATASETS[text]
        cached = cache_dir() / "datasets" / ds.filename
        if cached.is_file():
            return _cost_s(ds.filename, cached.stat().st_size)
        return 2 * _cost_s(ds.filename, int(ds.approx_mb * 1e6))  # a download is checked, then read
    if not text:
        return 0.0
    try:
        path = allowed_path(text)
    except DashboardError:
        return 0.0
    if path.is_file():
        return _cost_s(path.name, path.stat().st_size)
    if (rt := find_rt_folder(path)) is not None:
        return sum(_cost_s(name, (rt / name).stat().st_size) for name in (RT_POS, RT_NEG))
    return math.inf if find_imdb_root(path) is not None else 0.0  # aclImdb: 50,000 files and more


def read_choice(upload: bool, text: str, files: tuple[tuple[str, bytes], ...],
                progress: ProgressCallback | None = None) -> Reviews:
    """The reviews of a page's choice: its uploaded files, else a built-in data set or an allowed path. A
    module-level function of a module that imports no torch: a server's quiet child runs it for a large read."""
    return load_uploads(files) if upload else load_for_browser(text, progress=progress)
