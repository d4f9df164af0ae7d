"""What the Results page does with the shared board, as plain functions the page only calls.

Import, delete (after the page has asked for confirmation: the board is shared by a class),
the filter choices and the export files; each user action returns a `Notice` the page shows,
so a failure is a message, never a traceback.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from core.errors import DashboardError
from core.plain_text import for_markdown
from core.store.database import Store, open_store
from core.store.records import RunListing, StoredRun, UnreadableRun

DEFAULT_COMPARE = 6  # newest runs drawn by default; more make an unreadable legend
EMPTY_TEXT = (
    "**No saved runs yet.** Finished runs on the **Matmul race** and **Review classifier** pages are saved here; "
    "so are `python -m core matmul --json --save` and `python -m core train --json --save` on any machine "
    "that shares this store. A JSON file from another machine can be imported above."
)


@dataclass(frozen=True)
class Notice:
    level: str  # "success", "warning" or "error": the st.* call that shows it
    text: str


UPLOAD_TEXT = "A file from `python -m core matmul --json`, `python -m core train --json`, or an export from this page"


@dataclass(frozen=True)
class Choices:
    """The filter options a listing offers."""

    machines: list[str]
    devices: list[str]


def read_board(url: str | None) -> tuple[Store, RunListing]:
    """The store and everything in it, unreadable rows set apart (they never fail the page)."""
    store = open_store(url)
    return store, store.read_runs()


def choices(runs: Sequence[StoredRun]) -> Choices:
    return Choices(sorted({r.machine_label for r in runs}), sorted({d for r in runs for d in r.devices}))


class Upload(Protocol):
    """What an uploaded file offers (Streamlit's UploadedFile does)."""

    name: str

    def getvalue(self) -> bytes: ...


IMPORT_WAITS = "Choose a JSON file first; Import waits until it has finished uploading."


def import_button(upload: Upload | None) -> dict[str, object]:
    """The Import button's state: off until the server has the file (the uploader lists it before it has sent it)."""
    return {"disabled": upload is None, "help": IMPORT_WAITS if upload is None else None}


def import_upload(url: str | None, upload: Upload | None, label: str = "") -> Notice:
    """Import an uploaded file, all or nothing; the notice names the file."""
    if upload is None:
        return Notice("warning", "Choose a JSON file first.")
    name = upload.name
    try:
        result = open_store(url).import_json(upload.getvalue(), label=label)
    except DashboardError as exc:
        return Notice("error", for_markdown(f"{name}: {exc}"))  # the file's name and values are the uploader's
    skipped = f"; {result.skipped} were already saved" if result.skipped else ""
    return Notice("success", f"{for_markdown(name)}: imported {len(result.run_ids)} run(s){skipped}.")


def confirm_text(run_id: int, listing: RunListing) -> str:
    """The question the page asks before a delete, naming the run."""
    titles = {r.run_id: r.title for r in listing.runs} | {r.run_id: r.title for r in listing.unreadable}
    return (f"Delete run {for_markdown(titles.get(run_id, f'#{run_id}'))}? It is removed for everyone who shares this store, "
            "and cannot be undone.")


def delete_run(url: str | None, run_id: int | None) -> Notice:
    """Delete a run the user confirmed; one that is gone already is an error notice."""
    if run_id is None:
        return Notice("warning", "Choose a run to delete first.")
    try:
        open_store(url).delete(run_id)
    except DashboardError as exc:
        return Notice("error", str(exc))
    return Notice("success", f"Deleted run #{run_id}.")


def unreadable_text(run: UnreadableRun) -> str:
    return f"Stored run {for_markdown(run.title)}. It cannot be drawn; delete it, or update the dashboard if it is newer."


def compare_key(run_ids: Sequence[int]) -> str:
    """A widget key that changes with the runs offered, so a new set of runs gets a fresh default."""
    return "results_compare_" + hashlib.sha1(",".join(map(str, run_ids)).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Download:
    """One download button's content."""

    label: str
    data: bytes
    file_name: str
    mime: str
    key: str


def downloads(store: Store, run_ids: Sequence[int]) -> tuple[list[Download], str | None]:
    """The JSON export (re-importable) and the CSV table of the given runs, or why they cannot be made now."""
    these = f"the {len(run_ids)} runs shown" if len(run_ids) > 1 else "the run shown"
    try:
        return _downloads(store, run_ids, these), None
    except DashboardError as exc:
        return [], str(exc)


def _downloads(store: Store, run_ids: Sequence[int], these: str) -> list[Download]:
    return [Download(f"Download {these} (JSON, re-importable)", store.export_json(run_ids),
                     "gpu-vs-cpu-results.json", "application/json", "results_export_json"),
            Download(f"Download {these} (CSV, one row per point)", store.export_csv(run_ids),
                     "gpu-vs-cpu-results.csv", "text/csv", "results_export_csv")]
