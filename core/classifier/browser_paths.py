"""Which files on the server a browser user may read reviews from: only those under configured roots.

The dashboard serves a classroom of strangers. A path box that read any file the server can
read would let any of them probe the server's disk (does /home/x/.ssh exist?) and, through the
parsers' error messages, read parts of files. So a path typed in a browser is resolved (symlinks
followed) and must land inside one of the roots named by GPU_VS_CPU_DATA_ROOTS (default: the
data-set cache folder alone); everything else gets the same message, whether the path is
missing, unreadable or forbidden. The CLI is a local user's own tool and reads any path it is given.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from core.classifier.datasets import BUILTIN_DATASETS, ProgressCallback, load_source
from core.classifier.loaders import ARCHIVE_SUFFIXES, TABLE_SUFFIXES, Reviews
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
