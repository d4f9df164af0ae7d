"""The result schema: each kind of result as a typed dataclass that owns its JSON form.

    read_result("matmul", obj)       # MatmulSweep (any version this dashboard reads), or DashboardError
    sweep.to_json()                  # {"kind": "matmul", "schema_version": 3, "results": [...], ...}
    jsonio.dumps(anything)           # the one JSON writer: NaN -> null, numpy -> numbers, dataclasses -> objects
    files.read_import(data)          # RunRecords from an uploaded file, checked field by field

`matmul` and `train` are the kinds ("matmul", "train": the same names in the JSON, the store,
the CLI and the pages); `kinds` lists them, says how to add one and how old files are upgraded;
`runs` is a saved run with its machine and time; `files` reads imports and writes exports;
`fields` and `machine` are the typed readers they share.
"""

from core.results.jsonio import dumps, to_jsonable
from core.results.kinds import KIND_TITLES, KINDS, Result, detect_kind, read_result
from core.results.crossover import Crossover
from core.results.matmul import MatmulPoint, MatmulSweep, SkippedSize
from core.results.runs import RunRecord
from core.results.train import Prediction, TrainEpoch, TrainRun

__all__ = [
    "KINDS", "KIND_TITLES", "Crossover", "MatmulPoint", "MatmulSweep", "Prediction", "Result", "RunRecord", "SkippedSize",
    "TrainEpoch", "TrainRun", "detect_kind", "dumps", "read_result", "to_jsonable",
]
