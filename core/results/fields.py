"""Typed readers for the fields of an imported result: each returns the value or names the field.

Every reader takes the parsed JSON value and its path ("runs[3].payload.results[0].n") and
raises DashboardError with a one-line reason, so a schema's `from_json` reads like its field
list and no bad value can surface later as a TypeError or OverflowError.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, TypeVar

from core.errors import DashboardError

T = TypeVar("T")
DEVICE_GRAMMAR = re.compile(r"(cpu|mps|cuda(:[0-9]{1,3})?)\Z", re.ASCII)  # \Z: no trailing newline; ASCII digits only
EARLIEST_YEAR, LATEST_YEAR = 2000, 2100  # a run's date: no torch run predates 2000, none is from the future
MAX_TEXT_CHARS = 200  # labels, uids, device and dtype names, versions
MAX_INT = 2**53  # a count larger than this is not a measurement (and JSON numbers lose precision there)


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def fail(path: str, expected: str, value: Any) -> DashboardError:
    return DashboardError(f"{path}: expected {expected}, got {shown(value)}")


def obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(path, "a JSON object", value)
    return value


def field(value: dict[str, Any], key: str, path: str) -> Any:
    """A required key's value; its absence is named."""
    if key not in value:
        raise DashboardError(f"{path}: missing {key!r}")
    return value[key]


def text(value: Any, path: str, *, max_chars: int = MAX_TEXT_CHARS, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()) or len(value) > max_chars:
        what = "a string" if empty else "a non-empty string"
        raise fail(path, f"{what} of at most {max_chars} characters", value)
    return value


def optional_text(value: Any, path: str, *, max_chars: int = MAX_TEXT_CHARS) -> str | None:
    return None if value is None else text(value, path, max_chars=max_chars, empty=True)


def count(value: Any, path: str, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= MAX_INT:
        raise fail(path, f"a whole number >= {minimum}", value)
    return value


def optional_count(value: Any, path: str, minimum: int = 0) -> int | None:
    return None if value is None else count(value, path, minimum)


def number(value: Any, path: str, minimum: float = 0.0, maximum: float = math.inf) -> float | None:
    """A finite number in range, or None (null, NaN: not measured)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise fail(path, _range(minimum, maximum), value)
    try:
        result = float(value)
    except OverflowError:  # an integer with hundreds of digits
        raise fail(path, _range(minimum, maximum), value) from None
    if not (math.isfinite(result) and minimum <= result <= maximum):
        raise fail(path, _range(minimum, maximum), value)
    return result


def _range(minimum: float, maximum: float) -> str:
    bound = f"between {minimum:g} and {maximum:g}" if maximum < math.inf else f">= {minimum:g}"
    return f"a number {bound} or null"


def probability(value: Any, path: str) -> float | None:
    return number(value, path, 0.0, 1.0)


def flag(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise fail(path, "true or false", value)
    return value


def optional_flag(value: Any, path: str) -> bool | None:
    return None if value is None else flag(value, path)


def device(value: Any, path: str) -> str:
    """A device key: cpu, mps, cuda or cuda:N (N up to 3 ASCII digits)."""
    if not isinstance(value, str) or not DEVICE_GRAMMAR.match(value):
        raise fail(path, "a device: cpu, mps, cuda or cuda:N", value)
    return value


def timestamp(value: Any, path: str) -> str:
    """An ISO 8601 time from EARLIEST_YEAR up to (not including) LATEST_YEAR, as the store's UTC form."""
    expected = (f"an ISO 8601 time between {EARLIEST_YEAR} and {LATEST_YEAR - 1}, "
                "such as 2025-01-31T14:05:00Z")
    if not isinstance(value, str) or len(value) > 40:
        raise fail(path, expected, value)
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)
        if not EARLIEST_YEAR <= stamp.year < LATEST_YEAR:
            raise ValueError("out of range")
        utc = stamp.astimezone(timezone.utc)  # year 1 with a +01:00 offset overflows here
    except (ValueError, OverflowError):
        raise fail(path, expected, value) from None
    if not EARLIEST_YEAR <= utc.year < LATEST_YEAR:
        raise fail(path, expected, value)
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")


def list_of(value: Any, path: str, read: Callable[[Any, str], T], *, minimum: int = 0) -> tuple[T, ...]:
    if not isinstance(value, list) or len(value) < minimum:
        raise fail(path, f"a list of at least {minimum} item(s)", value)
    return tuple(read(item, f"{path}[{i}]") for i, item in enumerate(value))


def optional_object(value: Any, path: str) -> dict[str, Any]:
    """A free-form object (settings, versions) or null as {}; check_tree already bounded it."""
    return {} if value is None else obj(value, path)
