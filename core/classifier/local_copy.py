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
from core.classifier.loaders import MAX_FILE_BYTES, RT_NEG, RT_POS, find_imdb_root, find_rt_folder
from core.errors import DashboardError
from core.platform.units import byte_size

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
    """Check a local archive or folder of built-in data set `name` and put it into the cache.

    The source is checked before any work (a folder's whole layout, a file's kind and size): aclImdb
    without test/ was found missing after 14 s of packing 100,000 files, and /dev/zero was read for ever.
    Messages name the source, never the cache's internal .part file."""
    ds = builtin(name)
    dest = archive_path(name)
    if dest.is_file():
        return Added(name, dest, already_cached=True, packed=False)
    path = Path(source).expanduser()
    folder = _checked_source(name, path)
    part = dest.parent / f".{dest.name}.{uuid.uuid4().hex}.part"
    try:
        if folder is not None:
            _pack(name, folder, part)
        else:
            _copy_original(name, path, part)
        structure_check(ds, shown=str(path), got="the local copy of the")(part)  # what a download's verify does
        os.replace(part, dest)
    except OSError as exc:
        raise DashboardError(f"cannot copy {path} into the cache ({exc.strerror or type(exc).__name__}); "
                             "check the folder's permissions and free space") from None
    finally:
        part.unlink(missing_ok=True)
    return Added(name, dest, already_cached=False, packed=folder is not None)


def _checked_source(name: str, path: Path) -> Path | None:
    """The data folder to pack (None: `path` is an archive to copy), checked before anything is read."""
    ds = builtin(name)
    if not path.exists():
        raise DashboardError(f"{path} does not exist; give the {ds.filename} archive or the folder it unpacks to")
    if path.is_dir():
        return _data_folder(name, path)
    if not path.is_file():
        raise DashboardError(f"{path} is not a regular file (a device, a pipe or a socket); give the {ds.filename} "
                             "archive or the folder it unpacks to")
    if (size := path.stat().st_size) > MAX_FILE_BYTES:
        raise DashboardError(f"{path} is {byte_size(size, 'MiB')}, more than the {byte_size(MAX_FILE_BYTES)} any "
                             f"original {ds.filename} is; give that archive or the folder it unpacks to")
    return None


def _data_folder(name: str, folder: Path) -> Path:
    """rt-polarity's folder, or aclImdb's root with all four of train/test pos/neg."""
    if name == "rt-polarity":
        rt = find_rt_folder(folder)
        if rt is None:
            raise DashboardError(f"{folder} holds no {RT_POS} and {RT_NEG} (here or one folder down)")
        return rt
    root = find_imdb_root(folder)
    missing = [f"{split}/{label}" for split in ("train", "test") for label in ("pos", "neg")
               if root is None or not (root / split / label).is_dir()]
    if root is None or missing:
        raise DashboardError(f"{folder} is not in the aclImdb layout: {', '.join(missing)} missing (it needs "
                             "train/pos, train/neg, test/pos and test/neg)")
    return root


def _copy_original(name: str, path: Path, part: Path) -> None:
    ds = builtin(name)
    got = md5_of(path)
    if got != ds.md5:
        raise DashboardError(f"{path} is not the original {ds.filename} (md5 {got}, expected {ds.md5}); give the "
                             "folder it unpacks to instead, or download it again")
    shutil.copyfile(path, part)


def _pack(name: str, folder: Path, part: Path) -> None:
    """The data folder's reviews (checked by `_data_folder`) as an archive in the original's layout."""
    with tarfile.open(part, "w:gz") as tar:
        if name == "rt-polarity":
            for file in (RT_POS, RT_NEG):
                tar.add(folder / file, arcname=f"{RT_ARCHIVE_FOLDER}/{file}")
            return
        for split in ("train", "test"):
            for label in ("pos", "neg"):
                tar.add(folder / split / label, arcname=f"{IMDB_ARCHIVE_FOLDER}/{split}/{label}")
