"""The result store: SQLite in the user's data folder, or one PostgreSQL board for a whole class.

Every write is one transaction (a run and its device rows together), so a process killed mid-write
leaves the store as it was before that run; SQLite runs in WAL mode with synchronous=FULL, so a
committed run survives a crash of the machine too. No connection is kept between calls: a Store is
just a resolved address, safe to share between Streamlit sessions and threads.
All SQL is parameterized; tables carry a `gvc_` prefix so a shared database's other tables are safe.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from core.errors import DashboardError
from core.browser.judge import rejudge_imported
from core.matmul.crossover import rederive_imported
from core.platform.paths import data_dir
from core.results import files, jsonio
from core.results.runs import RunRecord
from core.results.kinds import read_result
from core.results.runs import IMPORTED, MEASURED, Provenance
from core.store import url_redaction
from core.store.access import (COMMAND_LINE, INSTRUCTOR, OWNER_KEPT_DAYS, Access, Owner, owner_hash,
                               token_shape)
from core.results.kinds import Result
from core.results.machine import Machine, read_machine
from core.store.records import (RunFilter, RunListing, RunSummary, StoredRun, SummaryListing, UnreadableRun,
                                machine_label, SUMMARY_VERSION, software_versions, summary_facts)

DATABASE_URL_ENV = "DATABASE_URL"  # postgresql://user:password@host:5432/db shares one board
SQLITE_FILE = "results.sqlite3"  # in core.platform.paths.data_dir()
DB_TIMEOUT_ENV = "GPU_VS_CPU_DB_TIMEOUT_S"  # how long one statement may wait for a lock, or run
DEFAULT_DB_TIMEOUT_S = 5.0  # a save takes milliseconds; a lock held longer is a stuck client, not a queue
MAX_DB_TIMEOUT_S = 600.0
MAX_RUNS_ENV = "GPU_VS_CPU_MAX_RUNS"  # runs a board may hold: a flood of imports stops here, with a message
DEFAULT_MAX_RUNS = 20_000
MAX_IMPORT_ENV = "GPU_VS_CPU_MAX_IMPORT_RUNS"  # new runs one import may add
DEFAULT_MAX_IMPORT = 2_000  # a whole class's export is a few hundred runs
SESSION_HOURLY_ENV = "GPU_VS_CPU_MAX_SESSION_RUNS_PER_HOUR"  # runs one browser session may save or import per hour
DEFAULT_SESSION_HOURLY = 500  # a student saves a run a minute at most; a flood from one tab stops here
QUOTA_WINDOW_S = 3600
WAL_RETRY_S = 0.05  # pause between tries to switch a new file to WAL while another connection opens it
PG_CONNECT_TIMEOUT_S = 5  # an unreachable server fails fast with a message, never hangs the page
PG_MIGRATION_LOCK = 0x6776635F  # pg_advisory_xact_lock key ("gvc_"): one migrator at a time
PG_ADD_LOCK = 0x67766341  # pg_advisory_xact_lock key ("gvcA"): one transaction adding runs at a time (caps, quotas)
MIN_SQLITE = (3, 35)  # INSERT/DELETE ... RETURNING
MAX_RUN_ID = 2**63 - 1  # both back ends' 64-bit ids; a larger number names no run (and would overflow the driver)
UID_CHUNK = 500  # uids per "already stored?" query, under SQLite's limit on parameters
SUMMARY_BATCH = 500  # rows per step when schema 3 writes the summaries of a board's existing runs

RUN_COLUMNS = ("id, uid, kind, created_at, label, machine_json, settings_json, versions_json, payload_json, "
               "provenance_json, owner")
SUMMARY_COLUMNS = "id, kind, created_at, label, machine_label, source, owner, summary_json, stored_at"
ROOM_REFERENCE = "room reference"  # gvc_pins' role of the run the Class board shows as the room's reference
PINNABLE_KINDS = ("matmul",)  # the reference is a Matmul race: the crossover the guesses are judged against
NOT_INSTRUCTOR = "only the instructor (with the instructor key) can pin or unpin the room's reference"
NOT_YOURS = ("run #{run_id} was saved by another browser session: only that session, or the instructor "
             "(with the instructor key), can delete it")


@dataclass(frozen=True)
class ImportResult:
    """What an import did: the new runs' ids, and how many were already in the store."""

    run_ids: tuple[int, ...]
    skipped: int


def db_timeout_s() -> float:
    """Seconds a statement may wait for a lock (SQLite's busy_timeout; PostgreSQL's lock_timeout and
    statement_timeout): GPU_VS_CPU_DB_TIMEOUT_S, else 5. A page or command held longer gives one line."""
    raw = os.environ.get(DB_TIMEOUT_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_DB_TIMEOUT_S
    except ValueError:
        value = float("nan")
    if not 0.1 <= value <= MAX_DB_TIMEOUT_S:
        raise DashboardError(f"{DB_TIMEOUT_ENV}={raw[:40]!r} is not a number of seconds from 0.1 to "
                             f"{MAX_DB_TIMEOUT_S:g}; unset it for {DEFAULT_DB_TIMEOUT_S:g} s")
    return value


def _count_setting(name: str, default: int, most: int) -> int:
    """A whole-number setting from the environment, 1 to `most`; a bad one is one line naming it."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdecimal() or not 1 <= int(raw) <= most:
        raise DashboardError(f"{name}={raw[:40]!r} is not a whole number from 1 to {most}; unset it for {default}")
    return int(raw)


def max_runs() -> int:
    return _count_setting(MAX_RUNS_ENV, DEFAULT_MAX_RUNS, 10_000_000)


def max_import_runs() -> int:
    return _count_setting(MAX_IMPORT_ENV, DEFAULT_MAX_IMPORT, files.MAX_IMPORT_RUNS)


def max_session_runs_per_hour() -> int:
    return _count_setting(SESSION_HOURLY_ENV, DEFAULT_SESSION_HOURLY, 10_000_000)


def _hour_ago() -> str:
    return (datetime.now(timezone.utc) - timedelta(seconds=QUOTA_WINDOW_S)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check_quota(tx: _Tx, owner: str | None, adding: int) -> None:
    """Refuse, before inserting, what would take a browser session past its runs per hour, and record
    what it adds (the command line, owner None, has no quota). Saves are counted in their own table,
    so deleting runs does not give a session more."""
    if owner is None or adding <= 0:
        return
    cap, since = max_session_runs_per_hour(), _hour_ago()
    tx.run("DELETE FROM gvc_session_saves WHERE saved_at < ?", (since,))
    done = int(tx.run("SELECT COALESCE(SUM(runs), 0) FROM gvc_session_saves WHERE owner = ? AND saved_at >= ?",
                      (owner, since))[0][0])
    if done + adding > cap:
        raise DashboardError(f"this browser session has saved or imported {done} runs in the last hour and its limit "
                             f"is {cap} per hour, so {adding} more cannot be saved; wait, import the file "
                             "on the server (`python -m core results import FILE`), "
                             f"or raise {SESSION_HOURLY_ENV} on the server")
    tx.run("INSERT INTO gvc_session_saves (owner, saved_at, runs) VALUES (?, ?, ?)", (owner, files.utc_now(), adding))


def _one_adder_at_a_time(tx: _Tx) -> None:
    """Make count-then-insert atomic: on PostgreSQL, READ COMMITTED lets two transactions count the same
    rows and both insert (12 concurrent imports against a cap of 1 stored 5, issue 30), so every transaction
    that adds runs first takes one advisory lock, held to its commit; each statement after it sees what the
    previous holder committed. Saves take milliseconds, and the wait is bounded by lock_timeout. SQLite's
    BEGIN IMMEDIATE already serializes writers."""
    if tx.dialect == "postgresql":
        tx.run("SELECT pg_advisory_xact_lock(?)", (PG_ADD_LOCK,))


def _check_room(tx: _Tx, adding: int) -> None:
    """Refuse, before inserting, what would take the board past GPU_VS_CPU_MAX_RUNS."""
    cap = max_runs()
    held = int(tx.run("SELECT COUNT(*) FROM gvc_runs")[0][0])
    if held + adding > cap:
        raise DashboardError(f"the board holds {held} runs and its limit is {cap}, so {adding} more cannot be saved; "
                             f"delete old runs (Results page, or `python -m core results delete`) or raise "
                             f"{MAX_RUNS_ENV} on the server")


def _ensure_wal(conn: sqlite3.Connection) -> None:
    """Put the file in WAL mode (a property of the file: after the first time this only reads it).

    Switching needs the file to itself, and SQLite answers "database is locked" at once, without
    its busy timeout, when another connection opens the new file at the same moment; so retry.
    """
    deadline = time.monotonic() + db_timeout_s()
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(WAL_RETRY_S)


class _Tx:
    """One open transaction; `?` placeholders work on both back ends."""

    def __init__(self, conn: Any, dialect: str) -> None:
        self.conn, self.dialect = conn, dialect

    def run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        if self.dialect == "postgresql":
            sql = sql.replace("?", "%s")
        cur = self.conn.execute(sql, tuple(params))
        return list(cur.fetchall()) if cur.description else []


def _create_tables(tx: _Tx) -> None:
    """Schema 1: runs, plus one row per (run, device) so the device filter is an indexed lookup."""
    id_column = ("INTEGER PRIMARY KEY AUTOINCREMENT" if tx.dialect == "sqlite"
                 else "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
    tx.run(f"""CREATE TABLE IF NOT EXISTS gvc_runs (
        id {id_column},
        uid TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        created_at TEXT NOT NULL,
        label TEXT NOT NULL DEFAULT '',
        machine_label TEXT NOT NULL,
        machine_json TEXT NOT NULL,
        settings_json TEXT NOT NULL,
        versions_json TEXT NOT NULL,
        payload_json TEXT NOT NULL)""")
    tx.run("""CREATE TABLE IF NOT EXISTS gvc_run_devices (
        run_id BIGINT NOT NULL REFERENCES gvc_runs(id) ON DELETE CASCADE,
        device TEXT NOT NULL,
        PRIMARY KEY (run_id, device))""")
    tx.run("CREATE INDEX IF NOT EXISTS gvc_run_devices_device ON gvc_run_devices(device)")
    tx.run("CREATE INDEX IF NOT EXISTS gvc_runs_created ON gvc_runs(created_at)")


def _add_provenance_and_owner(tx: _Tx) -> None:
    """Schema 2: where each run came from, who may delete it, and the time it sorts by.

    `owner` is the SHA-256 of the saving browser session's token (core.store.access; NULL for the
    command line and for runs saved before: only the instructor deletes those). `source` repeats
    the provenance's source for a filter in SQL. `sort_at` is min(created_at, when it was stored):
    a run's own date can move it down the list, never above the runs measured since it arrived.
    """
    tx.run("ALTER TABLE gvc_runs ADD COLUMN provenance_json TEXT")
    tx.run("ALTER TABLE gvc_runs ADD COLUMN owner TEXT")
    tx.run(f"ALTER TABLE gvc_runs ADD COLUMN source TEXT NOT NULL DEFAULT '{MEASURED}'")
    tx.run("ALTER TABLE gvc_runs ADD COLUMN sort_at TEXT NOT NULL DEFAULT ''")
    tx.run("UPDATE gvc_runs SET sort_at = created_at")
    tx.run("CREATE INDEX IF NOT EXISTS gvc_runs_sort ON gvc_runs(sort_at)")


def _add_summaries(tx: _Tx) -> None:
    """Schema 3: each run's listing facts (headline, devices, load mark, shown source) as `summary_json`,
    so the Results page lists a page of runs without reading and checking every payload.

    Existing runs get theirs here, a batch at a time; a row that cannot be read keeps NULL, and a
    listing reads such rows in full (as before), so it is still named as unreadable.
    """
    tx.run("ALTER TABLE gvc_runs ADD COLUMN summary_json TEXT")
    last = 0
    while rows := tx.run(f"SELECT {RUN_COLUMNS} FROM gvc_runs WHERE id > ? ORDER BY id LIMIT ?", (last, SUMMARY_BATCH)):
        last = int(rows[-1][0])
        for run in (_row_to_run(row) for row in rows):
            if isinstance(run, StoredRun):
                tx.run("UPDATE gvc_runs SET summary_json = ? WHERE id = ?",
                       (jsonio.dumps(summary_facts(run.record)), run.run_id))


def _add_session_saves(tx: _Tx) -> None:
    """Schema 4: what each browser session (by its owner hash) saved or imported in the last hour, for
    GPU_VS_CPU_MAX_SESSION_RUNS_PER_HOUR; rows older than the hour are removed as new ones arrive."""
    tx.run("""CREATE TABLE IF NOT EXISTS gvc_session_saves (
        owner TEXT NOT NULL,
        saved_at TEXT NOT NULL,
        runs INTEGER NOT NULL)""")
    tx.run("CREATE INDEX IF NOT EXISTS gvc_session_saves_owner ON gvc_session_saves(owner, saved_at)")


def _add_stored_at(tx: _Tx) -> None:
    """Schema 5: when each run reached this store, by the server's clock (`created_at` is what the run, or an
    imported file, claims): the Class board's "arrived" column (issue 30). Runs saved before: a measured or
    notebook run was saved by `Store.save`, whose `created_at` is the server's clock at the save; an imported
    run's provenance recorded the server's clock at the import; a row whose provenance cannot be read keeps ''."""
    tx.run("ALTER TABLE gvc_runs ADD COLUMN stored_at TEXT NOT NULL DEFAULT ''")
    tx.run(f"UPDATE gvc_runs SET stored_at = created_at WHERE source <> '{IMPORTED}'")
    last = 0
    while rows := tx.run("SELECT id, provenance_json FROM gvc_runs WHERE source = ? AND id > ? ORDER BY id LIMIT ?",
                         (IMPORTED, last, SUMMARY_BATCH)):
        last = int(rows[-1][0])
        for run_id, text in rows:
            try:
                at = jsonio.loads(text, what="its provenance").get("imported_at") if text else None
            except (DashboardError, AttributeError):
                at = None
            if isinstance(at, str) and len(at) <= 40:
                tx.run("UPDATE gvc_runs SET stored_at = ? WHERE id = ?", (at, run_id))


def _add_issued_owners(tx: _Tx) -> None:
    """Schema 6: the owner tokens this server issued to browsers (their SHA-256, as `owner`), so a token a
    browser hands back after a reload is taken only if the server made it (core.store.access.OWNER_COOKIE)."""
    tx.run("""CREATE TABLE IF NOT EXISTS gvc_owners (
        owner TEXT PRIMARY KEY,
        issued_at TEXT NOT NULL)""")
    tx.run("CREATE INDEX IF NOT EXISTS gvc_owners_issued ON gvc_owners(issued_at)")


def _add_pins(tx: _Tx) -> None:
    """Schema 7: which run is pinned in which role: the room's reference (ROOM_REFERENCE), the instructor's
    measurement for the class that the Class board shows and judges the guesses against. A table of its own,
    not a field of the run: nothing a run carries (a payload, an import) can pin it, only `Store.pin_reference`
    with the instructor's access; deleting the run removes its pin."""
    tx.run("""CREATE TABLE IF NOT EXISTS gvc_pins (
        role TEXT PRIMARY KEY,
        run_id BIGINT NOT NULL REFERENCES gvc_runs(id) ON DELETE CASCADE,
        pinned_at TEXT NOT NULL)""")


# MIGRATIONS[i] takes schema version i to i + 1, inside the same transaction that records it.
# To change the schema, append a function; never edit one that has shipped.
MIGRATIONS: list[Callable[[_Tx], None]] = [_create_tables, _add_provenance_and_owner, _add_summaries,
                                           _add_session_saves, _add_stored_at, _add_issued_owners, _add_pins]
SCHEMA_VERSION = len(MIGRATIONS)


class Store:
    """Saved runs in SQLite or PostgreSQL. Build one with `open_store()`."""

    def __init__(self, url: str | None = None) -> None:
        self.dialect, self._target = _resolve(url)

    # -- connection --------------------------------------------------------------------------

    def describe(self) -> str:
        """Where runs are kept, without any part of a password (core.store.url_redaction)."""
        if self.dialect == "sqlite":
            return f"SQLite file {self._target}"
        return url_redaction.describe(self._target)

    def _redact(self, text: str) -> str:
        """A text made from the URL (a driver's message) with every part of its password blanked."""
        return url_redaction.redact(text, self._target) if self.dialect == "postgresql" else text

    @contextmanager
    def _transaction(self, write: bool = True) -> Iterator[_Tx]:
        """One transaction: committed when the block ends, rolled back on any exception."""
        if self.dialect == "sqlite":
            with self._sqlite(write) as tx:
                yield tx
        else:
            with self._postgresql() as tx:
                yield tx

    @contextmanager
    def _sqlite(self, write: bool) -> Iterator[_Tx]:
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise DashboardError(f"this Python's SQLite is {sqlite3.sqlite_version}; the result store needs "
                                 f"{'.'.join(map(str, MIN_SQLITE))} or newer (a newer Python brings one)")
        path = Path(self._target)
        timeout_s = db_timeout_s()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, isolation_level=None, timeout=timeout_s)
        except (OSError, sqlite3.Error) as exc:
            raise DashboardError(f"cannot open the result store {path}: {exc}; check the folder's permissions "
                                 f"or set GPU_VS_CPU_DATA_DIR") from None
        try:
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
                _ensure_wal(conn)  # readers never block the one writer
                conn.execute("PRAGMA synchronous = FULL")  # a committed run survives a power cut too
                conn.execute("PRAGMA foreign_keys = ON")
                # A writer takes the write lock at once (no lock-upgrade deadlock); readers never wait.
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.Error as exc:
                raise self._sqlite_error(exc) from None
            try:
                yield _Tx(conn, "sqlite")
            except sqlite3.Error as exc:
                conn.rollback()
                if isinstance(exc, sqlite3.OperationalError) or type(exc) is sqlite3.DatabaseError:
                    raise self._sqlite_error(exc) from None  # locked too long, disk full, I/O error
                raise
            except BaseException:
                conn.rollback()
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                conn.rollback()
                raise self._sqlite_error(exc) from None
        finally:
            conn.close()

    def _sqlite_error(self, exc: sqlite3.Error) -> DashboardError:
        if "not a database" in str(exc) or "malformed" in str(exc):
            return DashboardError(f"the result store {self._target} is damaged or not a SQLite file ({exc}); "
                                  "move it aside and a new one is created")
        if "locked" in str(exc) or "busy" in str(exc):
            return DashboardError(f"the result store {self._target} is locked by another program for more than "
                                  f"{db_timeout_s():g} s; nothing was changed; try again, or raise {DB_TIMEOUT_ENV}")
        return DashboardError(f"the result store {self._target} cannot be used now ({exc}); try again")

    @contextmanager
    def _postgresql(self) -> Iterator[_Tx]:
        import psycopg

        if url_redaction.read_url(self._target) is None:  # never to the driver: it may print or look up its pieces
            raise DashboardError(f"cannot use the {self.describe()}: "
                                 f"{url_redaction.malformed_message(DATABASE_URL_ENV)}")
        try:
            conn = psycopg.connect(self._target, connect_timeout=PG_CONNECT_TIMEOUT_S, application_name="gpu-vs-cpu")
        except psycopg.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DashboardError(f"cannot reach the {self.describe()}: {self._redact(first)}; check "
                                 f"{DATABASE_URL_ENV}, "
                                 "or unset it to keep results in this machine's SQLite file") from None
        with conn:  # commits when the block ends, rolls back on an exception, then closes
            try:
                limit = str(int(db_timeout_s() * 1000))  # milliseconds, for this connection only
                conn.execute("SELECT set_config('lock_timeout', %s, false), set_config('statement_timeout', %s, false)",
                             (limit, limit))
                yield _Tx(conn, "postgresql")
            except (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled):
                raise DashboardError(f"the {self.describe()} is busy: a lock held elsewhere or a slow statement kept "
                                     f"this one waiting for more than {db_timeout_s():g} s; nothing was changed; "
                                     f"try again, or raise {DB_TIMEOUT_ENV}") from None
            except psycopg.OperationalError as exc:
                raise DashboardError(f"the {self.describe()} failed mid-transaction ({self._redact(str(exc))}); "
                                     "nothing was changed, try again") from None

    def _current_version(self) -> int:
        """The schema version recorded in the store, 0 for a new one; a read that blocks no one."""
        with self._transaction(write=False) as tx:
            if tx.dialect == "sqlite":
                exists = tx.run("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gvc_schema_version'")
            else:
                exists = tx.run("SELECT 1 FROM pg_tables WHERE tablename = 'gvc_schema_version' "
                                "AND schemaname = current_schema()")
            rows = tx.run("SELECT version FROM gvc_schema_version") if exists else []
        return rows[0][0] if rows else 0

    def migrate(self) -> None:
        """Create or upgrade the tables; a store written by a newer version is refused, not damaged.

        Opening an up-to-date store only reads, so every page view may call `open_store()`.
        """
        if self._current_version() == SCHEMA_VERSION:
            return
        with self._transaction() as tx:
            if tx.dialect == "postgresql":
                tx.run("SELECT pg_advisory_xact_lock(?)", (PG_MIGRATION_LOCK,))
            tx.run("CREATE TABLE IF NOT EXISTS gvc_schema_version (version INTEGER NOT NULL)")
            rows = tx.run("SELECT version FROM gvc_schema_version")
            version = rows[0][0] if rows else 0
            if version > SCHEMA_VERSION:
                raise DashboardError(f"the {self.describe()} has schema version {version}, newer than this "
                                     f"dashboard's {SCHEMA_VERSION}; update the dashboard to use it")
            for step in MIGRATIONS[version:]:
                step(tx)
            if not rows:
                tx.run("INSERT INTO gvc_schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
            elif version != SCHEMA_VERSION:
                tx.run("UPDATE gvc_schema_version SET version = ?", (SCHEMA_VERSION,))

    def schema_version(self) -> int:
        with self._transaction(write=False) as tx:
            return tx.run("SELECT version FROM gvc_schema_version")[0][0]

    # -- writing -----------------------------------------------------------------------------

    def save(self, result: Result, *, label: str = "", owner: Owner = COMMAND_LINE,
             machine: Machine | None = None, issue: bool = False) -> int:
        """Save one finished run, as every page, the CLI and the notebook do; returns its id.

        The run's settings are its own (`result.settings`); its machine is `machine` when given (an import
        that knows better), else its own where the kind carries one (a sweep, a roofline), else this machine's.
        The result goes through the same schema as an import, written by the one JSON writer (NaN becomes
        null), so what is saved reads back the same. `owner`: the browser session that may delete it later
        (the command line: only the instructor deletes it) and where it was measured (here, or by the
        notebook). `issue`: this is the first save of a browser session whose token the server has not issued
        yet; it is recorded as issued (`issue_owner`) in the same transaction, one commit instead of two (sixty
        students saving a shared race at once wait for each other's commits)."""
        payload = result.to_json()
        jsonio.check_tree(payload, "payload")  # before anything that recurses over it
        plain = jsonio.loads(jsonio.dumps(payload), what="the run")
        jsonio.check_size(plain, "payload", files.MAX_RUN_CHARS)
        result = read_result(result.kind, plain)
        own = machine if machine is not None else getattr(result, "machine", None)
        if own is None:
            from core.platform.hardware import inspect_machine

            own = inspect_machine().record()
        extras: dict[str, Any] = {"machine": own, "settings": result.settings}
        jsonio.check_tree(extras, "run")
        extras = jsonio.loads(jsonio.dumps(extras), what="the run")
        record = RunRecord(uid=uuid.uuid4().hex, kind=result.kind, created_at=files.utc_now(),
                           label=files.check_label(label),
                           machine=read_machine(extras["machine"], "machine"), settings=extras["settings"],
                           versions=software_versions(), result=result, provenance=Provenance(source=owner.source))
        with self._transaction() as tx:
            _one_adder_at_a_time(tx)
            _check_room(tx, 1)
            _check_quota(tx, owner_hash(owner.token) if owner.token else None, 1)
            run_id = _insert(tx, record, owner.token)
            if issue and owner.token:
                _issue(tx, owner.token)
        assert run_id is not None, "a fresh uuid cannot collide"
        return run_id

    def issue_owner(self, token: str) -> None:
        """Record that this server gave `token` to a browser (its hash only), so `issued_owner` takes it back after
        a reload; tokens issued more than OWNER_KEPT_DAYS ago are forgotten meanwhile."""
        with self._transaction() as tx:
            _issue(tx, token)

    def issued_owner(self, token: str) -> bool:
        """Did this server issue `token` (within OWNER_KEPT_DAYS)? What a browser hands back is taken only then:
        a token a student made up, or one from another server, is not, so nobody chooses their owner token."""
        if not token_shape(token):
            return False
        since = (datetime.now(timezone.utc) - timedelta(days=OWNER_KEPT_DAYS)).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._transaction(write=False) as tx:
            return bool(tx.run("SELECT 1 FROM gvc_owners WHERE owner = ? AND issued_at >= ?",
                               (owner_hash(token), since)))

    def delete(self, run_id: int, access: Access = INSTRUCTOR) -> None:
        """Delete one run, readable or not, if `access` allows it (the default, the command line's, does)."""
        key = _run_key(run_id)
        with self._transaction() as tx:
            rows = tx.run("SELECT owner FROM gvc_runs WHERE id = ?", (key,))
            if not rows:
                raise DashboardError(f"there is no saved run #{run_id} (deleted already?); "
                                     "`python -m core results list` shows the saved ones")
            if not access.may_delete(rows[0][0]):
                raise DashboardError(NOT_YOURS.format(run_id=run_id))
            tx.run("DELETE FROM gvc_run_devices WHERE run_id = ?", (key,))
            tx.run("DELETE FROM gvc_pins WHERE run_id = ?", (key,))  # a deleted reference is pinned no more
            tx.run("DELETE FROM gvc_runs WHERE id = ?", (key,))

    def pin_reference(self, run_id: int, access: Access) -> None:
        """Pin run `run_id` (a Matmul race) as the room's reference, in place of any other: the instructor only."""
        key = _run_key(run_id)
        if not access.instructor:
            raise DashboardError(NOT_INSTRUCTOR)
        with self._transaction() as tx:
            rows = tx.run("SELECT kind FROM gvc_runs WHERE id = ?", (key,))
            if not rows:
                raise DashboardError(f"there is no saved run #{run_id}; `python -m core results list` shows the "
                                     "saved ones")
            if rows[0][0] not in PINNABLE_KINDS:
                raise DashboardError(f"run #{run_id} is a {rows[0][0]} run; the room's reference is a Matmul race")
            tx.run("DELETE FROM gvc_pins WHERE role = ?", (ROOM_REFERENCE,))
            tx.run("INSERT INTO gvc_pins (role, run_id, pinned_at) VALUES (?, ?, ?)",
                   (ROOM_REFERENCE, key, files.utc_now()))

    def unpin_reference(self, access: Access) -> bool:
        """Unpin the room's reference (the run stays saved): the instructor only; False when none was pinned."""
        if not access.instructor:
            raise DashboardError(NOT_INSTRUCTOR)
        with self._transaction() as tx:
            return bool(tx.run("DELETE FROM gvc_pins WHERE role = ? RETURNING run_id", (ROOM_REFERENCE,)))

    def pinned_reference(self) -> int | None:
        """The run pinned as the room's reference, None when none is: one small query."""
        with self._transaction(write=False) as tx:
            rows = tx.run("SELECT run_id FROM gvc_pins WHERE role = ?", (ROOM_REFERENCE,))
        return int(rows[0][0]) if rows else None

    def import_json(self, data: bytes, *, label: str = "", file: str = "", session: str = "command line",
                    owner_token: str | None = None) -> ImportResult:
        """Import a CLI JSON file or an export, all or nothing (see core.results.files); runs
        already here are skipped before inserting, so they use up no run number. Every run is
        stored as imported from `file` by `session`; `owner_token`'s session may delete them."""
        records = rejudge_imported(rederive_imported(files.read_import(data, label=label, file=file, session=session)))
        new: list[int] = []
        with self._transaction() as tx:
            _one_adder_at_a_time(tx)
            stored = _stored_uids(tx, [r.uid for r in records])
            adding = len({r.uid for r in records} - stored)
            if adding > (most := max_import_runs()):
                raise DashboardError(f"the file adds {adding} new runs, over the limit of {most} per import "
                                     f"({MAX_IMPORT_ENV}); import it in parts, or raise the limit on the server")
            _check_room(tx, adding)
            _check_quota(tx, owner_hash(owner_token) if owner_token else None, adding)
            for record in records:
                if record.uid in stored:  # already here, or listed twice in the file
                    continue
                stored.add(record.uid)
                run_id = _insert(tx, record, owner_token)
                if run_id is not None:
                    new.append(run_id)
        return ImportResult(run_ids=tuple(new), skipped=len(records) - len(new))

    # -- reading -----------------------------------------------------------------------------

    def read_runs(self, *, machine: str | None = None, device: str | None = None, kind: str | None = None,
                  run_ids: Sequence[int] | None = None, source: str | None = None,
                  limit: int | None = None) -> RunListing:
        """Saved runs, newest first (by `sort_at`: a forged future date never lifts a run), and the
        rows that cannot be read; each filter left as None matches all; `limit`: only the newest rows."""
        chosen = RunFilter.of(*([value] if value is not None else None for value in (machine, device, kind, source)))
        if (query := _where(chosen, run_ids)) is None:
            return RunListing([], [])
        where, params = query
        sql = f"SELECT {_prefixed(RUN_COLUMNS)} FROM gvc_runs r WHERE {where} ORDER BY r.sort_at DESC, r.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(max(0, int(limit)))
        with self._transaction(write=False) as tx:
            rows = tx.run(sql, params)
        read = [_row_to_run(row) for row in rows]
        return RunListing([r for r in read if isinstance(r, StoredRun)],
                          [r for r in read if isinstance(r, UnreadableRun)])

    def read_summaries(self, runs: RunFilter = RunFilter(), *, limit: int | None = None, offset: int = 0,
                       run_ids: Sequence[int] | None = None) -> SummaryListing:
        """The listing of the runs `runs` matches, newest first, `limit` rows from `offset`: read from the
        rows' columns and stored summaries, never from the payloads (a row without a summary, written by an
        older version or by hand, is read in full, and named as unreadable if it cannot be)."""
        if (query := _where(runs, run_ids)) is None:
            return SummaryListing([], [])
        where, params = query
        sql = f"SELECT {_prefixed(SUMMARY_COLUMNS)} FROM gvc_runs r WHERE {where} ORDER BY r.sort_at DESC, r.id DESC"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params.extend([max(0, int(limit)), max(0, int(offset))])
        with self._transaction(write=False) as tx:
            rows = tx.run(sql, params)
        read: dict[int, RunSummary | UnreadableRun | None] = {int(row[0]): _row_to_summary(row) for row in rows}
        if missing := [i for i, summary in read.items() if summary is None]:
            full = self.read_runs(run_ids=missing)
            arrived = {int(row[0]): str(row[-1] or "") for row in rows}
            read.update({r.run_id: replace(r.summary, stored_at=arrived.get(r.run_id, "")) for r in full.runs}
                        | {r.run_id: r for r in full.unreadable})
            self._refresh_summaries(full.runs)
        return SummaryListing([r for r in read.values() if isinstance(r, RunSummary)],
                              [r for r in read.values() if isinstance(r, UnreadableRun)])

    def _refresh_summaries(self, runs: Sequence[StoredRun]) -> None:
        """Store the summaries of runs read in full (an older summary version, or none): the next listing
        reads only their columns. Best effort: a busy board is left as it was, and asked again next time."""
        if not runs:
            return
        try:
            with self._transaction() as tx:
                for run in runs:
                    tx.run("UPDATE gvc_runs SET summary_json = ? WHERE id = ?",
                           (jsonio.dumps(summary_facts(run.record)), run.run_id))
        except DashboardError:
            pass

    def filter_choices(self) -> tuple[list[str], list[str], list[str]]:
        """(machines, devices, sources) present on the whole board, for the page's filters: three small queries."""
        with self._transaction(write=False) as tx:
            machines = sorted(str(r[0]) for r in tx.run("SELECT DISTINCT machine_label FROM gvc_runs"))
            devices = sorted(str(r[0]) for r in tx.run("SELECT DISTINCT device FROM gvc_run_devices"))
            sources = sorted(str(r[0]) for r in tx.run("SELECT DISTINCT source FROM gvc_runs"))
        return machines, devices, sources

    def list_runs(self, *, machine: str | None = None, device: str | None = None, kind: str | None = None,
                  run_ids: Sequence[int] | None = None, source: str | None = None) -> list[StoredRun]:
        """The readable saved runs, newest first (`read_runs` also names the unreadable ones)."""
        return self.read_runs(machine=machine, device=device, kind=kind, run_ids=run_ids, source=source).runs

    def version(self) -> tuple[int, int]:
        """(rows, highest id): changes with every save, import and delete, so a page caches a read by it."""
        with self._transaction(write=False) as tx:
            rows, top = tx.run("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM gvc_runs")[0]
        return int(rows), int(top)

    def count_runs(self, runs: RunFilter = RunFilter()) -> int:
        """How many runs the store holds that `runs` matches, readable or not (the page says how many it does
        not show)."""
        where, params = _where(runs, None) or ("1 = 0", [])
        with self._transaction(write=False) as tx:
            return int(tx.run(f"SELECT COUNT(*) FROM gvc_runs r WHERE {where}", params)[0][0])

    def get(self, run_id: int) -> StoredRun:
        listing = self.read_runs(run_ids=[_run_key(run_id)])
        if listing.unreadable:
            raise DashboardError(f"saved run #{run_id} cannot be read ({listing.unreadable[0].reason}); "
                                 f"`python -m core results delete {run_id}` removes it")
        if not listing.runs:
            raise DashboardError(f"there is no saved run #{run_id}; `python -m core results list` shows the saved ones")
        return listing.runs[0]

    def export_json(self, run_ids: Sequence[int] | None = None) -> bytes:
        """An export file (all runs, or the given ones, oldest first) that `import_json` reads back, in memory:
        for a few runs (a file of a whole board is written a batch at a time by core.store.export)."""
        return self._export("json", run_ids)

    def export_csv(self, run_ids: Sequence[int] | None = None) -> bytes:
        """The tidy table of the runs (one row per run and device and size, or per run and epoch), in memory."""
        return self._export("csv", run_ids)

    def _export(self, fmt: str, run_ids: Sequence[int] | None) -> bytes:
        import io

        from core.store.export import write_export

        out = io.BytesIO()
        write_export(self, out, fmt, run_ids)
        return out.getvalue()

    def export_order(self, run_ids: Sequence[int] | None = None,
                     runs: RunFilter = RunFilter()) -> list[tuple[int, str, str]]:
        """(id, created_at, kind) of the runs an export holds (`run_ids`, else all `runs` matches), oldest first:
        three small columns, so a board of 10,000 runs is listed without reading a payload."""
        chosen: list[Sequence[int] | None] = [None]
        if run_ids is not None:  # in chunks: past SQLite's parameter limit, and a page may show thousands
            ids = list(run_ids)
            chosen = [ids[start:start + UID_CHUNK] for start in range(0, len(ids), UID_CHUNK)]
        found: dict[int, tuple[int, str, str]] = {}
        with self._transaction(write=False) as tx:
            for chunk in chosen:
                if (query := _where(runs, chunk)) is None:
                    continue
                where, params = query
                for run_id, created_at, kind in tx.run(f"SELECT r.id, r.created_at, r.kind FROM gvc_runs r "
                                                       f"WHERE {where}", params):
                    found[int(run_id)] = (int(run_id), str(created_at), str(kind))
        return sorted(found.values(), key=lambda row: (row[1], row[0]))

    def payload_chars(self, run_ids: Sequence[int]) -> int:
        """The characters of the chosen runs' stored payloads: less than their JSON export, known from one query
        per UID_CHUNK ids, so a download certain to be too big is refused before any run is read."""
        ids, total = list(run_ids), 0
        with self._transaction(write=False) as tx:
            for start in range(0, len(ids), UID_CHUNK):
                if (query := _where(RunFilter(), ids[start:start + UID_CHUNK])) is not None:
                    where, params = query
                    total += int(tx.run(f"SELECT COALESCE(SUM(LENGTH(r.payload_json)), 0) FROM gvc_runs r "
                                        f"WHERE {where}", params)[0][0])
        return total

    def runs_in_batches(self, run_ids: Sequence[int], batch: int) -> Iterator[list[StoredRun]]:
        """The readable runs among `run_ids`, in that order, `batch` at a time (unreadable ones left out, as
        `list_runs` leaves them): what an export holds in memory at once."""
        ids = list(run_ids)
        for start in range(0, len(ids), max(1, batch)):
            chunk = ids[start:start + max(1, batch)]
            read = {run.run_id: run for part in range(0, len(chunk), UID_CHUNK)
                    for run in self.list_runs(run_ids=chunk[part:part + UID_CHUNK])}
            yield [read[run_id] for run_id in chunk if run_id in read]


def _run_key(run_id: Any) -> int:
    """A run id as the database takes it; a number no run can have is 'no such run', not an overflow."""
    if isinstance(run_id, bool) or not isinstance(run_id, int) or not 1 <= run_id <= MAX_RUN_ID:
        raise DashboardError(f"there is no saved run #{run_id}: run numbers are whole numbers from 1 to "
                             f"{MAX_RUN_ID}; `python -m core results list` shows the saved ones")
    return run_id


def _prefixed(columns: str) -> str:
    return ", ".join("r." + c.strip() for c in columns.split(","))


def _any_of(column: str, values: Sequence[str], params: list[Any]) -> str:
    params.extend(values)
    return f"{column} IN ({', '.join('?' for _ in values)})"


def _where(runs: RunFilter, run_ids: Sequence[int] | None) -> tuple[str, list[Any]] | None:
    """The SQL condition (over `gvc_runs r`) and parameters for a filter; None when no run can match."""
    where: list[str] = ["1 = 1"]
    params: list[Any] = []
    for column, values in (("r.source", runs.sources), ("r.kind", runs.kinds), ("r.machine_label", runs.machines)):
        if values:
            where.append(_any_of(column, values, params))
    if runs.devices:
        where.append(f"EXISTS (SELECT 1 FROM gvc_run_devices d WHERE d.run_id = r.id AND "
                     f"{_any_of('d.device', runs.devices, params)})")
    if run_ids is not None:
        keys = [i for i in run_ids if isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= MAX_RUN_ID]
        if not keys:
            return None
        where.append(f"r.id IN ({', '.join('?' for _ in keys)})")
        params.extend(keys)
    return " AND ".join(where), params


def _stored_uids(tx: _Tx, uids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(uids), UID_CHUNK):
        chunk = list(uids[start:start + UID_CHUNK])
        found.update(row[0] for row in tx.run(
            f"SELECT uid FROM gvc_runs WHERE uid IN ({', '.join('?' for _ in chunk)})", chunk))
    return found


def _issue(tx: _Tx, token: str) -> None:
    """Record `token` as issued now (its hash), forgetting tokens issued more than OWNER_KEPT_DAYS ago."""
    since = (datetime.now(timezone.utc) - timedelta(days=OWNER_KEPT_DAYS)).strftime("%Y-%m-%dT%H:%M:%SZ")
    tx.run("DELETE FROM gvc_owners WHERE issued_at < ?", (since,))
    tx.run("INSERT INTO gvc_owners (owner, issued_at) VALUES (?, ?) ON CONFLICT (owner) DO NOTHING",
           (owner_hash(token), files.utc_now()))


def _insert(tx: _Tx, record: RunRecord, owner_token: str | None = None) -> int | None:
    """Insert a checked record with its device rows; None when its uid is already stored."""
    provenance = record.provenance or Provenance(source=MEASURED)
    now = files.utc_now()  # the server's clock: when the run arrived, whatever the run or its file claims
    rows = tx.run(
        "INSERT INTO gvc_runs (uid, kind, created_at, label, machine_label, machine_json, settings_json, "
        "versions_json, payload_json, provenance_json, owner, source, sort_at, summary_json, stored_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (uid) DO NOTHING RETURNING id",
        (record.uid, record.kind, record.created_at, record.label, machine_label(record.machine),
         jsonio.dumps(record.machine), jsonio.dumps(record.settings), jsonio.dumps(record.versions),
         jsonio.dumps(record.result), jsonio.dumps(provenance), owner_hash(owner_token) if owner_token else None,
         provenance.source, min(record.created_at, now), jsonio.dumps(summary_facts(record)), now),
    )
    if not rows:
        return None
    run_id = int(rows[0][0])
    for device in record.devices:
        tx.run("INSERT INTO gvc_run_devices (run_id, device) VALUES (?, ?)", (run_id, device))
    return run_id


def _row_to_run(row: tuple) -> StoredRun | UnreadableRun:
    """A stored row read through the schema like an import; a row that fails is named, not raised."""
    run_id, uid, kind, created_at, label, machine, settings, versions, payload, provenance, owner = row
    where = f"run #{run_id}"
    try:
        obj = {"uid": uid, "kind": kind, "created_at": created_at, "label": label}
        for key, text in (("machine", machine), ("settings", settings), ("versions", versions), ("payload", payload),
                          ("provenance", provenance)):
            if text is not None or key != "provenance":  # a run stored before schema 2 has none
                obj[key] = jsonio.loads(text, what=f"its {key}")
        jsonio.check_tree(obj, where)
        return StoredRun(int(run_id), RunRecord.from_json(obj, where), owner)
    except (DashboardError, TypeError, ValueError) as exc:  # one bad row never hides the others
        return UnreadableRun(int(run_id), str(kind)[:40], str(created_at)[:40], str(exc), owner)


def _row_to_summary(row: tuple) -> RunSummary | None:
    """A listing row from its columns and stored summary; None when it has none, or one of another summary
    version or that cannot be read (it is derived: the run is read in full instead, and its summary rewritten)."""
    run_id, kind, created_at, label, machine, source, owner, summary, stored_at = row
    if summary is None:
        return None
    try:
        facts = jsonio.loads(summary, what="its summary")
        if not isinstance(facts, dict) or facts.get("v") != SUMMARY_VERSION:
            return None
        return RunSummary(int(run_id), str(kind), str(created_at), str(label), str(machine),
                          tuple(str(d) for d in facts["devices"]), str(facts["headline"]), str(facts["load"]),
                          str(source), str(facts["shown"]), owner, str(stored_at or ""))
    except (DashboardError, KeyError, TypeError, ValueError):
        return None


def _resolve(url: str | None) -> tuple[str, str]:
    """('sqlite', path) or ('postgresql', conninfo) from the argument, DATABASE_URL, or the default."""
    url = (url or os.environ.get(DATABASE_URL_ENV) or "").strip()
    if not url:
        return "sqlite", str(data_dir() / SQLITE_FILE)
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql", url
    if url.startswith("sqlite:///"):  # SQLAlchemy's form: sqlite:///relative.db, sqlite:////absolute.db
        path = url[len("sqlite:///"):]
        if path:
            return "sqlite", str(Path(path).expanduser())
    scheme = url.split("://", 1)[0] if "://" in url else ""
    shown = repr(scheme) if re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]{0,19}", scheme) else "something else"
    raise DashboardError(f"{DATABASE_URL_ENV} (or the configured database URL) starts with {shown}; "
                         "use postgresql://user:password@host:5432/dbname, or sqlite:////path/to/results.sqlite3, "
                         "or leave it unset for this machine's own SQLite file")


def open_store(url: str | None = None) -> Store:
    """The store at `url`, else DATABASE_URL, else SQLite in the data folder; tables created or upgraded."""
    store = Store(url)
    store.migrate()
    return store
