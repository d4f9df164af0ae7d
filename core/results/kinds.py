"""Every kind of result, by the one name the JSON, the store, the CLI and the pages all use: the one list.

A kind is one module beside matmul.py, train.py, roofline.py and cluster.py: a frozen pydantic dataclass
subclassing `schema.Kind` (with `kind`, `schema_version`, `devices` and `headline`) and, at the module's end,
its `RESULT_KIND` record (core/results/result_kind.py: title, detection keys, tidy table, ...). Add that
record to `RESULT_KINDS` below (and its type to `Result`); the import, the store's tables and CSV, the
Results page's filter and the Class board walk the list. How the Results page draws it is its view in
core/charts/results.py.

Upgrades (documented here, done in `read_result`): a payload without `schema_version` is
version 1. Version 1 matmul objects said `"kind": "matmul_race"` or had no kind; they are read
as kind "matmul", version 2. Version 1 training objects had no kind; they are read as "train".
A version newer than this dashboard knows is refused with "update the dashboard".
"""

from __future__ import annotations

from typing import Any, Union

from core.errors import DashboardError
from core.results import fields as f
from core.results import browser, cluster, matmul, roofline, train
from core.results.browser import BrowserRun
from core.results.cluster import ClusterRun
from core.results.matmul import MatmulSweep
from core.results.result_kind import ResultKind
from core.results.roofline import RooflineRun
from core.results.train import TrainRun

Result = Union[MatmulSweep, TrainRun, RooflineRun, ClusterRun, BrowserRun]
RESULT_KINDS: tuple[ResultKind, ...] = (  # in the order listings, filters and tables show them
    matmul.RESULT_KIND,
    train.RESULT_KIND,
    roofline.RESULT_KIND,
    cluster.RESULT_KIND,
    browser.RESULT_KIND,
)


def derived(result_kinds: tuple[ResultKind, ...]) -> dict[str, Any]:
    """The lookups this module derives from a list of kinds (a test registers a made-up kind through it)."""
    return {"BY_NAME": {k.name: k for k in result_kinds}, "SCHEMAS": {k.name: k.schema for k in result_kinds},
            "KINDS": tuple(k.name for k in result_kinds), "KIND_TITLES": {k.name: k.title for k in result_kinds},
            "OLD_NAMES": {old: k.name for k in result_kinds for old in k.old_names}}


# Callers read these as `kinds.KINDS` when they need them (not copied at import), so the list stays the one source
BY_NAME: dict[str, ResultKind] = derived(RESULT_KINDS)["BY_NAME"]
SCHEMAS: dict[str, type[Any]] = derived(RESULT_KINDS)["SCHEMAS"]
KINDS: tuple[str, ...] = derived(RESULT_KINDS)["KINDS"]  # ("matmul", "train", "roofline", "cluster", "browser")
KIND_TITLES: dict[str, str] = derived(RESULT_KINDS)["KIND_TITLES"]
OLD_NAMES: dict[str, str] = derived(RESULT_KINDS)["OLD_NAMES"]


def result_kind(name: str) -> ResultKind:
    """The record of the kind called `name` (its current name), or a DashboardError listing the kinds."""
    if name not in BY_NAME:
        raise DashboardError(f"unknown kind of run {name!r}; use one of {', '.join(KINDS)}")
    return BY_NAME[name]


def kind_name(value: Any, path: str) -> str:
    """A kind as written in a file ("matmul_race" included), as its one current name."""
    name = OLD_NAMES.get(value, value) if isinstance(value, str) else value
    if name not in SCHEMAS:
        raise f.fail(path, f"one of {', '.join(KINDS)}", value)
    return str(name)


def detect_kind(value: Any) -> str | None:
    """The kind of a bare CLI JSON object: its `kind`, else its distinguishing key; None if neither."""
    if not isinstance(value, dict):
        return None
    if "kind" in value:
        return kind_name(value["kind"], "kind")
    return next((k.name for k in RESULT_KINDS if k.marks(value)), None)


def detect_keys() -> str:
    """The keys `detect_kind` looks for, in words: "'results' (matmul), 'epochs' (train), ..."."""
    return ", ".join(" and ".join(f"'{key}'" for key in k.detect) + f" ({k.name})" for k in RESULT_KINDS)


def read_result(kind: str, value: Any, path: str = "payload") -> Result:
    """The typed result of `kind` from its JSON object (any version this dashboard reads), or a
    DashboardError naming the first bad field."""
    spec = result_kind(kind)
    obj = f.obj(value, path)
    if "kind" in obj and kind_name(obj["kind"], f"{path}.kind") != kind:
        raise DashboardError(f"{path}.kind: this is a {obj['kind']!r} result, saved as {kind!r}")
    version = obj.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise f.fail(f"{path}.schema_version", "a whole number >= 1", version)
    if version > spec.version:
        raise DashboardError(f"{path}: a {kind} result of schema version {version}, newer than this dashboard "
                             f"reads ({spec.version}); update the dashboard")
    result: Result = spec.schema.from_json(obj, path)
    return result
