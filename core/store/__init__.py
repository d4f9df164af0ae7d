"""Saved results: every finished sweep and training run, with the machine it ran on.

    store = open_store()            # DATABASE_URL, else SQLite in core.platform.paths.data_dir()
    run_id = store.save("matmul", payload, settings)   # payload = the CLI JSON object
    store.list_runs(kind="train", device="cuda:0")
    matmul_frame(store.list_runs(kind="matmul"))       # tidy table for overlays

`payloads` checks the two CLI JSON shapes and reads uploaded files, `database` keeps runs in
SQLite or PostgreSQL, `records` describes a saved run, `frames` turns runs into tidy tables.
"""

from core.store.database import (
    DATABASE_URL_ENV,
    SCHEMA_VERSION,
    ImportResult,
    Store,
    open_store,
)
from core.store.frames import listing_frame, matmul_frame, tidy_frame, train_frame
from core.store.payloads import KINDS, MAX_IMPORT_BYTES, validate_payload
from core.store.records import StoredRun, device_title, machine_label, pick_runs

__all__ = [
    "DATABASE_URL_ENV", "KINDS", "MAX_IMPORT_BYTES", "SCHEMA_VERSION", "ImportResult", "Store", "StoredRun",
    "device_title", "listing_frame", "machine_label", "matmul_frame", "open_store", "pick_runs", "tidy_frame", "train_frame",
    "validate_payload",
]
