"""The one JSON writer and the guarded JSON reader every result goes through.

Writing: the CLI's `--json`, the store's columns, exports and the pages' downloads all call
`dumps`, so NaN/inf (a value not measured) is always `null`, numpy numbers and arrays are plain
JSON, dataclasses are objects and tuples lists, whoever writes. Reading: `loads` turns any
parser failure, deep nesting included, into a one-line DashboardError, and `check_tree` bounds
depth and size and refuses NUL characters (PostgreSQL cannot store them) before a field is read.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from core.errors import DashboardError
from core.platform.units import byte_size

MAX_DEPTH = 24  # an export nests about 8 levels deep (bundle, runs, run, payload, results, row, list)


def to_jsonable(obj: Any) -> Any:
    """Plain JSON values: NaN/inf -> None, numpy scalars/arrays -> numbers/lists, dataclasses -> dicts.

    A dataclass with a `to_json()` method is written through it, so a result's JSON form is
    the one its schema owns; anything else unknown becomes its `str`, as `default=str` did.
    """
    if obj is None or isinstance(obj, (str, bool)):
        return obj
    if isinstance(obj, numbers.Integral):
        return int(obj)  # numpy's int64 and bool_ subclasses register as Integral
    if isinstance(obj, numbers.Real):
        value = float(obj)
        return value if math.isfinite(value) else None
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy arrays and scalars, torch tensors
        return to_jsonable(obj.tolist())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        to_json = getattr(obj, "to_json", None)
        if callable(to_json):
            return to_jsonable(to_json())
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, PurePath):
        return str(obj)
    return str(obj)


def dumps(obj: Any, *, indent: int | None = None) -> str:
    """Strict JSON text (no NaN, no Infinity) that every JSON parser reads."""
    return json.dumps(to_jsonable(obj), indent=indent, allow_nan=False)


def loads(text: str, *, what: str = "the file") -> Any:
    """Parse JSON text; NaN/Infinity read as null ("not measured"), failures as one line.

    json.loads itself recurses once per nesting level and raises RecursionError somewhere near
    Python's recursion limit; that is caught here, and `check_tree` refuses the shallower but
    still absurd nestings (hundreds of levels) that the parser accepts.
    """
    try:
        return json.loads(text, parse_constant=lambda name: None)
    except json.JSONDecodeError as exc:
        raise DashboardError(f"{what} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise DashboardError(f"{what} is nested too deeply to be a result file (at most {MAX_DEPTH} levels)") from None


def check_tree(value: Any, path: str, *, max_depth: int = MAX_DEPTH) -> None:
    """Refuse a parsed JSON value nested deeper than `max_depth` or holding a NUL character.

    Iterative (an explicit stack), so no nesting can make it raise RecursionError; once it has
    passed, `json.dumps` of the value (as `check_size` does) cannot recurse too deeply either.
    """
    stack: list[tuple[Any, str, int]] = [(value, path, 1)]
    while stack:
        item, where, depth = stack.pop()
        if depth > max_depth:
            raise DashboardError(f"{where or 'the file'}: nested more than {max_depth} levels deep; "
                                 "a result file never is")
        if isinstance(item, str):
            if "\x00" in item:
                raise DashboardError(f"{where}: contains a NUL character (\\u0000), which a result never holds")
        elif isinstance(item, dict):
            for key, child in item.items():
                if "\x00" in str(key):
                    raise DashboardError(f"{where or 'the file'}: a key contains a NUL character (\\u0000)")
                stack.append((child, f"{where}.{str(key)[:40]}" if where else str(key)[:40], depth + 1))
        elif isinstance(item, (list, tuple)):
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))


def check_size(value: Any, path: str, max_chars: int) -> None:
    """Refuse a value whose JSON text is longer than `max_chars` (call `check_tree` first)."""
    size = len(json.dumps(value, allow_nan=True))
    if size > max_chars:
        raise DashboardError(f"{path}: {byte_size(size, 'MiB')} of JSON, over the {byte_size(max_chars, 'MiB')} limit "
                             "for one run; a real run is far smaller")
