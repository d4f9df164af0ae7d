"""Result files: reading what a user imports, and writing exports that read back.

An import is a bare CLI JSON object (`matmul --json`, `train --json`), one run record, or an
export (`{"format": "gpu-vs-cpu results", "format_version": 2, "runs": [...]}`; version 1
exports, whose payloads are version 1 results, read too).

Import policy: all or nothing. A file with one bad run imports none of its runs and the message
names the bad run's field ("runs[3].machine.gpus: ..."); a class's export is then fixed (or
exported again) and imported whole, instead of half of it landing on the shared board unnoticed.
Runs whose uid is already stored, or repeated within the file, are skipped (by the store), not errors.
"""

from __future__ import annotations

import codecs
from datetime import datetime, timezone
from typing import Any

from core.errors import DashboardError
from core.results import fields as f
from core.results import jsonio
from core.results.kinds import detect_keys, detect_kind, read_result
from core.results.machine import read_machine, unknown_machine
from core.results.runs import MAX_LABEL_CHARS, RunRecord, content_uid
from core.platform.units import byte_size

MAX_IMPORT_BYTES = 20 * 2**20  # 20 MiB a file; a whole class's export of hundreds of runs is a few MB
MAX_RUN_CHARS = 8 * 2**20  # 8 MiB of JSON a run; a sweep's raw samples are tens of kB
MAX_IMPORT_RUNS = 10_000  # runs in one imported file
EXPORT_FORMAT = "gpu-vs-cpu results"  # the "format" key of an export file
EXPORT_VERSION = 2  # 2: payloads carry "kind" and "schema_version" 2; 1 (read too): version 1 payloads
WHAT_TO_IMPORT = (
    "choose a JSON file written by `python -m core matmul --json`, `python -m core train --json` "
    "or the Results page's export"
)


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_label(label: str, path: str = "label") -> str:
    """A user's name for runs: at most MAX_LABEL_CHARS characters, no NUL."""
    f.text(label, path, max_chars=MAX_LABEL_CHARS, empty=True)
    jsonio.check_tree(label, path)
    return label.strip()


def export_text(records: list[RunRecord], exported_at: str | None = None) -> str:
    """An export file of `records`, through the one JSON writer; `read_import` reads it back."""
    bundle = {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "exported_at": exported_at or utc_now(),
              "runs": [r.to_json() for r in records]}
    return jsonio.dumps(bundle) + "\n"


def read_import(data: bytes, *, label: str = "", file: str = "", session: str = "command line") -> list[RunRecord]:
    """Every run of an uploaded file, each checked field by field and for plausibility
    (core.results.plausible); any bad one refuses the file. Each run comes back marked imported
    from `file` by `session` now, whatever the file said it was."""
    from core.results.plausible import check_imported

    label = check_label(label)
    obj = decode_json_bytes(data)
    bare = isinstance(obj, dict) and "format" not in obj and "payload" not in obj
    jsonio.check_tree(obj, (detect_kind(obj) or "") if bare else "")
    if not isinstance(obj, dict):
        raise DashboardError(f"the file holds a JSON {type(obj).__name__}, not an object; {WHAT_TO_IMPORT}")
    if "format" in obj:
        records = _read_export(obj)
    elif "payload" in obj:
        records = [_read_record(obj, "run")]
    else:
        records = [_read_bare(obj)]
    paths = [f"runs[{i}]" for i in range(len(records))] if "format" in obj else ["run"]
    for record, path in zip(records, paths):
        check_imported(record, path)
    now = utc_now()
    return [r.relabelled(label).imported(file, now, session) for r in records]


def _read_bare(obj: dict[str, Any]) -> RunRecord:
    kind = detect_kind(obj)
    if kind is None:
        keys = ", ".join(repr(k)[:40] for k in list(obj)[:5]) or "none"
        raise DashboardError(f"this JSON is not a result file: it has none of the keys {detect_keys()} "
                             f"or 'runs' (an export); its keys: {keys}. {WHAT_TO_IMPORT}")
    jsonio.check_size(obj, kind, MAX_RUN_CHARS)
    result = read_result(kind, obj, kind)
    machine = (read_machine(obj["machine"], f"{kind}.machine") if isinstance(obj.get("machine"), dict)
               else unknown_machine())
    return RunRecord(uid=content_uid(obj), kind=kind, created_at=utc_now(), label="", machine=machine, settings={},
                     versions={}, result=result)


def _read_export(obj: dict[str, Any]) -> list[RunRecord]:
    if obj.get("format") != EXPORT_FORMAT:
        raise DashboardError(f"unknown file format {f.shown(obj.get('format'))}; {WHAT_TO_IMPORT}")
    version = obj.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise f.fail("format_version", "a whole number >= 1", version)
    if version > EXPORT_VERSION:
        raise DashboardError(f"this export has format version {version}, newer than this dashboard reads "
                             f"({EXPORT_VERSION}); update the dashboard")
    runs = obj.get("runs")
    if not isinstance(runs, list):
        raise DashboardError("runs: expected a list of saved runs")
    if len(runs) > MAX_IMPORT_RUNS:
        raise DashboardError(f"the file holds {len(runs)} runs, over the limit of {MAX_IMPORT_RUNS} per import")
    return [_read_record(run, f"runs[{i}]") for i, run in enumerate(runs)]


def _read_record(run: Any, path: str) -> RunRecord:
    jsonio.check_size(run, path, MAX_RUN_CHARS)
    return RunRecord.from_json(run, path)


def decode_json_bytes(data: bytes) -> Any:
    """Parse an uploaded file, with a message a user can act on for each way it can be wrong.

    UTF-8 (with or without a byte-order mark) and UTF-16 with a byte-order mark (what Windows
    PowerShell's `>` writes) are accepted; anything else is refused before the JSON parser runs.
    """
    if len(data) > MAX_IMPORT_BYTES:  # a reader that stopped one byte past the limit knows only that much
        raise too_big(None if len(data) == MAX_IMPORT_BYTES + 1 else len(data))
    if not data.strip():
        raise DashboardError(f"the file is empty; {WHAT_TO_IMPORT}")
    text = _decode_text(data)  # its message says what to choose already
    try:
        return jsonio.loads(text)
    except DashboardError as exc:
        raise DashboardError(f"{exc}; {WHAT_TO_IMPORT}") from None


def too_big(size: int | None) -> DashboardError:
    """The message for a file over MAX_IMPORT_BYTES: its real size when known (a CLI reader stops one byte past
    the limit, and once said "the file is 20.0 MiB" of a 158 MiB file), else that it is over."""
    shown = f"{byte_size(size, 'MiB')}, over" if size is not None else "over"
    return DashboardError(f"the file is {shown} the {byte_size(MAX_IMPORT_BYTES)} limit for imports; export "
                          "fewer runs at a time (`python -m core results export` with --kind, --machine, --device "
                          "or run ids)")


def _decode_text(data: bytes) -> str:
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                          (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                break
    else:
        if b"\x00" not in data:
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                pass
    raise DashboardError(
        f"the file is not text (binary, or an encoding other than UTF-8 or UTF-16 with a byte-order mark); "
        f"{WHAT_TO_IMPORT}"
    )
