"""Issue 30.2: an archive's cost is its number of entries. A 2.3 MB .tar.gz of 1,048,576 empty members took
64 s and +470 MiB through the path box; now it is refused in under 2 s and 50 MiB, real data sets still load,
and one archive is read at a time per server."""

from __future__ import annotations

import bz2
import io
import lzma
import tarfile
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable

import pytest

from core.classifier import loaders
from core.classifier.loaders import MAX_ARCHIVE_ENTRIES, load_path, parse_archive
from core.classifier.tar_scan import count_entries
from core.errors import DashboardError

MANY = 1_048_576


def _empty_members_gz(count: int) -> bytes:
    """`count` empty members as a .tar.gz, built from one repeated header in a second or two."""
    header = tarfile.TarInfo("bomb/x.txt").tobuf(format=tarfile.USTAR_FORMAT)
    packer = zlib.compressobj(1, wbits=31)
    step = 8192
    parts = [packer.compress(header * step) for _ in range(count // step)]
    parts += [packer.compress(header * (count % step) + b"\0" * 1024), packer.flush()]
    return b"".join(parts)


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return _empty_members_gz(MANY)


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def _peak_growth(read: Callable[[], object]) -> int:
    """Bytes the process's peak memory grew by while `read` ran: the kernel's peak RSS reset first (Linux),
    else tracemalloc's peak (which slows Python several times, so it is not timed)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # VmHWM := VmRSS
        before = _status_kib("VmRSS")
    except OSError:
        tracemalloc.start()
        try:
            read()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    read()
    return (_status_kib("VmHWM") - before) * 1024


def _refused(read: Callable[[], object]) -> Callable[[], None]:
    def call() -> None:
        with pytest.raises(DashboardError, match=f"more than {MAX_ARCHIVE_ENTRIES:,} files and folders"):
            read()
    return call


def test_a_million_empty_entries_are_refused_in_two_seconds_and_50_mib(bomb, tmp_path):
    assert len(bomb) < 8 * 2**20
    path = tmp_path / "many.tar.gz"
    path.write_bytes(bomb)
    for read in (_refused(lambda: parse_archive(bomb, "many.tar.gz")), _refused(lambda: load_path(path))):
        started = time.perf_counter()
        grew = _peak_growth(read)
        assert time.perf_counter() - started <= 2.0
        assert grew <= 50 * 2**20, f"{grew / 2**20:.0f} MiB"


def _pax_hiding_entries(count: int) -> bytes:
    """A pax header saying size=0 before a member whose own header claims 8 GiB: tarfile believes the pax
    record and reads the `count` members after it; a scan believing the header would skip them all."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for i in range(count):
            tar.addfile(tarfile.TarInfo(f"m{i}"))
    members = out.getvalue()
    record = b" size=0\n"
    record = str(len(record) + 3).encode() + record
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.type, pax.size = tarfile.XHDTYPE, len(record)
    big = tarfile.TarInfo("hider")
    big.size = 8 * 2**30
    return (pax.tobuf(format=tarfile.USTAR_FORMAT) + record.ljust(512, b"\0")
            + big.tobuf(format=tarfile.GNU_FORMAT) + members)


def _variety() -> dict[str, bytes]:
    archives: dict[str, bytes] = {}
    for fmt in (tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=fmt) as tar:
            for i in range(40):
                long_name = f"aclImdb/train/{'pos' if i % 2 else 'neg'}/{'é' * (i % 3)}{'x' * 3 * i}{i}_7.txt"
                info = tarfile.TarInfo(long_name if fmt != tarfile.USTAR_FORMAT else f"aclImdb/train/pos/{i}_7.txt")
                data = b"a fine film " * i
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            for kind in (tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.FIFOTYPE):
                info = tarfile.TarInfo(f"other{kind!r}")
                info.type, info.linkname = kind, "aclImdb"
                tar.addfile(info)
        archives[f"format {fmt}"] = out.getvalue()
    plain = archives["format 2"]
    odd = io.BytesIO()
    with tarfile.open(fileobj=odd, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in ("BZh-looks-like-bz2", "\x1f\x8b-looks-like-gzip", "x"):
            tar.addfile(tarfile.TarInfo(name))
    archives["plain tar named like a compressed one"] = odd.getvalue()
    archives |= {"gzip": zlib.compress(plain, wbits=31), "bz2": bz2.compress(plain), "xz": lzma.compress(plain),
                 "pax size": _pax_hiding_entries(30)}
    return archives


@pytest.mark.parametrize("name, data", list(_variety().items()))
def test_the_scan_counts_what_tarfile_reads(name, data):
    with tarfile.open(fileobj=io.BytesIO(data), mode="r|*") as tar:
        expected = sum(1 for _ in tar)
    assert count_entries(io.BytesIO(data), name, 10_000) == expected
    with pytest.raises(DashboardError, match=f"more than {expected - 1:,} files"):
        count_entries(io.BytesIO(data), name, expected - 1)


def test_a_long_run_of_extended_headers_is_refused():
    pax = tarfile.TarInfo("././@PaxHeader")
    pax.type = tarfile.XHDTYPE
    data = pax.tobuf(format=tarfile.USTAR_FORMAT) * 10_000 + b"\0" * 1024
    with pytest.raises(DashboardError, match="extended tar headers in a row"):
        parse_archive(data, "deep.tar")


def _imdb_sized(count: int) -> bytes:
    """aclImdb's shape at its size: `count` short reviews under train/test pos/neg, plus an unlabelled part."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=1) as tar:
        for i in range(count):
            split, label = ("train", "test")[i % 2], ("pos", "neg", "unsup")[i % 3]
            data = f"review {i}: {'a good film' if label == 'pos' else 'a dull film'}".encode()
            info = tarfile.TarInfo(f"aclImdb/{split}/{label}/{i}_7.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.mark.slow
def test_an_archive_the_size_of_aclimdb_still_loads(tmp_path):
    path = tmp_path / "aclImdb_v1.tar.gz"
    path.write_bytes(_imdb_sized(102_000))
    reviews = load_path(path)
    assert reviews.n == 68_000 and reviews.is_test is not None


def test_the_real_rt_polarity_archive_still_loads(rt_polarity_dir, tmp_path):
    path = tmp_path / "rt-polaritydata.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(rt_polarity_dir, arcname="rt-polaritydata")
    assert load_path(path).n == 10_662


def test_one_archive_is_read_at_a_time(monkeypatch):
    data = _imdb_sized(30)
    active, most = [0], [0]
    real = loaders.count_entries

    def slow_count(*args):
        active[0] += 1
        most[0] = max(most[0], active[0])
        time.sleep(0.3)
        active[0] -= 1
        return real(*args)

    monkeypatch.setattr(loaders, "count_entries", slow_count)
    threads = [threading.Thread(target=parse_archive, args=(data, f"{i}.tar.gz")) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1


def test_a_read_past_its_time_or_a_held_lock_is_one_line(monkeypatch):
    data = _imdb_sized(30)
    monkeypatch.setattr(loaders, "MAX_ARCHIVE_S", 0.0)
    with pytest.raises(DashboardError, match=r"takes more than 0 s to read"):
        parse_archive(data, "slow.tar.gz")
    monkeypatch.setattr(loaders, "MAX_ARCHIVE_S", 0.2)
    with loaders._ARCHIVE_LOCK, pytest.raises(DashboardError, match="another archive is being read on this server"):
        parse_archive(data, "second.tar.gz")
