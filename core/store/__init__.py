"""Saved results: every finished sweep and training run, with the machine it ran on.

    store = open_store()            # DATABASE_URL, else SQLite in core.platform.paths.data_dir()
    run_id = store.save(sweep, label="lab GPU")       # a typed result (a MatmulSweep, a TrainRun, ...)
    store.list_runs(kind="train", device="cuda:0")     # store.read_runs() also names unreadable rows
    matmul_frame(store.list_runs(kind="matmul"))       # tidy table for overlays

What a run must look like, and how files are read and written, is core.results (the schema);
`database` keeps runs in SQLite or PostgreSQL, `records` describes a saved run, `frames` turns
runs into tidy tables, `board` is what the Results page does with them.
"""

from core.store.database import (
    DATABASE_URL_ENV,
    SCHEMA_VERSION,
    ImportResult,
    Store,
    open_store,
)
from core.store import board
from core.store.frames import listing_frame, matmul_frame, tidy_frame, train_frame
from core.results.files import MAX_IMPORT_BYTES
from core.results.kinds import KINDS
from core.store.records import RunListing, StoredRun, UnreadableRun, device_title, machine_label, pick_runs

__all__ = [
    "DATABASE_URL_ENV", "KINDS", "board", "MAX_IMPORT_BYTES", "SCHEMA_VERSION", "ImportResult", "RunListing", "Store",
    "StoredRun", "UnreadableRun", "device_title", "listing_frame", "machine_label", "matmul_frame", "open_store",
    "pick_runs", "tidy_frame", "train_frame",
]
