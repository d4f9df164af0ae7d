"""Tidy tables of saved runs, for overlays, listings and CSV export.

Matmul runs give one row per (run, series, size), a series being a device with its dtype, TF32 and
threads; training runs one row per (run, epoch); runs on every rank one row per (run, rank, phase, size).
Each row carries the run's id, time, machine and a `series` name, so a chart draws one line per
series and can put a laptop's CPU beside a lab's GPU.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from core.results import MatmulPoint, MatmulSweep, TrainEpoch, TrainRun
from core.results.cluster import ClusterRun
from core.results import table
from core.results.train import preset_title
from core.results.schema import field_names
from core.store.records import BUSY_MARK, QUIET_MARK, UNKNOWN_MARK, RunSummary, StoredRun, device_title
from core.store.records import load_mark as _result_load_mark

__all__ = ["BUSY_MARK", "QUIET_MARK", "UNKNOWN_MARK", "listing_frame", "load_mark", "matmul_frame", "rank_frame",
           "tidy_frame", "train_frame"]

RUN_COLUMNS = ["run_id", "kind", "created_at", "label", "machine", "source"]
# Every scalar column of the saved row (core.results.table: not its raw samples, its clock's fields in its
# place) but its own series name (the frame's `series` names the run too); a field added to MatmulPoint
# appears here by itself. The race page's CSV and the Results export are both this table.
MATMUL_FIELDS = [c.key for c in table.columns(MatmulPoint) if c.key != "series"]
# Every column of a saved epoch but a partial report's batch counts; `elapsed_s` is the frame's own
# (training seconds summed, for a race by wall time), not the report's (evaluation included).
EPOCH_FIELDS = [c for c in field_names(TrainEpoch) if c not in ("batches_done", "n_batches", "elapsed_s")]
MATMUL_COLUMNS = [*RUN_COLUMNS, "series", "device_title", *MATMUL_FIELDS]
TRAIN_COLUMNS = [*RUN_COLUMNS, "series", "device", "device_title", *EPOCH_FIELDS, "elapsed_s"]
# A rank's point: `median_s` as a sweep's (the median seconds per call), `phase` together or alone.
RANK_COLUMNS = [*RUN_COLUMNS, "series", "device_title", "device", "rank", "hostname", "phase", "n", "median_s", "gflops",
                "others_cores", "busy"]
LISTING_COLUMNS = ["run", "saved (UTC)", "kind", "machine", "label", "devices", "result", "load", "source"]


def _run_columns(run: StoredRun) -> dict[str, object]:
    return {"run_id": run.run_id, "kind": run.kind, "created_at": run.created_at, "label": run.label,
            "machine": run.machine_label, "source": run.source}


def _series(run: StoredRun, title: str, extra: str = "") -> str:
    name = f"#{run.run_id} {title}{' ' + extra if extra else ''}{' (imported)' if run.imported else ''}"
    return f"{name} · {run.label}" if run.label else name


def _variant(point: MatmulPoint) -> str:
    """What sets a sweep's series apart on one device: dtype, plus TF32 and CPU threads when recorded.

    A sweep comparing 1 and 2 CPU threads (or TF32 off and on) has two rows per size on one
    device; without these in the name they would be drawn as one zigzag line.
    """
    parts = [point.dtype]
    if point.tf32 is not None:
        parts.append(f"TF32 {'on' if point.tf32 else 'off'}")
    if point.threads is not None:
        parts.append(f"{point.threads} thread{'s' if point.threads != 1 else ''}")
    return " ".join(parts)


def matmul_frame(runs: Sequence[StoredRun]) -> pd.DataFrame:
    """One row per measured (run, series, n), sorted by size within each series."""
    rows = []
    for run in runs:
        if not isinstance(run.result, MatmulSweep):
            continue
        for point in run.result.results:
            title = device_title(run.machine, point.device)
            row = {**_run_columns(run), "series": _series(run, title, _variant(point)), "device_title": title}
            row.update({name: value for name, value in table.flat_row(point).items() if name != "series"})
            rows.append(row)
    frame = pd.DataFrame(rows, columns=MATMUL_COLUMNS)
    return frame.sort_values(["run_id", "series", "n"], kind="stable").reset_index(drop=True)


def train_frame(runs: Sequence[StoredRun]) -> pd.DataFrame:
    """One row per (run, epoch); `elapsed_s` sums the epochs' seconds, for a race by wall time."""
    rows = []
    for run in runs:
        if not isinstance(run.result, TrainRun):
            continue
        device = run.result.device
        title = device_title(run.machine, device)
        elapsed = 0.0
        for epoch in sorted(run.result.epochs, key=lambda e: e.epoch):
            elapsed += epoch.seconds or 0.0
            row = {**_run_columns(run), "series": _series(run, title, preset_title(run.result.preset)), "device": device,
                   "device_title": title}
            row.update({name: getattr(epoch, name) for name in EPOCH_FIELDS})
            row["elapsed_s"] = elapsed
            rows.append(row)
    return pd.DataFrame(rows, columns=TRAIN_COLUMNS)


def rank_frame(runs: Sequence[StoredRun]) -> pd.DataFrame:
    """One row per (run, rank, phase, n) of the runs on every rank: each rank's line together and alone."""
    rows = []
    for run in runs:
        if not isinstance(run.result, ClusterRun):
            continue
        for record in run.result.ranks:
            title = f"{record.device} ({record.device_name})"
            for phase, points in (("together", record.together), ("alone", record.alone)):
                series = _series(run, f"rank {record.rank} {record.hostname} {title}", phase)
                rows += [{**_run_columns(run), "series": series, "device_title": title, "device": record.device,
                          "rank": record.rank, "hostname": record.hostname, "phase": phase, "n": point.n,
                          "median_s": point.seconds, "gflops": point.gflops, "others_cores": point.others_cores,
                          "busy": point.busy} for point in sorted(points, key=lambda p: p.n)]
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


def tidy_frame(runs: Sequence[StoredRun]) -> pd.DataFrame:
    """Every kind in one table (the CSV export): the columns of the kinds present, empty where they do not
    apply; runs of one kind give that kind's table alone (one sweep's is the race page's CSV, byte for byte)."""
    parts = [f for f in (matmul_frame(runs), train_frame(runs), rank_frame(runs)) if not f.empty]
    if not parts:
        return pd.DataFrame(columns=list(dict.fromkeys([*MATMUL_COLUMNS, *TRAIN_COLUMNS, *RANK_COLUMNS])))
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
