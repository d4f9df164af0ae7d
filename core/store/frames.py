"""Tidy tables of saved runs, for overlays, listings and CSV export.

Each kind declares its own table (its `ResultKind.frame`, core/results/result_kind.py): matmul runs give
one row per (run, series, size), a series being a device with its dtype, TF32 and threads; training runs
one row per (run, epoch); runs on every rank one row per (run, rank, phase, size). Here every row gets the
run's id, time, machine and a `series` name, so a chart draws one line per series and can put a laptop's
CPU beside a lab's GPU; `tidy_frame` (the CSV export) walks the list of kinds.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import pandas as pd

from core.results import kinds
from core.results.kinds import result_kind
from core.results.result_kind import Frame
from core.store.records import BUSY_MARK, QUIET_MARK, UNKNOWN_MARK, RunSummary, StoredRun, device_title
from core.store.records import load_mark as _result_load_mark

__all__ = ["BUSY_MARK", "QUIET_MARK", "UNKNOWN_MARK", "kind_columns", "kind_frame", "listing_frame", "load_mark",
           "tidy_frame"]

RUN_COLUMNS = ["run_id", "kind", "created_at", "label", "machine", "source"]
LISTING_COLUMNS = ["run", "saved (UTC)", "kind", "machine", "label", "devices", "result", "load", "source"]


def _run_columns(run: StoredRun) -> dict[str, object]:
    return {"run_id": run.run_id, "kind": run.kind, "created_at": run.created_at, "label": run.label,
            "machine": run.machine_label, "source": run.source}


def _series(run: StoredRun, title: str) -> str:
    name = f"#{run.run_id} {title}{' (imported)' if run.imported else ''}"
    return f"{name} · {run.label}" if run.label else name


def _frame(kind: str) -> Frame:
    frame = result_kind(kind).frame
    if frame is None:
        raise ValueError(f"results of kind {kind!r} have no tidy table")
    return frame


def kind_columns(kind: str) -> list[str]:
    """The columns of `kind`'s table: the run's, `series`, then the kind's own."""
    return [*RUN_COLUMNS, "series", *_frame(kind).columns]


def kind_frame(kind: str, runs: Sequence[StoredRun]) -> pd.DataFrame:
    """One row per what `kind` measured (a size, an epoch, ...) of its runs among `runs`, each with its run's
    columns."""
    frame, schema = _frame(kind), result_kind(kind).schema
    rows = []
    for run in runs:
        if not isinstance(run.result, schema):
            continue
        rows += [{**_run_columns(run), "series": _series(run, series), **values}
                 for series, values in frame.rows(run.result, partial(device_title, run.machine))]
    table = pd.DataFrame(rows, columns=kind_columns(kind))
    return table.sort_values(list(frame.order), kind="stable").reset_index(drop=True) if frame.order else table


def tidy_frame(runs: Sequence[StoredRun]) -> pd.DataFrame:
    """Every kind in one table (the CSV export): the columns of the kinds present, empty where they do not
    apply; runs of one kind give that kind's table alone (one sweep's is the race page's CSV, byte for byte)."""
    tabulated = [k.name for k in kinds.RESULT_KINDS if k.frame is not None]
    parts = [f for f in (kind_frame(kind, runs) for kind in tabulated) if not f.empty]
    if not parts:
        return pd.DataFrame(columns=list(dict.fromkeys(c for kind in tabulated for c in kind_columns(kind))))
    columns = list(dict.fromkeys(c for part in parts for c in part.columns))
    return pd.concat(parts, ignore_index=True).reindex(columns=columns)


def load_mark(run: StoredRun) -> str:
    """'busy: noisy' for a run timed while other programs kept the machine busy, 'quiet', or '' if not recorded."""
    return _result_load_mark(run.result)


def listing_frame(runs: Sequence[StoredRun | RunSummary]) -> pd.DataFrame:
    """One row per run, for the Results page's table (summaries: no payload read) and `results list`;
    `load` flags noisy runs."""
    rows = []
    for run in runs:
        row = run.summary if isinstance(run, StoredRun) else run
        rows.append([row.run_id, row.created_at.replace("T", " ").rstrip("Z"), row.kind, row.machine_label, row.label,
                     ", ".join(row.devices), row.headline, row.load, row.source])
    return pd.DataFrame(rows, columns=LISTING_COLUMNS)
