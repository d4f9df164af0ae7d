"""The built-in review data sets: where they come from, how they are checked, where they are cached.

A download goes into a temporary file beside its destination and is renamed into place only after
its checksum and structure have been verified, so a failed, interrupted or corrupted download never
leaves a file that looks complete. Offline with nothing cached, the error says the three ways to get
the data instead of hanging or printing a traceback.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import socket
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.errors import DashboardError
from core.platform.paths import cache_dir
from core.classifier.loaders import Reviews, load_archive, load_path

DOWNLOAD_TIMEOUT_S = 30.0  # no byte for this long: the connection is dead, give up
CHUNK_BYTES = 64 * 1024  # read size; also how often the progress callback fires
USER_AGENT = "gpu-vs-cpu-dashboard"  # some servers refuse urllib's default agent

ProgressCallback = Callable[[int, "int | None"], None]  # (bytes so far, total bytes or None)
Verifier = Callable[[Path], None]  # raises DashboardError when a downloaded file is not what we want


@dataclass(frozen=True)
class BuiltinDataset:
    name: str  # what users type: `python -m core data fetch NAME`
    title: str
    url: str
    filename: str  # name in the cache folder
    md5: str  # of the archive as served at `url`
    approx_mb: float  # for the download button's label only
    positives: int | None  # expected counts; checked after download
    negatives: int | None
    citation: str


BUILTIN_DATASETS: dict[str, BuiltinDataset] = {
    "rt-polarity": BuiltinDataset(
        name="rt-polarity",
        title="Rotten Tomatoes sentence polarity v1.0 (Pang & Lee)",
        url="https://www.cs.cornell.edu/people/pabo/movie-review-data/rt-polaritydata.tar.gz",
        filename="rt-polaritydata.tar.gz",
        # Pinned by two independent public loaders of this URL (DAI-Lab/fibber and a torchtext-based
        # RT_Polarity loader); the latter also pins the md5s of the two unpacked files, and those match
        # our copy of the data re-encoded to Windows-1252. The structure check below backs it up.
        md5="50c1c2c047b4225e148e97aa7708c34e",
        approx_mb=0.5,
        positives=5331,
        negatives=5331,
        citation="Bo Pang and Lillian Lee, ACL 2005",
    ),
    "imdb": BuiltinDataset(
        name="imdb",
        title="Large Movie Review Dataset v1.0 (Maas et al., IMDB)",
        url="https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz",
        filename="aclImdb_v1.tar.gz",
        md5="7c2ac02c03563afcf9b574c7e56c153a",
        approx_mb=84.0,
        positives=25000,
        negatives=25000,
        citation="Andrew L. Maas et al., ACL 2011",
    ),
}


def builtin(name: str) -> BuiltinDataset:
    try:
        return BUILTIN_DATASETS[name]
    except KeyError:
        raise DashboardError(f"unknown data set {name!r}; choose one of: {', '.join(BUILTIN_DATASETS)}") from None


def archive_path(name: str) -> Path:
    """Where the verified archive of a built-in data set lives (it may not exist yet)."""
    folder = cache_dir() / "datasets"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / builtin(name).filename


def is_cached(name: str) -> bool:
    return archive_path(name).is_file()


def md5_of(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download(
    url: str,
    dest: Path,
    *,
    md5: str | None = None,
    verify: Verifier | None = None,
    progress: ProgressCallback | None = None,
    timeout_s: float = DOWNLOAD_TIMEOUT_S,
) -> Path:
    """Download `url` to `dest` atomically: temp file, checks, then rename; nothing left on failure.

    `timeout_s` bounds every wait for the server (connect and each read), so a stalled connection
    fails in seconds rather than hanging a page; a slow but live one may take as long as it needs.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.parent / f".{dest.name}.{uuid.uuid4().hex}.part"
    done = False
    try:
        _fetch_to(url, part, progress=progress, timeout_s=timeout_s)
        if md5 is not None:
            got = md5_of(part)
            if got != md5:
                raise DashboardError(
                    f"checksum mismatch for {url}: expected md5 {md5}, got {got}; the download was corrupted "
                    "or the file changed on the server. Try again, or download it yourself and give its path"
                )
        if verify is not None:
            verify(part)
        os.replace(part, dest)
        done = True
        return dest
    finally:
        if not done:
            part.unlink(missing_ok=True)


def _fetch_to(url: str, part: Path, *, progress: ProgressCallback | None, timeout_s: float) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response, open(part, "wb") as out:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            received = 0
            if progress is not None:
                progress(0, total)
            while chunk := response.read(CHUNK_BYTES):
                out.write(chunk)
                received += len(chunk)
                if progress is not None:
                    progress(received, total)
    except (TimeoutError, socket.timeout):
        raise DashboardError(
            f"download of {url} stalled: no data for {timeout_s:g} s; check the connection and try again"
        ) from None
    except urllib.error.HTTPError as exc:
        raise DashboardError(f"download of {url} failed: the server answered {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, (TimeoutError, socket.timeout)):
            raise _Offline(f"no connection to the server within {timeout_s:g} s") from None
        raise _Offline(str(reason)) from None
    except (http.client.HTTPException, OSError) as exc:  # a dropped connection, a truncated body
        raise DashboardError(f"download of {url} was interrupted ({exc}); try again") from None
    if total is not None and received != total:
        raise DashboardError(f"download of {url} was interrupted after {received} of {total} bytes; try again")


class _Offline(DashboardError):
    """The server could not be reached at all; the caller adds how to get the data another way."""


def how_to_get(name: str, reason: str) -> str:
    ds = builtin(name)
    return (
        f"The {ds.name} data set is not on this machine yet and could not be downloaded ({reason}). "
        f"Once online, run `python -m core data fetch {ds.name}`; or give the path of a local copy (the "
        f".tar.gz from {ds.url} or the folder it unpacks to), or put that copy into the cache for good with "
        f"`python -m core data add {ds.name} PATH`; or upload the file on the Review classifier page."
    )


def structure_check(ds: BuiltinDataset, *, shown: str | None = None, got: str = "the downloaded") -> Verifier:
    """The archive must parse into the expected numbers of positive and negative reviews. `shown` names it in
    messages instead of the file checked (a cache's internal .part file); `got` says where it came from."""

    def check(path: Path) -> None:
        reviews = load_archive(path, shown)
        if (reviews.n_positive, reviews.n_negative) != (ds.positives, ds.negatives):
            again = "download it again" if got == "the downloaded" else "give the complete data set"
            raise DashboardError(
                f"{got} {ds.name} archive holds {reviews.n_positive} positive and {reviews.n_negative} "
                f"negative reviews, not {ds.positives} and {ds.negatives}; {again}"
            )

    return check


def fetch(
    name: str,
    *,
    progress: ProgressCallback | None = None,
    timeout_s: float = DOWNLOAD_TIMEOUT_S,
    url: str | None = None,
) -> Path:
    """The cached archive of a built-in data set, downloading and verifying it on first use.

    `url` overrides the source (a mirror; the tests' local server); the checksum still applies.
    """
    ds = builtin(name)
    dest = archive_path(name)
    if dest.is_file():
        return dest
    try:
        return download(url or ds.url, dest, md5=ds.md5, verify=structure_check(ds), progress=progress,
                        timeout_s=timeout_s)
    except _Offline as exc:
        raise DashboardError(how_to_get(name, str(exc))) from None


def load_dataset(name: str, *, allow_download: bool = True, progress: ProgressCallback | None = None) -> Reviews:
    """The reviews of a built-in data set; `allow_download=False` only reads the cache."""
    if not allow_download and not is_cached(name):
        raise DashboardError(how_to_get(name, "downloads are off"))
    return load_archive(fetch(name, progress=progress))


def load_source(source: str, *, allow_download: bool = True, progress: ProgressCallback | None = None) -> Reviews:
    """A built-in data set by name, or a local path: what `--data` and the page's path box accept."""
    text = source.strip()
    if not text:
        raise DashboardError(f"no data given; name a built-in data set ({', '.join(BUILTIN_DATASETS)}) or a path")
    if text in BUILTIN_DATASETS:
        return load_dataset(text, allow_download=allow_download, progress=progress)
    if not Path(text).expanduser().exists():
        raise DashboardError(
            f"{text!r} is neither a built-in data set ({', '.join(BUILTIN_DATASETS)}) nor an existing file or folder"
        )
    return load_path(text)
