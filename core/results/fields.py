"""The field types every result is declared with, and the one reader that turns a refusal into a message.

A result kind is a frozen pydantic dataclass whose fields use these types (`Count`, `Number`,
`Device`, `Text`, ...). pydantic (v2, its Rust core) walks the parsed JSON, fills the nested
dataclasses and calls the checks below; `read` turns the first refusal into the one-line
DashboardError a student can act on, named by its path ("runs[3].payload.results[0].n: expected a
whole number >= 1, got 0"), so no bad value can surface later as a TypeError or OverflowError.
The size and depth guards run before (core.results.jsonio.check_tree and check_size).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BeforeValidator, PlainValidator, TypeAdapter, ValidationError, ValidationInfo

from core.errors import DashboardError

T = TypeVar("T")
DEVICE_GRAMMAR = re.compile(r"(cpu|mps|cuda(:[0-9]{1,3})?)\Z", re.ASCII)  # \Z: no trailing newline; ASCII digits only
EARLIEST_YEAR, LATEST_YEAR = 2000, 2100  # a run's date: no torch run predates 2000, none is from the future
MAX_TEXT_CHARS = 200  # labels, uids, device and dtype names, versions
MAX_NAME_CHARS = 40  # dtype names, statuses, reasons
MAX_MESSAGE_CHARS = 2000  # notes and messages a run carries
MAX_REVIEW_CHARS = 100_000  # one "try your own review" text
FROM_FILE = "from_file"  # validation context: reading a saved or imported result, not building one
PATH = "path"  # validation context: where the value being read sits in its file
INLINE = "stored"  # a nested record whose keys sit in its parent's JSON object (a point's stored statistics)
MAX_INT = 2**53  # a count larger than this is not a measurement (and JSON numbers lose precision there)


class Expected(ValueError):
    """A field's value is refused; the message says what was expected (read() adds the path and the value)."""


class Nested(ValueError):
    """A part checked by its own declaration inside a field kept as plain JSON (a run's `machine`)."""

    def __init__(self, error: ValidationError) -> None:
        super().__init__(str(error))
        self.error = error


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def fail(path: str, expected: str, value: Any) -> DashboardError:
    return DashboardError(f"{path}: expected {expected}, got {shown(value)}")


# ---------------------------------------------------------------- scalar checks


def _text(max_chars: int, empty: bool) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if not isinstance(value, str) or (not empty and not value.strip()) or len(value) > max_chars:
            raise Expected(f"{'a string' if empty else 'a non-empty string'} of at most {max_chars} characters")
        return value
    return check


def _optional(check: Callable[[Any], T]) -> Callable[[Any], T | None]:
    return lambda value: None if value is None else check(value)


def count_between(minimum: int, maximum: int = MAX_INT) -> Callable[[Any], int]:
    """A whole number in range (never a bool, never 5.0)."""
    expected = (f"a whole number >= {minimum}" if maximum == MAX_INT
                else f"a whole number between {minimum} and {maximum}")

    def check(value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= maximum:
            raise Expected(expected)
        return value
    return check


def number_between(minimum: float = 0.0, maximum: float = math.inf) -> Callable[[Any], float | None]:
    """A finite number in range, or None (null; NaN and Infinity are parsed as null: not measured)."""
    bound = f"between {minimum:g} and {maximum:g}" if maximum < math.inf else f">= {minimum:g}"

    def check(value: Any) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Expected(f"a number {bound} or null")
        try:
            result = float(value)
        except OverflowError:  # an integer with hundreds of digits
            raise Expected(f"a number {bound} or null") from None
        if not (math.isfinite(result) and minimum <= result <= maximum):
            raise Expected(f"a number {bound} or null")
        return result
    return check


def _not_measured_in_memory(check: Callable[[Any], float | None]) -> Callable[[Any, ValidationInfo], float | None]:
    """NaN (or an infinity) handed over by core means "not measured": null, as the JSON writer writes it.

    A file cannot hold NaN (the parser reads it as null) but can hold 1e999, which is refused there.
    """
    def check_number(value: Any, info: ValidationInfo) -> float | None:
        if isinstance(value, float) and not math.isfinite(value) and not _from_file(info):
            return None
        return check(value)
    return check_number


def _from_file(info: ValidationInfo) -> bool:
    return isinstance(info.context, dict) and bool(info.context.get(FROM_FILE))


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Expected("true or false")
    return value


def _device(value: Any) -> str:
    """A device key: cpu, mps, cuda or cuda:N (N up to 3 ASCII digits)."""
    if not isinstance(value, str) or not DEVICE_GRAMMAR.match(value):
        raise Expected("a device: cpu, mps, cuda or cuda:N")
    return value


def _timestamp(value: Any) -> str:
    """An ISO 8601 time from EARLIEST_YEAR up to (not including) LATEST_YEAR, as the store's UTC form."""
    expected = Expected(f"an ISO 8601 time between {EARLIEST_YEAR} and {LATEST_YEAR - 1}, such as 2025-01-31T14:05:00Z")
    if not isinstance(value, str) or len(value) > 40:
        raise expected
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=timezone.utc)
        if not EARLIEST_YEAR <= stamp.year < LATEST_YEAR:
            raise ValueError("out of range")
        utc = stamp.astimezone(timezone.utc)  # year 1 with a +01:00 offset overflows here
    except (ValueError, OverflowError):
        raise expected from None
    if not EARLIEST_YEAR <= utc.year < LATEST_YEAR:
        raise expected
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")


def _object(value: Any) -> dict[str, Any]:
    """A free-form object (settings, versions) or null as {}; check_tree already bounded it."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Expected("a JSON object")
    return value


def _none_as_empty(value: Any) -> Any:
    return [] if value is None else value


def _one_at_least_in_a_file(value: tuple[Any, ...], info: ValidationInfo) -> tuple[Any, ...]:
    if _from_file(info) and not value:
        raise Expected("a list of at least 1 item(s)")
    return value


def one_of(names: tuple[str, ...]) -> Callable[[Any], str | None]:
    """A name from a fixed list, or null."""
    def check(value: Any) -> str | None:
        if value is None:
            return None
        if value not in names:
            raise Expected(f"one of {', '.join(names)}")
        return str(value)
    return check


# ---------------------------------------------------------------- the types results are declared with

Text = Annotated[str, PlainValidator(_text(MAX_TEXT_CHARS, empty=False))]  # a label, a series name
AnyText = Annotated[str, PlainValidator(_text(MAX_TEXT_CHARS, empty=True))]
Name = Annotated[str, PlainValidator(_text(MAX_NAME_CHARS, empty=False))]  # a dtype, a status, a reason
Message = Annotated[str, PlainValidator(_text(MAX_MESSAGE_CHARS, empty=False))]
Note = Annotated[str, PlainValidator(_text(MAX_MESSAGE_CHARS, empty=True))]
Review = Annotated[str, PlainValidator(_text(MAX_REVIEW_CHARS, empty=True))]
OptionalText = Annotated[str | None, PlainValidator(_optional(_text(MAX_TEXT_CHARS, empty=True)))]
Count = Annotated[int, PlainValidator(count_between(0))]  # samples, test rows: 0 allowed
Size = Annotated[int, PlainValidator(count_between(1))]  # n, a thread count, an epoch
OptionalSize = Annotated[int | None, PlainValidator(_optional(count_between(1)))]
Number = Annotated[float | None, PlainValidator(_not_measured_in_memory(number_between()))]  # seconds, GFLOP/s: >= 0
Probability = Annotated[float | None, PlainValidator(_not_measured_in_memory(number_between(0.0, 1.0)))]
Flag = Annotated[bool, PlainValidator(_flag)]
OptionalFlag = Annotated[bool | None, PlainValidator(_optional(_flag))]
Device = Annotated[str, PlainValidator(_device)]
Timestamp = Annotated[str, PlainValidator(_timestamp)]
OptionalTimestamp = Annotated[str | None, PlainValidator(_optional(_timestamp))]
Settings = Annotated[dict[str, Any], PlainValidator(_object)]  # free-form; null reads as {}
Items = Annotated[tuple[T, ...], BeforeValidator(_none_as_empty)]  # a list; null reads as empty
Measured = Annotated[tuple[T, ...], AfterValidator(_one_at_least_in_a_file)]  # empty while running; not in a file


@dataclass(frozen=True)
class Shown:
    """How a field reads in a table a person reads: its label and unit, declared once in the field's annotation
    (`median_s: Annotated[Number, Shown("median", "ms", 1e3)]`), so the race page, the CLI and every CSV take
    them from the declaration (core.results.table). `scale` turns the stored value (seconds) into `unit`;
    `read`: the attribute shown instead of the field (a point's `label` for its `series`)."""

    label: str
    unit: str = ""
    scale: float = 1.0
    read: str | None = None

    @property
    def header(self) -> str:
        """'median ms', 'GFLOP/s', 'samples': the column's name in a human table."""
        return f"{self.label} {self.unit}" if self.unit and self.label else self.label or self.unit


def omitted_when_none(value: Any) -> bool:
    """For Field(exclude_if=...): an optional key a later version added is written only when set,
    so a run without it has the same JSON as before the key existed."""
    return value is None


# ---------------------------------------------------------------- reading


def adapter(cls: type[Any]) -> TypeAdapter[Any]:
    """pydantic's reader and writer for a declared type (~25 µs: it reuses the class's built schema)."""
    return TypeAdapter(cls)


def read(cls: type[T], value: Any, path: str) -> T:
    """`value` (parsed JSON) as a `cls`, or a DashboardError naming the first bad field."""
    try:
        result: T = adapter(cls).validate_python(value, context={FROM_FILE: True, PATH: path})
    except ValidationError as exc:
        raise _message(exc, path, getattr(cls, "json_names", {})) from None
    return result


def check(cls: type[Any], value: Any) -> None:
    """Check `value` against `cls` inside another type's validator; read() reports where it failed."""
    try:
        adapter(cls).validate_python(value)
    except ValidationError as exc:
        raise Nested(exc) from None


def write(obj: Any) -> dict[str, Any]:
    """The JSON object of a declared result (NaN and infinities written as null)."""
    data: dict[str, Any] = adapter(type(obj)).dump_python(obj, mode="json")
    return data


def _message(exc: ValidationError, path: str, json_names: dict[str, str] | None = None) -> DashboardError:
    errors = exc.errors(include_url=False)
    # a missing key first, as a reader lists them
    error = next((e for e in errors if e["type"] == "missing"), errors[0])
    loc = [p for p in error["loc"] if p != INLINE]  # a record read from its parent's own keys
    if loc and isinstance(loc[0], str):
        loc[0] = (json_names or {}).get(loc[0], loc[0])  # the key as the file spells it
    where = path + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind == "missing":
        parent, _, key = where.rpartition(".")
        return DashboardError(f"{parent}: missing {key!r}")
    if kind == "value_error" and isinstance(ctx.get("error"), Nested):
        return _message(ctx["error"].error, where)
    if kind == "value_error" and isinstance(ctx.get("error"), Expected):
        return fail(where, str(ctx["error"]), value)
    if kind in ("dataclass_type", "dataclass_args_type", "dict_type", "model_type"):
        return fail(where, "a JSON object", value)
    if kind in ("tuple_type", "list_type", "too_short"):
        return fail(where, f"a list of at least {ctx.get('min_length', 0)} item(s)", value)
    return DashboardError(f"{where}: {error['msg']}, got {shown(value)}")


# ---------------------------------------------------------------- checks outside a declaration


def obj(value: Any, path: str) -> dict[str, Any]:
    """A parsed JSON value that must be an object (before its kind is known)."""
    if not isinstance(value, dict):
        raise fail(path, "a JSON object", value)
    return value


def text(value: Any, path: str, *, max_chars: int = MAX_TEXT_CHARS, empty: bool = False) -> str:
    """A string a user typed (a label), checked before any run is read."""
    try:
        return _text(max_chars, empty)(value)
    except Expected as exc:
        raise fail(path, str(exc), value) from None
