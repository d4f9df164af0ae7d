"""Every kind of result, by the one name the JSON, the store, the CLI and the pages all use.

To add a kind (the Why parallel sections, later scaling runs): write its module
beside matmul.py, train.py and roofline.py (a frozen dataclass with `kind`, `devices`, `headline`,
`to_json()` and `from_json(obj, path)`, plus KIND and VERSION), and add it to SCHEMAS.

Upgrades (documented here, done in `read_result`): a payload without `schema_version` is
version 1. Version 1 matmul objects said `"kind": "matmul_race"` or had no kind; they are read
as kind "matmul", version 2. Version 1 training objects had no kind; they are read as "train".
A version newer than this dashboard knows is refused with "update the dashboard".
"""

from __future__ import annotations

from typing import Any, Union

from core.errors import DashboardError
from core.results import fields as f
from core.results import cluster, matmul, roofline, train
from core.results.cluster import ClusterRun
from core.results.matmul import MatmulSweep
from core.results.roofline import RooflineRun
from core.results.train import TrainRun

Result = Union[MatmulSweep, TrainRun, RooflineRun, ClusterRun]
SCHEMAS: dict[str, type[MatmulSweep] | type[TrainRun] | type[RooflineRun] | type[ClusterRun]] = {
    matmul.KIND: MatmulSweep, train.KIND: TrainRun, roofline.KIND: RooflineRun, cluster.KIND: ClusterRun}
VERSIONS = {matmul.KIND: matmul.VERSION, train.KIND: train.VERSION, roofline.KIND: roofline.VERSION,
            cluster.KIND: cluster.VERSION}
KINDS = tuple(SCHEMAS)  # ("matmul", "train", "roofline", "cluster")
OLD_NAMES = {name: matmul.KIND for name in matmul.OLD_KIND_NAMES}
KIND_TITLES = {"matmul": "matmul sweep", "train": "training run", "roofline": "roofline",
               "cluster": "every device at once"}


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
    if "results" in value:
        return matmul.KIND
    if "epochs" in value:
        return train.KIND
    if "points" in value and "devices" in value:
        return roofline.KIND
    if "ranks" in value:
        return cluster.KIND
    return None


def read_result(kind: str, value: Any, path: str = "payload") -> Result:
    """The typed result of `kind` from its JSON object (any version this dashboard reads), or a
    DashboardError naming the first bad field."""
    if kind not in SCHEMAS:
        raise DashboardError(f"unknown kind of run {kind!r}; use one of {', '.join(KINDS)}")
    obj = f.obj(value, path)
    if "kind" in obj and kind_name(obj["kind"], f"{path}.kind") != kind:
        raise DashboardError(f"{path}.kind: this is a {obj['kind']!r} result, saved as {kind!r}")
    version = obj.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise f.fail(f"{path}.schema_version", "a whole number >= 1", version)
    if version > VERSIONS[kind]:
        raise DashboardError(f"{path}: a {kind} result of schema version {version}, newer than this dashboard "
                             f"reads ({VERSIONS[kind]}); update the dashboard")
    return SCHEMAS[kind].from_json(obj, path)
