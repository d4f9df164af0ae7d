"""Labelled movie reviews from wherever a user has them: a folder, an archive, a CSV/TSV, an upload.

Every source ends in the same `Reviews`. A page upload (bytes and a file name) goes through the
same parsers as a path on disk, so an upload and a local file can never disagree. Everything a user
can get wrong (an empty or binary file, UTF-16 text, missing columns, one class only, a file too
large) is a `DashboardError` that names the file and says what to do.
"""

from __future__ import annotations

import codecs
import csv
import io
import lzma
import re
import tarfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd

from core.classifier.tar_scan import count_entries
from core.errors import DashboardError
from core.platform.units import byte_size

MAX_FILE_BYTES = 200 * 2**20  # 200 MiB: the IMDB archive is 84 MB; a bigger text file is almost surely a mistake
MAX_UNPACKED_BYTES = 600 * 2**20  # 600 MiB: the IMDB archive unpacks to ~490 MB with its unlabelled part
MAX_REVIEWS = 1_000_000  # IMDB has 50,000 labelled reviews; a million short lines would take minutes and GBs
MIN_PER_CLASS = 2  # a stratified train/test split needs at least two reviews of each class
SNIFF_BYTES = 8192  # how much of a file the binary check and the separator guess look at
CONTROL_SHARE_MAX = 0.05  # more control characters than this in the first bytes: not text
MAX_HEADER_BYTES = 64 * 2**10  # a review table's header names a few columns; a longer first line is refused unread
MAX_COLUMNS = 1_000  # columns a table may have (checked on the header, before any parser builds a table)
MAX_LINE_BYTES = 2**20  # a review is a few KiB (IMDB's longest ~14 KB); a longer line is a bomb for the tokenizer
SCAN_CHUNK = 4 * 2**20  # bytes per step of the scans that never copy a whole upload
ROW_SAMPLE_BYTES = 64 * 2**10  # the first rows, checked for more fields than the header names
_PARSE_LOCK = threading.Lock()  # one table parsed at a time per server: two tabs never build two big tables at once
MAX_ARCHIVE_ENTRIES = 150_000  # files and folders: aclImdb has ~100,000 (its unlabelled part too), rt-polarity 3
MAX_ARCHIVE_S = 300.0  # one archive's read: IMDB takes well under a minute; past this it is a bomb or a stuck disk
_ARCHIVE_LOCK = threading.Lock()  # one archive read at a time per server: tabs queue, each for at most MAX_ARCHIVE_S

RT_POS, RT_NEG = "rt-polarity.pos", "rt-polarity.neg"
TEXT_COLUMNS = ("text", "review", "sentence", "content", "comment")  # accepted names, case-insensitive
LABEL_COLUMNS = ("label", "sentiment", "polarity", "target", "class")
LABEL_SPELLINGS = {
    "0": 0, "neg": 0, "negative": 0, "false": 0,
    "1": 1, "pos": 1, "positive": 1, "true": 1,
}
TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".txt")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
ACCEPTED = (
    "a folder with rt-polarity.pos and rt-polarity.neg, a folder in the aclImdb layout "
    "(train/pos, train/neg, test/pos, test/neg), the .tar.gz of either, or a CSV/TSV file with a "
    "'text' and a 'label' column (labels 0/1, neg/pos, negative/positive or false/true)"
)
_IMDB_MEMBER = re.compile(r"(?:^|/)(train|test)/(pos|neg)/[^/]+\.txt$")


@dataclass(frozen=True, eq=False)
class Reviews:
    """Review texts with labels (1 = positive, 0 = negative), as read; cleaning comes later."""

    texts: tuple[str, ...]
    labels: np.ndarray  # (n,) int8
    source: str  # where they came from, for captions and the CLI
    is_test: np.ndarray | None = None  # (n,) bool: the data set's own split (aclImdb), else None
    dropped_empty: int = 0  # rows skipped because their text was empty

    @property
    def n(self) -> int:
        return len(self.texts)

    @property
    def n_positive(self) -> int:
        return int(self.labels.sum())

    @property
    def n_negative(self) -> int:
        return self.n - self.n_positive


# ---------------------------------------------------------------- bytes -> text


def decode_text(data: bytes, what: str) -> str:
    """UTF-8 (with or without BOM), else Windows-1252, else Latin-1.

    The rt-polarity files are Windows-1252 (a superset of Latin-1's printable characters, with
    curly quotes); Latin-1 is the last resort because it decodes any byte. UTF-16 and binary
    files are refused: decoding them as Latin-1 would 'succeed' and produce garbage.
    """
    return data.decode(text_encoding(data, what))


def text_encoding(data: bytes, what: str) -> str:
    """decode_text's choice of encoding, checked a few MiB at a time: a 100 MB upload is never decoded
    into a second, larger copy just to learn that it is UTF-8."""
    head = data[:SNIFF_BYTES]
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or head.count(b"\x00") > len(head) // 4:
        raise DashboardError(f"{what} looks like UTF-16 text; save it as UTF-8 and try again")
    if b"\x00" in head or _control_share(head) > CONTROL_SHARE_MAX:
        raise DashboardError(f"{what} is not a text file (it holds binary data); expected {ACCEPTED}")
    if data.isascii():  # most tables, and every bomb so far: one pass in C, no copy
        return "utf-8-sig"
    view = memoryview(data)
    for encoding in ("utf-8-sig", "cp1252"):
        decoder = codecs.getincrementaldecoder(encoding)()
        try:
            for start in range(0, len(data), SCAN_CHUNK):
                decoder.decode(view[start:start + SCAN_CHUNK])
            decoder.decode(b"", final=True)
            return encoding
        except UnicodeDecodeError:
            continue
    return "latin-1"


def _control_share(head: bytes) -> float:
    if not head:
        return 0.0
    controls = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13))
    return controls / len(head)


# ---------------------------------------------------------------- checks shared by every source


def finish(texts: Sequence[str], labels: Sequence[int], source: str, is_test: Sequence[bool] | None = None) -> Reviews:
    """Drop empty texts, then refuse what no classifier can learn from."""
    keep = [i for i, t in enumerate(texts) if t.strip()]
    dropped = len(texts) - len(keep)
    if not keep:
        what = "has no reviews" if not texts else f"has only empty texts ({len(texts)} rows)"
        raise DashboardError(f"{source} {what}; expected {ACCEPTED}")
    y = np.asarray([labels[i] for i in keep], dtype=np.int8)
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        only = "positive" if n_neg == 0 else "negative"
        raise DashboardError(
            f"{source} has only {only} reviews ({len(y)}); a classifier needs both classes, "
            f"at least {MIN_PER_CLASS} of each"
        )
    if min(n_pos, n_neg) < MIN_PER_CLASS:
        raise DashboardError(
            f"{source} has {n_pos} positive and {n_neg} negative reviews; "
            f"at least {MIN_PER_CLASS} of each are needed to split them into train and test"
        )
    split = None if is_test is None else np.asarray([is_test[i] for i in keep], dtype=bool)
    if split is not None and (split.all() or not split.any()):
        split = None  # only one half of a train/test layout: split it ourselves
    return Reviews(tuple(texts[i] for i in keep), y, source, split, dropped)


def _check_size(size: int, what: str) -> None:
    if size == 0:
        raise DashboardError(f"{what} is empty; expected {ACCEPTED}")
    if size > MAX_FILE_BYTES:
        raise DashboardError(
            f"{what} is {byte_size(size, 'MiB')}, more than the {byte_size(MAX_FILE_BYTES)} this dashboard reads; "
            "use a smaller sample of it"
        )


# ---------------------------------------------------------------- rt-polarity: one snippet per line


def _check_count(count: int, what: str) -> None:
    if count > MAX_REVIEWS:
        raise DashboardError(f"{what} holds more than {MAX_REVIEWS:,} reviews, more than this dashboard trains on; "
                             "use a smaller sample of it")


def _lines(text: str, what: str) -> list[str]:
    _check_count(text.count("\n"), what)
    return [line.strip() for line in text.splitlines() if line.strip()]


def parse_rt_pair(pos: bytes, neg: bytes, source: str) -> Reviews:
    """Pang & Lee's layout: one positive snippet per line in .pos, one negative per line in .neg."""
    pos_lines = _lines(decode_text(pos, f"{source}: {RT_POS}"), f"{source}: {RT_POS}")
    neg_lines = _lines(decode_text(neg, f"{source}: {RT_NEG}"), f"{source}: {RT_NEG}")
    _check_count(len(pos_lines) + len(neg_lines), source)
    return finish(pos_lines + neg_lines, [1] * len(pos_lines) + [0] * len(neg_lines), source)


# ---------------------------------------------------------------- CSV / TSV


def _separator(name: str, text: str) -> str:
    lower = name.lower()
    if lower.endswith((".tsv", ".tab")):
        return "\t"
    if lower.endswith(".csv"):
        return ","
    first = text[:text.find("\n")] if "\n" in text else text
    return "\t" if "\t" in first else ","


def _find_column(columns: Sequence[str], wanted: Sequence[str]) -> str | None:
    by_name = {str(c).strip().lower(): c for c in columns}
    return next((by_name[w] for w in wanted if w in by_name), None)


def _check_header(data: bytes, name: str) -> None:
    """Refuse, from the first bytes alone, a header too long or with too many columns: the parser would
    build a table of a million columns (gigabytes, tens of seconds) before any later check could refuse it."""
    head = data[:MAX_HEADER_BYTES + 1]
    end = head.find(b"\n")
    if end < 0 and len(data) > MAX_HEADER_BYTES:
        raise DashboardError(f"the first line of {name} is longer than {MAX_HEADER_BYTES // 2**10} KiB; "
                             "a review table's header names a text and a label column")
    header = head if end < 0 else head[:end]
    sep = b"\t" if name.lower().endswith((".tsv", ".tab")) or (not name.lower().endswith(".csv") and b"\t" in header) \
        else b","
    if header.count(sep) + 1 > MAX_COLUMNS:
        raise DashboardError(f"{name} has {header.count(sep) + 1:,} columns, more than the {MAX_COLUMNS:,} this "
                             "dashboard reads; keep the text and label columns")


def _check_lines(data: bytes, name: str) -> None:
    """Refuse a line longer than MAX_LINE_BYTES anywhere in the file, scanning SCAN_CHUNK bytes at a time (a
    100 MB upload in a fraction of a second, a few MiB of memory): one endless row would otherwise be split
    into millions of fields before the parser could say it has too many."""
    view, line_start = memoryview(data), 0
    for start in range(0, len(data), SCAN_CHUNK):
        ends = np.flatnonzero(np.frombuffer(view[start:start + SCAN_CHUNK], dtype=np.uint8) == 10) + start
        bounds = np.concatenate(([line_start], ends + 1))
        longest = int(np.diff(bounds).max()) - 1 if len(ends) else 0
        if len(ends):
            line_start = int(ends[-1]) + 1
        open_line = min(len(data), start + SCAN_CHUNK) - line_start
        if max(longest, open_line) > MAX_LINE_BYTES:
            raise DashboardError(f"{name} has a line longer than {MAX_LINE_BYTES // 2**20} MiB; a review table has "
                                 "one review per line")


def _check_rows(data: bytes, name: str, sep: str) -> None:
    """Refuse first rows with more fields than the header names (pandas would make the extra ones an index
    of a thousand levels, tens of seconds and GBs); a later such row fails the parse itself (index_col=False)."""
    sample = data[:MAX_HEADER_BYTES + ROW_SAMPLE_BYTES].decode("latin-1")  # any bytes: only separators are counted
    rows = csv.reader(io.StringIO(sample), delimiter=sep)
    try:
        header = len(next(rows))
        for number, row in enumerate(rows, start=2):
            if len(row) > header:
                raise DashboardError(f"{name} is not a valid {'TSV' if sep == chr(9) else 'CSV'} file "
                                     f"(line {number} has "
                                     f"{len(row):,} fields, the header names {header}); quote texts that contain the "
                                     "separator or line breaks")
    except csv.Error:
        return  # a malformed sample: the parser names the problem


def parse_table(data: bytes, name: str) -> Reviews:
    """A CSV or TSV with a header naming a text column and a label column (see TEXT_COLUMNS, LABEL_COLUMNS)."""
    _check_size(len(data), name)
    _check_header(data, name)
    _check_lines(data, name)
    _check_rows(data, name, _separator(name, data[:MAX_HEADER_BYTES].decode("latin-1")))
    with _PARSE_LOCK:
        return _parse_table(data, name)


def _parse_table(data: bytes, name: str) -> Reviews:
    encoding = text_encoding(data, name)
    if data.isspace() or not data.removeprefix(codecs.BOM_UTF8):
        raise DashboardError(f"{name} is empty; expected {ACCEPTED}")
    sep = _separator(name, data[:MAX_HEADER_BYTES].decode("latin-1"))
    _check_count(data.count(b"\n"), name)
    try:  # from the bytes: a StringIO of the decoded text would hold four bytes per character
        frame = pd.read_csv(io.BytesIO(data), encoding=encoding, sep=sep, dtype=str, keep_default_na=False,
                            skipinitialspace=True, index_col=False)
    except (pd.errors.ParserError, csv.Error, ValueError) as exc:
        detail = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        kind = "TSV" if sep == "\t" else "CSV"
        raise DashboardError(
            f"{name} is not a valid {kind} file ({detail}); quote texts that contain the separator or line breaks"
        ) from None
    text_col = _find_column(frame.columns, TEXT_COLUMNS)
    label_col = _find_column(frame.columns, LABEL_COLUMNS)
    if text_col is None or label_col is None:
        missing = "a text column" if text_col is None else "a label column"
        names = TEXT_COLUMNS if text_col is None else LABEL_COLUMNS
        raise DashboardError(  # the header is the file's content: say how many columns, never what they hold
            f"{name} has no {missing[2:]} among its {len(frame.columns)} column(s); name it one of: {', '.join(names)}"
        )
    texts = frame[text_col].fillna("").astype(str).tolist()
    raw = frame[label_col].fillna("").astype(str).str.strip().str.lower()
    labels = raw.map(LABEL_SPELLINGS)
    bad = labels.isna()
    if bad.any():
        rows = [int(i) + 2 for i in np.flatnonzero(bad.to_numpy())[:3]]  # +2: header line, 1-based
        raise DashboardError(  # line numbers, never the values: messages do not quote a file's content
            f"{name}: the label column has labels this dashboard cannot read (line(s) "
            f"{', '.join(map(str, rows))}); use 0/1, neg/pos, negative/positive or false/true"
        )
    return finish(texts, labels.astype(int).tolist(), name)


# ---------------------------------------------------------------- archives


def _read_archive(tar: tarfile.TarFile, name: str, deadline: float) -> Reviews:
    """Stream through the members once, keeping rt-polarity's two files or aclImdb's review files.

    `tar.next()`, not iteration: a stream's TarFile keeps every member it read in `members`, ~500 bytes
    each, so the list is emptied as it goes; entries and time are counted here too (tar_scan counted first)."""
    rt: dict[str, bytes] = {}
    imdb_texts: list[str] = []
    imdb_labels: list[int] = []
    imdb_test: list[bool] = []
    unpacked = entries = 0
    try:
        while (member := tar.next()) is not None:
            tar.members.clear()  # type: ignore[attr-defined]  # a stream TarFile keeps all it read here
            entries += 1
            if entries > MAX_ARCHIVE_ENTRIES or time.monotonic() > deadline:
                raise DashboardError(f"{name} holds more than {MAX_ARCHIVE_ENTRIES:,} files and folders or takes "
                                     f"more than {MAX_ARCHIVE_S:g} s to read; use a smaller archive")
            if not member.isfile():
                continue
            unpacked += member.size  # every member counts, kept or skipped: streaming past one still inflates it
            if unpacked > MAX_UNPACKED_BYTES:
                raise DashboardError(
                    f"{name} unpacks to more than {MAX_UNPACKED_BYTES // 2**20} MiB; use a smaller archive"
                )
            base = member.name.rsplit("/", 1)[-1]
            match = _IMDB_MEMBER.search(member.name)
            if base not in (RT_POS, RT_NEG) and match is None:
                continue
            if member.size > MAX_FILE_BYTES:
                raise DashboardError(f"{name}: a member is {byte_size(member.size, 'MiB')}, more than the "
                                     f"{byte_size(MAX_FILE_BYTES)} this dashboard reads; use a smaller sample")
            if len(imdb_texts) >= MAX_REVIEWS:
                _check_count(len(imdb_texts) + 1, name)
            handle = tar.extractfile(member)
            data = handle.read() if handle is not None else b""
            if match is None:
                rt[base] = data
            else:
                imdb_texts.append(decode_text(data, f"{name}: {member.name}"))
                imdb_labels.append(1 if match.group(2) == "pos" else 0)
                imdb_test.append(match.group(1) == "test")
    except (tarfile.TarError, EOFError, OSError, RecursionError) as exc:
        raise DashboardError(f"{name} is not a readable .tar.gz archive ({exc}); download it again") from None
    if RT_POS in rt and RT_NEG in rt:
        return parse_rt_pair(rt[RT_POS], rt[RT_NEG], name)
    if imdb_texts:
        return finish(imdb_texts, imdb_labels, name, imdb_test)
    raise DashboardError(f"{name} holds no reviews this dashboard knows; expected {ACCEPTED}")


@contextmanager
def _one_archive_at_a_time(name: str) -> Iterator[float]:
    """Hold the server's archive lock; yields the read's deadline. A tab that waits longer than one read
    may take is told so (the holder is stuck), never queued for ever."""
    if not _ARCHIVE_LOCK.acquire(timeout=MAX_ARCHIVE_S):
        raise DashboardError(f"{name}: another archive is being read on this server; try again in a few minutes")
    try:
        yield time.monotonic() + MAX_ARCHIVE_S
    finally:
        _ARCHIVE_LOCK.release()


def _read_archive_from(open_raw: Callable[[], BinaryIO], name: str) -> Reviews:
    """Count the entries (tar_scan: a million are refused in well under a second), then read the reviews."""
    with _one_archive_at_a_time(name) as deadline:
        try:
            with open_raw() as raw:
                count_entries(raw, name, MAX_ARCHIVE_ENTRIES)
            with open_raw() as raw, tarfile.open(fileobj=raw, mode="r|*") as tar:
                return _read_archive(tar, name, deadline)
        except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
            raise DashboardError(f"{name} is not a readable .tar.gz archive ({exc})") from None


def parse_archive(data: bytes, name: str) -> Reviews:
    _check_size(len(data), name)
    return _read_archive_from(lambda: io.BytesIO(data), name)


def load_archive(path: Path, shown: str | None = None) -> Reviews:
    """Stream an archive from disk: the 84 MB IMDB file is never held in memory at once. `shown`: the
    name messages give it (a cache's internal .part file is named by what it was copied from)."""
    name = shown or str(path)
    _check_size(path.stat().st_size, name)
    return _read_archive_from(lambda: path.open("rb"), name)


# ---------------------------------------------------------------- folders


def find_rt_folder(folder: Path) -> Path | None:
    for candidate in (folder, *sorted(p for p in folder.iterdir() if p.is_dir())):
        if (candidate / RT_POS).is_file() and (candidate / RT_NEG).is_file():
            return candidate
    return None


def find_imdb_root(folder: Path) -> Path | None:
    for candidate in (folder, folder / "aclImdb"):
        if (candidate / "train" / "pos").is_dir() and (candidate / "train" / "neg").is_dir():
            return candidate
    return None


def load_folder(folder: Path) -> Reviews:
    """rt-polarity's two files (here or one level down), or aclImdb's train/test pos/neg folders."""
    rt = find_rt_folder(folder)
    if rt is not None:
        return parse_rt_pair(_read_file(rt / RT_POS), _read_file(rt / RT_NEG), str(rt))
    root = find_imdb_root(folder)
    if root is None:
        raise DashboardError(f"folder {folder} holds no reviews this dashboard knows; expected {ACCEPTED}")
    texts: list[str] = []
    labels: list[int] = []
    is_test: list[bool] = []
    for split in ("train", "test"):
        for label_name, label in (("pos", 1), ("neg", 0)):
            for file in sorted((root / split / label_name).glob("*.txt")):
                texts.append(decode_text(_read_file(file), str(file)))
                labels.append(label)
                is_test.append(split == "test")
    return finish(texts, labels, str(root), is_test)


# ---------------------------------------------------------------- entry points


def _read_file(path: Path) -> bytes:
    try:
        _check_size(path.stat().st_size, str(path))
        return path.read_bytes()
    except PermissionError:
        raise DashboardError(f"{path} cannot be read (permission denied)") from None
    except IsADirectoryError:
        raise DashboardError(f"{path} is a folder, not a file") from None


def _kind(name: str) -> str:
    lower = name.lower()
    if lower.endswith(ARCHIVE_SUFFIXES):
        return "archive"
    if lower.endswith(TABLE_SUFFIXES):
        return "table"
    raise DashboardError(f"{name}: unknown file type; expected {ACCEPTED}")


def load_path(path: str | Path) -> Reviews:
    """Reviews from a local folder, archive or table."""
    p = Path(path).expanduser()
    if not p.exists():
        raise DashboardError(f"{p} does not exist; expected {ACCEPTED}")
    if p.is_dir():
        try:
            return load_folder(p)
        except PermissionError:
            raise DashboardError(f"{p} cannot be read (permission denied)") from None
    if _kind(p.name) == "archive":
        try:
            return load_archive(p)
        except PermissionError:
            raise DashboardError(f"{p} cannot be read (permission denied)") from None
    return parse_table(_read_file(p), str(p))


def load_upload(data: bytes, filename: str) -> Reviews:
    """An uploaded file, by the same parsers as a file on disk."""
    _check_size(len(data), filename)
    if _kind(filename) == "archive":
        return parse_archive(data, filename)
    return parse_table(data, filename)


def load_uploads(files: Sequence[tuple[str, bytes]]) -> Reviews:
    """One upload, or the pair rt-polarity.pos + rt-polarity.neg uploaded together."""
    if not files:
        raise DashboardError(f"no file uploaded; expected {ACCEPTED}")
    if len(files) == 1:
        name, data = files[0]
        return load_upload(data, name)
    by_suffix = {name.lower().rsplit(".", 1)[-1]: (name, data) for name, data in files}
    if len(files) == 2 and set(by_suffix) == {"pos", "neg"}:
        for name, data in files:
            _check_size(len(data), name)
        names = " + ".join(name for name, _ in files)
        return parse_rt_pair(by_suffix["pos"][1], by_suffix["neg"][1], names)
    raise DashboardError(
        f"{len(files)} files uploaded; upload one file, or exactly a .pos and a .neg file "
        "(rt-polarity's positive and negative lines)"
    )
