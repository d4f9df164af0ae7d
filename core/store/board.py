"""What the Results page does with the shared board, as plain functions the page only calls.

Import, delete (after the page has asked for confirmation: the board is shared by a class),
the filter choices and the export files; each user action returns a `Notice` the page shows,
so a failure is a message, never a traceback. Data and actions only: the page's wording and
widget settings (labels, keys, button states) live in pages/shared/board_widgets.py.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from core.errors import DashboardError
from core.plain_text import for_markdown, message_markdown
from core.platform.quiet_work import run_quietly
from core.results.csvio import csv_text
from core.results import files
from core.results.files import utc_now
from core.results.machine import unknown_machine
from core.results.matmul import MatmulSweep
from core.results.runs import MEASURED, SOURCES, Provenance, RunRecord
from core.store.access import Access
from core.store.database import ImportResult, Store, open_store
from core.store.export import ExportTooBig, write_export
from core.platform.units import byte_size
from core.store.frames import tidy_frame
from core.store.records import RunFilter, RunListing, RunSummary, StoredRun, SummaryListing, UnreadableRun

DEFAULT_COMPARE = 6  # newest runs drawn by default; more make an unreadable legend
PAGE_RUNS = 500  # runs the Results page reads at first, and adds per "show more": a board of 10,000 stays fast
ExportFormat = Literal["json", "csv"]  # re-importable, or one row per point
# From these sizes on, an export or import runs as quiet work (core.platform.quiet_work): a child process at idle
# priority that yields to timed jobs. Below them the work takes well under a second and a process would cost more.
QUIET_EXPORT_RUNS = 200
# An import's check and insert cost the server its runs and its bytes (bench/quiet_load.py on the 2-core VM: 1,000
# one-point runs in 0.42 MB, 0.32 s of CPU; 100 full sweeps in 1.9 MB, 0.29 s): a file estimated at more than
# QUIET_IMPORT_CPU_S is imported as quiet work.
IMPORT_CPU_S_PER_RUN = 0.25e-3
IMPORT_CPU_S_PER_MB = 0.13
QUIET_IMPORT_CPU_S = 0.2


def import_cost_s(data: bytes) -> float:
    """The server's CPU seconds an import of `data` would take, estimated without parsing it: its runs counted
    by their "uid" keys (one pass in C; a key elsewhere only makes the estimate larger), and its size."""
    return data.count(b'"uid"') * IMPORT_CPU_S_PER_RUN + len(data) / 1e6 * IMPORT_CPU_S_PER_MB


@dataclass(frozen=True)
class Notice:
    level: str  # "success", "warning" or "error": how the action went
    text: str


@dataclass(frozen=True)
class Choices:
    """The filter options a listing offers."""

    machines: list[str]
    devices: list[str]
    sources: list[str]  # measured, imported, notebook: those the runs have


@dataclass(frozen=True)
class Board:
    """What the page lists: the store, the newest `limit` summaries the filter matches, and how many it matches."""

    store: Store
    listing: SummaryListing
    total: int

    @property
    def more(self) -> int:
        """Runs matching but not read (older than those shown)."""
        return max(0, self.total - len(self.listing.runs) - len(self.listing.unreadable))


def read_board(url: str | None, limit: int | None = None, runs: RunFilter = RunFilter()) -> Board:
    """The store and the newest `limit` runs `runs` matches (all when None), as summaries: no payload is read
    for the listing (`compared` reads those charted). Unreadable rows are set apart, never failing the page."""
    store = open_store(url)
    return Board(store, store.read_summaries(runs, limit=limit), store.count_runs(runs))


def board_version(url: str | None) -> tuple[str, int, int]:
    """Which board (where it is kept) and what changes whenever it does (rows, highest id): a page
    caches `read_board` by it. One cheap query."""
    store = open_store(url)
    return (store.describe(), *store.version())


def choices(url: str | None) -> tuple[Choices, int]:
    """The filter options the whole board offers, and how many runs it holds: a few small queries."""
    store = open_store(url)
    machines, devices, present = store.filter_choices()
    return Choices(machines, devices, [s for s in SOURCES if s in present]), store.count_runs()


def compared(url: str | None, run_ids: Sequence[int]) -> RunListing:
    """The runs chosen for the charts, read in full (their payloads checked), in the order chosen."""
    listing = open_store(url).read_runs(run_ids=list(run_ids))
    order = {run_id: i for i, run_id in enumerate(run_ids)}
    return RunListing(sorted(listing.runs, key=lambda r: order.get(r.run_id, 0)), listing.unreadable)


def deletable(runs: Sequence[RunSummary | StoredRun | UnreadableRun], access: Access) -> list[int]:
    """The ids among `runs` that `access` may delete (the store checks again when deleting)."""
    return [r.run_id for r in runs if access.may_delete(r.owner)]


class Upload(Protocol):
    """What an uploaded file offers (Streamlit's UploadedFile does)."""

    name: str

    def getvalue(self) -> bytes: ...


def import_upload(url: str | None, upload: Upload | None, label: str = "", *, access: Access | None = None,
                  session: str = "a browser session") -> Notice:
    """Import an uploaded file, all or nothing; the notice names the file. The runs are marked imported
    from the file by `session`, and `access`'s session may delete them."""
    if upload is None:
        return Notice("warning", "Choose a JSON file first.")
    name, data = upload.name, upload.getvalue()
    args = (url, data, label, name, session, access.owner_token if access else None)
    try:  # a large file is parsed and checked in a process of its own, at a quiet moment (core.platform.quiet_work)
        result = (run_quietly(import_data, *args, what=f"the import of {name}", pause=False)
                  if import_cost_s(data) > QUIET_IMPORT_CPU_S else import_data(*args))
    except DashboardError as exc:
        # the file's name and values are the uploader's: escaped; the message's own `code` still shows as code
        return Notice("error", message_markdown(f"{name}: {exc}"))
    skipped = f"; {result.skipped} were already saved" if result.skipped else ""
    return Notice("success", f"{for_markdown(name)}: imported {len(result.run_ids)} run(s){skipped}.")


def run_title(url: str | None, run_id: int) -> str:
    """The title of a stored run, readable or not ('#7' for one no longer stored): what a delete names."""
    try:
        listing = open_store(url).read_summaries(run_ids=[run_id])
    except DashboardError:
        return f"#{run_id}"
    titles = [r.title for r in listing.runs] + [r.title for r in listing.unreadable]
    return titles[0] if titles else f"#{run_id}"


def delete_run(url: str | None, run_id: int | None, access: Access) -> Notice:
    """Delete a run the user confirmed, if `access` may; one that is gone already is an error notice."""
    if run_id is None:
        return Notice("warning", "Choose a run to delete first.")
    try:
        open_store(url).delete(run_id, access)
    except DashboardError as exc:
        return Notice("error", str(exc))
    return Notice("success", f"Deleted run #{run_id}.")


@dataclass(frozen=True)
class Export:
    """One export file of the runs shown, built only when called (Download pressed), never on every rerun."""

    fmt: ExportFormat
    data: Callable[[], bytes]
    file_name: str
    mime: str


PAGE_EXPORT_BYTES = files.MAX_IMPORT_BYTES  # the most a download is built to in the server: re-importable too


def exports(url: str | None, run_ids: Sequence[int]) -> list[Export]:
    """The JSON export (re-importable) and the CSV table of the runs shown, oldest first; each read from
    the store only when its Download is pressed, a batch of runs at a time (core.store.export), and built only
    up to PAGE_EXPORT_BYTES: the file is held in the server's memory, which a class shares. A larger export,
    or a store that fails then, gives a file that says so and what to do (the page has finished by then, so
    it cannot show a message): the CLI writes any size to a file as it reads."""
    ids = tuple(run_ids)

    def build(fmt: ExportFormat) -> Callable[[], bytes]:
        def data() -> bytes:
            try:  # a large one in a process of its own, stopped while a timed job runs (core.platform.quiet_work)
                if len(ids) >= QUIET_EXPORT_RUNS:
                    return run_quietly(export_data, url, ids, fmt, what=f"the {fmt.upper()} export")
                return export_data(url, ids, fmt)
            except DashboardError as exc:
                return f"The export failed: {exc}\n".encode()
        return data

    return [Export("json", build("json"), "gpu-vs-cpu-results.json", "application/json"),
            Export("csv", build("csv"), "gpu-vs-cpu-results.csv", "text/csv")]


def export_data(url: str | None, run_ids: Sequence[int], fmt: ExportFormat) -> bytes:
    """The export file of the runs, or the text saying it is past PAGE_EXPORT_BYTES: what `exports` builds, in a
    quiet child process for a large one (a module-level function, so that it pickles)."""
    out = io.BytesIO()
    try:
        store = open_store(url)
        if fmt == "json" and store.payload_chars(run_ids) > PAGE_EXPORT_BYTES:  # certain before any run is read
            return too_big_text(len(run_ids), fmt).encode()
        write_export(store, out, fmt, run_ids, limit_bytes=PAGE_EXPORT_BYTES)
    except ExportTooBig:
        return too_big_text(len(run_ids), fmt).encode()
    return out.getvalue()


def import_data(url: str | None, data: bytes, label: str, file: str, session: str,
                owner_token: str | None) -> ImportResult:
    """Import a file's runs, all or nothing: what a quiet child process does for `import_upload`."""
    return open_store(url).import_json(data, label=label, file=file, session=session, owner_token=owner_token)


def too_big_text(runs: int, fmt: ExportFormat) -> str:
    """What a download past PAGE_EXPORT_BYTES holds instead of the export: why, and the command that writes it."""
    return (f"The export of the {runs:,} runs shown is over {byte_size(PAGE_EXPORT_BYTES)}, more than this page builds "
            f"(and more than one import reads). Show fewer runs (the filters, or fewer 'show more'), or export "
            f"them on the server: python -m core results export --format {fmt} --output FILE\n")


def sweep_csv(url: str | None, sweep: MatmulSweep, run_id: int | None, label: str = "") -> Callable[[], bytes]:
    """The race page's CSV download, built when pressed: a saved sweep's is the Results export of its run, byte for
    byte (one table builder, core.store.frames); one not saved (stopped, or the store failed) is the same table
    with run number 0, as measured now."""
    if run_id is not None:
        return exports(url, [run_id])[1].data
    unsaved = RunRecord(uid="unsaved", kind=sweep.kind, created_at=sweep.finished_at or utc_now(), label=label,
                        machine=sweep.machine or unknown_machine(), settings=sweep.settings, versions={}, result=sweep,
                        provenance=Provenance(source=MEASURED))
    return lambda: csv_text(tidy_frame([StoredRun(0, unsaved)])).encode()
