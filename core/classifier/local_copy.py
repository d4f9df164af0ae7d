"""Put a local copy of a built-in data set into the cache: `python -m core data add rt-polarity PATH`.

Offline (a classroom without internet, a firewalled server) the download cannot run, but a student
or the instructor may have the data on a USB stick: the original archive, or its unpacked folder.
The copy passes the same checks as a download before it is renamed into place, so the cache never
holds a file that only looks right:

- an archive must be the original, byte for byte (the md5 the download checks) and parse into the
  expected numbers of positive and negative reviews;
- a folder (rt-polarity.pos and rt-polarity.neg, or aclImdb's train/test pos/neg) must parse into
  the same numbers; it is packed into an archive of the original layout, which is checked again.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from core.classifier.datasets import structure_check, archive_path, builtin, md5_of
from core.classifier.loaders import RT_NEG, RT_POS, find_imdb_root, find_rt_folder
from core.errors import DashboardError

RT_ARCHIVE_FOLDER = "rt-polaritydata"  # the folder inside the original rt-polarity archive
IMDB_ARCHIVE_FOLDER = "aclImdb"


@dataclass(frozen=True)
class Added:
    """What `add_local_copy` did."""

    name: str
    path: Path  # the cached archive
    already_cached: bool
    packed: bool  # True: built from an unpacked folder; False: the original archive copied


def add_local_copy(name: str, source: str | Path) -> Added:
    """Check a local archive or folder of built-in data set `name` and put it into the cache."""
    ds = builtin(name)
    dest = archive_path(name)
    if dest.is_file():
        return Added(name, dest, already_cached=True, packed=False)
    path = Path(source).expanduser()
    if not path.exists():
        raise DashboardError(f"{path} does not exist; give the {ds.filename} archive or the folder it unpacks to")
    part = dest.parent / f".{dest.name}.{uuid.uuid4().hex}.part"
    try:
        if path.is_dir():
            _pack(name, path, part)
        else:
            _copy_original(name, path, part)
        structure_check(ds)(part)  # what a download's verify does
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
    return Added(name, dest, already_cached=False, packed=path.is_dir())


def _copy_original(name: str, path: Path, part: Path) -> None:
    ds = builtin(name)
    got = md5_of(path)
    if got != ds.md5:
        raise DashboardError(f"{path} is not the original {ds.filename} (md5 {got}, expected {ds.md5}); give the "
                             "folder it unpacks to instead, or download it again")
    shutil.copyfile(path, part)


def _pack(name: str, folder: Path, part: Path) -> None:
    """The folder's reviews as an archive in the original's layout (the files as they are, no others)."""
    with tarfile.open(part, "w:gz") as tar:
        if name == "rt-polarity":
            rt = find_rt_folder(folder)
            if rt is None:
                raise DashboardError(f"{folder} holds no {RT_POS} and {RT_NEG} (here or one folder down)")
            for file in (RT_POS, RT_NEG):
                tar.add(rt / file, arcname=f"{RT_ARCHIVE_FOLDER}/{file}")
            return
        root = find_imdb_root(folder)
        if root is None:
            raise DashboardError(f"{folder} is not in the aclImdb layout (train/pos, train/neg, test/pos, test/neg)")
        for split in ("train", "test"):
            for label in ("pos", "neg"):
                tar.add(root / split / label, arcname=f"{IMDB_ARCHIVE_FOLDER}/{split}/{label}")
