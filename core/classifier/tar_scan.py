"""Count a tar archive's entries before `tarfile` reads it: an archive of a million empty members is refused
in a fraction of a second with a few MiB, not after a minute and half a gigabyte (issue 30).

`tarfile` spends ~50 µs and keeps a TarInfo per member, so an archive's cost is its number of entries, not its
size: 2.3 MB of gzip held 1,048,576 empty members. This scan walks the decompressed stream's 512-byte headers
in chunks of at most 1 MiB, skipping each member's data as `tarfile` does (pax `size` records included), and
stops at the first entry over the cap. It only counts; `tarfile` still parses what it lets through (and the
reader counts again, so a header this scan reads differently from `tarfile` gains nothing).
"""

from __future__ import annotations

import bz2
import lzma
import re
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from core.errors import DashboardError

BLOCK = 512
IN_CHUNK = 256 * 2**10  # compressed bytes read per step
OUT_CHUNK = 2**20  # decompressed bytes per step: the scan's memory does not grow with the archive
MAX_PAX_BYTES = 2**20  # a pax header names a path and a few numbers; a bigger one is not a review archive
NO_DATA_TYPES = frozenset(b"123456")  # hard and symbolic links, devices, folders, fifos: tarfile skips no data
PAX_TYPES = frozenset(b"xgX")
LONG_NAME_TYPES = frozenset(b"LK")  # GNU's long name and long link target
MAX_EXTENSIONS_IN_A_ROW = 4  # pax global, pax, long name, long link: tarfile recurses through a longer run
_PAX_SIZE = re.compile(rb"(?:^|\n)\d+ size=(\d+)\n")


def _decompressed(raw: BinaryIO) -> Iterator[bytes]:
    """The archive's tar bytes, at most OUT_CHUNK at a time, told apart by the magic numbers `tarfile`'s r|*
    uses (so both read the same stream the same way)."""
    head = raw.read(10)
    if head.startswith(b"\x1f\x8b\x08"):
        yield from _inflate(head, raw)
    elif head[:3] == b"BZh" and head[4:10] == b"1AY&SY":
        yield from _unpack(bz2.BZ2Decompressor(), head, raw)
    elif head.startswith((b"\x5d\x00\x00\x80", b"\xfd7zXZ")):
        yield from _unpack(lzma.LZMADecompressor(), head, raw)
    else:
        data = head
        while data:
            yield data
            data = raw.read(OUT_CHUNK)


def _inflate(head: bytes, raw: BinaryIO) -> Iterator[bytes]:
    inflater = zlib.decompressobj(wbits=31)
    data = head + raw.read(IN_CHUNK)
    while data:
        yield inflater.decompress(data, OUT_CHUNK)
        data = inflater.unconsumed_tail
        if inflater.eof:
            return
        if not data:
            data = raw.read(IN_CHUNK)


def _unpack(unpacker: bz2.BZ2Decompressor | lzma.LZMADecompressor, head: bytes, raw: BinaryIO) -> Iterator[bytes]:
    data = head
    while not unpacker.eof:
        if unpacker.needs_input and not data:
            data = raw.read(IN_CHUNK)
            if not data:
                return
        yield unpacker.decompress(data, OUT_CHUNK)
        data = b""


def _number(field: bytes) -> int:
    """A header's numeric field as tarfile reads it: octal text, or GNU base-256."""
    if field[:1] in (b"\x80", b"\xff"):
        value = int.from_bytes(field[1:], "big")
        return value - 256 ** (len(field) - 1) if field[:1] == b"\xff" else value
    text = field.split(b"\0", 1)[0].strip() or b"0"
    return int(text, 8)


def _data_bytes(header: bytes, pax_size: int | None) -> int:
    """Bytes of data after this header that tarfile skips (rounded up to blocks)."""
    kind = header[156]
    name = header[:100].split(b"\0", 1)[0]
    if kind in NO_DATA_TYPES or (kind == 0 and name.endswith(b"/")):  # tarfile reads an old "name/" as a folder
        return 0
    size = pax_size if pax_size is not None and kind not in PAX_TYPES else _number(header[124:136])
    return -(-max(size, 0) // BLOCK) * BLOCK


def count_entries(raw: BinaryIO, name: str, most: int) -> int:
    """The number of entries in the tar stream `raw` (headers up to the end-of-archive block);
    a DashboardError at the first entry past `most`, or for a header no review archive has."""
    buf = bytearray()
    count = skip = in_a_row = 0
    pax_local: int | None = None
    pax_global: int | None = None
    for chunk in _decompressed(raw):
        buf += chunk
        pos = 0
        while True:
            step = min(skip, len(buf) - pos)
            pos, skip = pos + step, skip - step
            if skip or len(buf) - pos < BLOCK:
                break
            header = bytes(buf[pos:pos + BLOCK])
            if not header.strip(b"\0"):
                return count  # tarfile stops at the first zero block
            kind = header[156]
            try:
                data = _data_bytes(header, pax_local if pax_local is not None else pax_global)
            except ValueError:
                return count  # tarfile refuses this header too, and the reader says so
            if kind in PAX_TYPES and data > MAX_PAX_BYTES:
                raise DashboardError(f"{name} has an extended tar header of {data:,} bytes; use the original archive")
            if kind in PAX_TYPES and len(buf) - pos - BLOCK < data:
                break  # its records are not all here yet: read on, then look at this header again
            extension = kind in PAX_TYPES or kind in LONG_NAME_TYPES  # describes the next member: not an entry
            in_a_row = in_a_row + 1 if extension else 0
            if in_a_row > MAX_EXTENSIONS_IN_A_ROW:
                raise DashboardError(f"{name} has {in_a_row} extended tar headers in a row; use the original archive")
            count += 0 if extension else 1
            if count > most:
                raise DashboardError(f"{name} holds more than {most:,} files and folders, more than any review "
                                     "data set this dashboard knows (aclImdb has about 100,000); use a smaller archive")
            if kind == ord("S"):
                raise DashboardError(f"{name} holds a sparse file, which no review data set has; "
                                     "use the original archive")
            if kind in PAX_TYPES:
                found = _PAX_SIZE.search(bytes(buf[pos + BLOCK:pos + BLOCK + data]))
                if kind == ord("g"):
                    pax_global = int(found.group(1)) if found else pax_global
                else:
                    pax_local = int(found.group(1)) if found else None
            else:
                pax_local = None
            pos, skip = pos + BLOCK, data
        del buf[:pos]
    return count
