"""The Results page's wording and widget settings: labels, keys, button states, the sentences it shows.

core.store.board says what the board holds and does (runs, filters, imports, deletes, export files);
this module only says how the page presents it, so the page stays a list of widgets. Pure functions:
no streamlit import, so they are tested without a page.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from core.plain_text import for_markdown
from core.store import key_guard
from core.store.board import PAGE_EXPORT_BYTES, PAGE_RUNS, Export
from core.platform.units import byte_size
from core.store.records import UnreadableRun

UPLOAD_LABEL = "A file from `python -m core matmul --json`, `python -m core train --json`, or an export from this page"
IMPORT_WAITS = "Choose a JSON file first; Import waits until it has finished uploading."
EMPTY_TEXT = (
    "**No saved runs yet.** Finished runs on the **Matmul race** and **Review classifier** pages are saved here; "
    "so are `python -m core matmul --json --save` and `python -m core train --json --save` on any machine "
    "that shares this store. A JSON file from another machine can be imported above."
)
EXPORT_WHAT = {"json": "JSON, re-importable", "csv": "CSV, one row per point"}
EXPORT_HELP = (f"built in the server up to {byte_size(PAGE_EXPORT_BYTES)}; a larger export is written on the server by "
               "`python -m core results export --output FILE`")


def import_button(upload: object | None) -> dict[str, object]:
    """The Import button's state: off until the server has the file (the uploader lists it before it has sent it)."""
    return {"disabled": upload is None, "help": IMPORT_WAITS if upload is None else None}


def confirm_text(title: str) -> str:
    """The question the page asks before a delete, naming the run (`core.store.board.run_title`)."""
    return f"Delete run {for_markdown(title)}? It is removed for everyone who shares this store, and cannot be undone."


def unreadable_text(run: UnreadableRun) -> str:
    return (f"Stored run {for_markdown(run.title)}. It cannot be drawn; "
            "delete it, or update the dashboard if it is newer.")


def compare_key(run_ids: Sequence[int]) -> str:
    """A widget key that changes with the runs offered, so a new set of runs gets a fresh default."""
    return "results_compare_" + hashlib.sha1(",".join(map(str, run_ids)).encode()).hexdigest()[:10]


@dataclass(frozen=True)
class DownloadButton:
    """One download button: its label and key around an export file."""

    label: str
    key: str
    export: Export
    help: str = EXPORT_HELP


def download_buttons(files: Sequence[Export], runs: int) -> list[DownloadButton]:
    """A button per export file of the `runs` runs shown, its label saying what the file holds."""
    these = f"the {runs} runs shown" if runs > 1 else "the run shown"
    return [DownloadButton(f"Download {these} ({EXPORT_WHAT[f.fmt]})", f"results_export_{f.fmt}", f) for f in files]


# With no instructor key set, every student and the projector see this line: neutral, no server path, no alarm.
# (The server's operator finds how to set a key in docs/security.md and the README.)
OPEN_BOARD_NOTE = ("Runs saved here are shared by everyone using this dashboard, and anyone may delete one "
                   "(an instructor key limits that: docs/security.md).")
SHORT_KEY_WARNING = "The instructor key is shorter than 8 characters; choose a longer one."
KEY_LABEL = "Instructor key"
KEY_HELP = "Entered once per browser session; with it, this session may delete any run."
OWN_RUNS_ONLY = ("You can delete the runs this browser session saved or imported. The instructor's key allows "
                 "deleting any run.")
NOTHING_TO_DELETE = "None of the runs shown was saved or imported by this browser session."
SOURCE_TITLES = {"measured": "measured here", "imported": "imported", "notebook": "notebook (Colab)",
                 "reported by a browser": "reported by a browser"}


def key_notice(outcome: bool | None) -> tuple[str, str]:
    """(level, text) after a key was entered: never repeats what was typed."""
    if outcome is True:
        return "success", "Instructor mode: this browser session may now delete any run."
    if outcome is False:
        return "error", "That is not the instructor key."
    return "error", key_guard.LOCKED


MORE_LABEL = f"Show {PAGE_RUNS} older runs"


def more_text(shown: int, total: int) -> str:
    return f"Showing the newest {shown:,} of {total:,} saved runs; filters and exports apply to those shown."
