"""What a saved run's payload must look like, and reading result files a user uploads.

A payload is exactly the JSON object a CLI run prints: `python -m core matmul --json` (kind
'matmul') or `python -m core train --json` (kind 'train'). Checking it on save and on import keeps
garbage out of a board the whole class shares; extra keys are kept, so newer CLIs can add fields.
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from core.errors import DashboardError

KINDS = ("matmul", "train")
MAX_IMPORT_BYTES = 20 * 2**20  # 20 MiB; a whole class's export of hundreds of runs is a few MB
MAX_IMPORT_RUNS = 10_000  # runs in one imported file
EXPORT_FORMAT = "gpu-vs-cpu results"  # the "format" key of a file written by export_json
EXPORT_VERSION = 1

WHAT_TO_IMPORT = (
    "choose a JSON file written by `python -m core matmul --json`, `python -m core train --json` "
    "or the Results page's export"
)

Check = Callable[[Any, str], None]


def _fail(path: str, expected: str, value: Any) -> None:
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    raise DashboardError(f"{path}: expected {expected}, got {shown}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _text(value: Any, path: str) -> None:
    if not isinstance(value, str) or not value.strip():
        _fail(path, "a non-empty string", value)


def _count(minimum: int) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            _fail(path, f"a whole number >= {minimum}", value)

    return check


def _number(minimum: float = 0.0, maximum: float = math.inf, nullable: bool = True) -> Check:
    def check(value: Any, path: str) -> None:
        if value is None and nullable:
            return
        if not _is_number(value) or not minimum <= value <= maximum:
            bound = f"between {minimum:g} and {maximum:g}" if maximum < math.inf else f">= {minimum:g}"
            _fail(path, f"a number {bound}{' or null' if nullable else ''}", value)

    return check


def _object(value: Any, path: str, fields: Mapping[str, Check], optional: Mapping[str, Check] | None = None) -> None:
    if not isinstance(value, dict):
        _fail(path, "a JSON object", value)
    missing = [name for name in fields if name not in value]
    if missing:
        raise DashboardError(f"{path}: missing {', '.join(repr(m) for m in missing)}")
    for name, check in fields.items():
        check(value[name], f"{path}.{name}")
    for name, check in (optional or {}).items():
        if value.get(name) is not None:
            check(value[name], f"{path}.{name}")


def _list_of(check: Check, minimum: int = 0) -> Check:
    def check_list(value: Any, path: str) -> None:
        if not isinstance(value, list) or len(value) < minimum:
            _fail(path, f"a list of at least {minimum} item(s)", value)
        for i, item in enumerate(value):
            check(item, f"{path}[{i}]")

    return check_list


def _dict_or_null(value: Any, path: str) -> None:
    if value is not None and not isinstance(value, dict):
        _fail(path, "a JSON object or null", value)


PROBABILITY = _number(0.0, 1.0)
MATMUL_RESULT: dict[str, Check] = {
    "device": _text,
    "n": _count(1),
    "dtype": _text,
    "median_s": _number(),
    "iqr_s": _number(),
    "samples": _count(0),
    "gflops": _number(),
    "unsynced_s": _number(),
    "rel_error": _number(),
}
TRAIN_EPOCH: dict[str, Check] = {
    "epoch": _count(0),
    "train_loss": _number(),
    "test_loss": _number(),
    "test_accuracy": PROBABILITY,
    "seconds": _number(),
}
PREDICTION: dict[str, Check] = {"text": lambda v, p: None if isinstance(v, str) else _fail(p, "a string", v),
                                "p_positive": PROBABILITY}


def _check_matmul(payload: Any, path: str) -> None:
    _object(payload, path, {"results": _list_of(lambda v, p: _object(v, p, MATMUL_RESULT), minimum=1)},
            optional={"crossover_n": _number(1.0), "machine": _dict_or_null})


def _check_train(payload: Any, path: str) -> None:
    _object(
        payload,
        path,
        {
            "device": _text,
            "n_train": _count(1),
            "n_test": _count(0),
            "vocab_size": _count(1),
            "epochs": _list_of(lambda v, p: _object(v, p, TRAIN_EPOCH), minimum=1),
            "test_accuracy": PROBABILITY,
            "train_seconds": _number(),
        },
        optional={"baseline_accuracy": PROBABILITY,
                  "predictions": _list_of(lambda v, p: _object(v, p, PREDICTION))},
    )


CHECKS: dict[str, Callable[[Any, str], None]] = {"matmul": _check_matmul, "train": _check_train}


def validate_payload(kind: str, payload: Any, path: str = "payload") -> dict[str, Any]:
    """The payload if it has the CLI JSON shape of `kind`; else DashboardError naming the bad field."""
    if kind not in CHECKS:
        raise DashboardError(f"unknown kind of run {kind!r}; use one of {', '.join(KINDS)}")
    CHECKS[kind](payload, path)
    return payload


def detect_kind(obj: Any) -> str | None:
    """'matmul' or 'train' for a CLI JSON object, by its distinguishing key; None otherwise."""
    if isinstance(obj, dict):
        if "results" in obj:
            return "matmul"
        if "epochs" in obj:
            return "train"
    return None


def payload_devices(kind: str, payload: Mapping[str, Any]) -> list[str]:
    """The devices a run used, in first-seen order."""
    if kind == "matmul":
        return list(dict.fromkeys(str(r["device"]) for r in payload["results"]))
    return [str(payload["device"])]


def decode_json_bytes(data: bytes) -> Any:
    """Parse an uploaded file, with a message a user can act on for each way it can be wrong.

    UTF-8 (with or without a byte-order mark) and UTF-16 with a byte-order mark (what Windows
    PowerShell's `>` writes) are accepted; anything else is refused before the JSON parser runs.
    """
    if len(data) > MAX_IMPORT_BYTES:
        raise DashboardError(
            f"the file is {len(data) / 2**20:.1f} MiB, over the {MAX_IMPORT_BYTES // 2**20} MiB limit for imports; "
            "export fewer runs at a time"
        )
    if not data.strip():
        raise DashboardError(f"the file is empty; {WHAT_TO_IMPORT}")
    text = _decode_text(data)
    try:
        return json.loads(text, parse_constant=lambda name: None)  # NaN/Infinity: "not measured"
    except json.JSONDecodeError as exc:
        raise DashboardError(
            f"the file is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); {WHAT_TO_IMPORT}"
        ) from None
    except RecursionError:
        raise DashboardError(f"the file's JSON is nested too deeply to be a result file; {WHAT_TO_IMPORT}") from None


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
