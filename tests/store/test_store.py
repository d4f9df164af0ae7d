"""The result store against SQLite and a real PostgreSQL server: round trips, filters, delete,
export/import, migrations, crashes mid-write, and connection problems."""

from __future__ import annotations


import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from core.errors import DashboardError
from core.matmul.crossover import recomputed
from core.results.kinds import read_result
from core.store.database import SCHEMA_VERSION, open_store
from core.store import database
from core.store.database import Store
from tests.result_samples import LAB, LAPTOP, as_saved, matmul_payload, train_payload, save_payload

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])  # a real server: slow tier
def store_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.sqlite3'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def store(store_url) -> Store:
    return open_store(store_url)


def _count(store: Store) -> int:
    return len(store.list_runs())


def test_round_trip_keeps_payload_machine_settings_and_versions(store):
    mm = matmul_payload(LAB)
    mm_id = save_payload(store, "matmul", mm, {"sizes": [256, 1024, 4096], "tf32": False})
    tr_id = save_payload(store, "train", train_payload("cpu"), {"epochs": 3, "lr": 0.1}, machine=LAPTOP,
                         label="Ana's laptop")

    run = store.get(mm_id)
    assert run.kind == "matmul" and run.payload == as_saved("matmul", {**mm, "settings": run.settings})
    assert run.machine.to_json() == LAB, "a matmul payload brings its own machine description, key for key"
    assert run.settings == {"sizes": [256, 1024, 4096], "tf32": False}
    assert run.versions["torch"] and run.versions["python"]
    assert run.created_at.endswith("Z") and len(run.created_at) == 20
    assert run.devices == ["cpu", "cuda:0"]
    assert run.machine_label == "Lab Xeon 8480C + NVIDIA H200"

    train = store.get(tr_id)
    assert train.payload == as_saved("train", {**train_payload("cpu"), "settings": {"epochs": 3, "lr": 0.1}})
    assert train.machine.to_json() == LAPTOP and train.label == "Ana's laptop"
    assert [r.run_id for r in store.list_runs()] == [tr_id, mm_id], "newest first"


def test_save_without_a_machine_describes_this_one(store):
    from core.platform.hardware import cpu_name

    run = store.get(save_payload(store, "train", train_payload()))
    assert run.machine.cpu is not None and run.machine.cpu.name == cpu_name()


def test_filters_by_machine_device_and_kind(store):
    lab = save_payload(store, "matmul", matmul_payload(LAB))
    laptop = save_payload(store, "matmul", matmul_payload(LAPTOP))
    gpu_train = save_payload(store, "train", train_payload("cuda:0"), machine=LAB)

    def ids(**filters):
        return sorted(r.run_id for r in store.list_runs(**filters))

    assert ids(kind="matmul") == [lab, laptop]
    assert ids(kind="train") == [gpu_train]
    assert ids(device="cuda:0") == [lab, gpu_train]
    assert ids(device="cpu") == [lab, laptop]
    assert ids(machine="Student Laptop CPU i5") == [laptop]
    assert ids(machine="Lab Xeon 8480C + NVIDIA H200", kind="train") == [gpu_train]
    assert ids(device="mps") == []
    assert ids(run_ids=[laptop, gpu_train]) == [laptop, gpu_train]
    assert ids(run_ids=[]) == []


def test_delete(store):
    keep = save_payload(store, "train", train_payload(), machine=LAPTOP)
    gone = save_payload(store, "matmul", matmul_payload(LAB))
    store.delete(gone)
    assert [r.run_id for r in store.list_runs()] == [keep]
    assert store.list_runs(device="cuda:0") == []
    with pytest.raises(DashboardError, match=f"no saved run #{gone}"):
        store.delete(gone)
    with pytest.raises(DashboardError, match="no saved run #999"):
        store.get(999)


def test_values_are_parameters_not_sql(store):
    label = "Robert'); DROP TABLE gvc_runs;-- ? %s"
    run_id = save_payload(store, "train", train_payload(), machine=LAPTOP, label=label)
    assert store.get(run_id).label == label
    assert store.list_runs(machine="x' OR '1'='1") == []
    assert _count(store) == 1


def test_export_then_import_into_another_store_round_trips(store, tmp_path):
    # a sweep whose crossover is what its points give: an import computes it again (issue 30, item 3)
    sweep = recomputed(read_result("matmul", matmul_payload(LAB)))
    save_payload(store, "matmul", sweep.to_json(), {"sizes": [256]})
    save_payload(store, "train", train_payload("cuda:0"), {"epochs": 3}, machine=LAB, label="lab GPU")
    exported = store.export_json()

    other = open_store(f"sqlite:///{tmp_path / 'other.sqlite3'}")
    result = other.import_json(exported, file="class.json", session="s1")
    assert len(result.run_ids) == 2 and result.skipped == 0
    mine = {r.uid: replace(r.record, provenance=None) for r in store.list_runs()}
    theirs = {r.uid: replace(r.record, provenance=None) for r in other.list_runs()}
    assert mine == theirs, "everything but the local id and the provenance survives"
    assert {r.source for r in store.list_runs()} == {"measured"}
    for run in other.list_runs():
        assert (run.provenance.source, run.provenance.file, run.provenance.session, run.provenance.origin) == (
            "imported", "class.json", "s1", "measured"), "an import is marked imported, what the file said kept"
        assert run.provenance.imported_at is not None and "(imported)" in run.title

    again = other.import_json(exported)
    assert again.run_ids == () and again.skipped == 2, "importing the same file twice adds nothing"
    back = store.import_json(other.export_json())
    assert back.skipped == 2 and _count(store) == 2


def test_import_cli_json_files(store):
    mm = matmul_payload(LAPTOP)
    first = store.import_json(json.dumps(mm).encode(), label="Ana")
    tr = store.import_json(json.dumps(train_payload("mps")).encode())
    run = store.get(first.run_ids[0])
    assert run.kind == "matmul" and run.payload == as_saved("matmul", mm)
    assert run.label == "Ana" and run.machine.to_json() == LAPTOP
    trained = store.get(tr.run_ids[0])
    assert trained.kind == "train" and trained.machine.to_json() == {} and trained.machine_label == "unknown machine"
    assert store.import_json(json.dumps(mm).encode()).skipped == 1, "the same CLI file again is not a new run"


def test_export_csv_is_the_tidy_table(store):
    save_payload(store, "matmul", matmul_payload(LAB, sizes=(128, 256)))
    save_payload(store, "train", train_payload("cpu", epochs=2), machine=LAPTOP)
    import io

    import pandas as pd

    frame = pd.read_csv(io.BytesIO(store.export_csv()))
    assert len(frame) == 2 * 2 + 2, "a row per (device, n) of the sweep plus a row per epoch"
    assert set(frame["kind"]) == {"matmul", "train"}
    assert {"n", "median_s", "gflops", "epoch", "test_accuracy", "machine", "series"} <= set(frame.columns)


def test_schema_version_and_migration_hook(store_url, monkeypatch):
    store = open_store(store_url)
    assert store.schema_version() == SCHEMA_VERSION
    run_id = save_payload(store, "train", train_payload(), machine=LAPTOP)

    def add_note_column(tx):
        tx.run("ALTER TABLE gvc_runs ADD COLUMN note TEXT NOT NULL DEFAULT ''")

    monkeypatch.setattr(database, "MIGRATIONS", [*database.MIGRATIONS, add_note_column])
    monkeypatch.setattr(database, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    upgraded = open_store(store_url)
    assert upgraded.schema_version() == SCHEMA_VERSION + 1
    assert upgraded.get(run_id).payload == as_saved("train", train_payload()), "a migration keeps what was saved"
    open_store(store_url)  # opening again runs nothing twice

    monkeypatch.setattr(database, "MIGRATIONS", database.MIGRATIONS[:-1])
    monkeypatch.setattr(database, "SCHEMA_VERSION", SCHEMA_VERSION)
    with pytest.raises(DashboardError, match="newer than this dashboard"):
        open_store(store_url)


def test_two_threads_saving_at_once_lose_nothing(store_url):
    errors: list[BaseException] = []

    def writer():
        try:
            store = open_store(store_url)
            for _ in range(10):
                save_payload(store, "train", train_payload(), machine=LAPTOP)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert _count(open_store(store_url)) == 20


WRITER = textwrap.dedent(
    """
    import sys, time
    from core.store.database import open_store
    from core.results.runs import RunRecord
    from core.store.database import _insert
    from tests.result_samples import LAB, matmul_payload, save_payload

    store = open_store(sys.argv[1])
    sizes = tuple(range(16, 16 + 8 * 400, 8))  # 800 results a run: a write long enough to be hit
    if sys.argv[2] == "loop":
        while True:
            print(save_payload(store, "matmul", matmul_payload(LAB, sizes)), flush=True)
    else:  # stop inside an open transaction, after the run's row is written
        save_payload(store, "matmul", matmul_payload(LAB, sizes))
        with store._transaction() as tx:
            _insert(tx, RunRecord.from_json({"uid": "half-written", "kind": "matmul",
                                             "created_at": "2025-01-01T00:00:00Z", "label": "", "machine": LAB,
                                             "settings": {}, "versions": {}, "payload": matmul_payload(LAB, sizes)},
                                            "run"))
            print("inside", flush=True)
            time.sleep(60)
    """
)


def _writer(url: str, mode: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WRITER, url, mode], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))


def _assert_consistent(store: Store) -> None:
    for run in store.list_runs():
        assert len(run.payload["results"]) == 400 * 2, f"run {run.run_id} was saved half"
        assert store.list_runs(device="cuda:0", run_ids=[run.run_id]), f"run {run.run_id} lost its device rows"
    if store.dialect == "sqlite":
        with sqlite3.connect(store._target) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.slow
def test_a_process_killed_while_saving_in_a_loop_loses_nothing_saved(store_url):
    open_store(store_url)
    proc = _writer(store_url, "loop")
    saved = [int(proc.stdout.readline()) for _ in range(5)]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)

    store = open_store(store_url)
    ids = {r.run_id for r in store.list_runs()}
    assert set(saved) <= ids, "every run reported saved is still there"
    assert len(ids) <= len(saved) + 1, "at most the run committed just before the kill is extra"
    _assert_consistent(store)
    save_payload(store, "train", train_payload(), machine=LAPTOP)  # and the store takes new writes


@pytest.mark.slow
def test_a_process_killed_inside_a_transaction_leaves_no_trace(store_url):
    open_store(store_url)
    proc = _writer(store_url, "mid")
    assert proc.stdout.readline().strip() == "inside"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)

    store = open_store(store_url)
    runs = store.list_runs()
    assert len(runs) == 1 and runs[0].uid != "half-written"
    _assert_consistent(store)
    start = time.monotonic()
    save_payload(store, "train", train_payload(), machine=LAPTOP)
    assert time.monotonic() - start < 10, "the dead writer's lock was released"
    assert _count(store) == 2


def test_default_store_is_sqlite_in_the_data_folder(isolated_dirs):
    store = open_store()
    assert store.dialect == "sqlite"
    assert Path(store._target) == isolated_dirs / "data" / "results.sqlite3"
    with sqlite3.connect(store._target) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_database_url_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'board.sqlite3'}")
    store = open_store()
    save_payload(store, "train", train_payload(), machine=LAPTOP)
    assert (tmp_path / "board.sqlite3").exists()
    assert open_store(f"sqlite:///{tmp_path / 'x.sqlite3'}").list_runs() == [], "an explicit URL wins"


@pytest.mark.parametrize("url", ["mysql://u:secret@host/db", "results.db", "sqlite://", "http://x"])
def test_unsupported_urls_are_refused_without_echoing_them(url):
    with pytest.raises(DashboardError, match="postgresql://user:password@host") as err:
        open_store(url)
    assert "secret" not in str(err.value)


def test_unreachable_postgresql_fails_fast_without_the_password():
    with socket_port() as port:
        url = f"postgresql://teacher:hunter2@127.0.0.1:{port}/class"
        start = time.monotonic()
        unreachable = f"cannot reach the PostgreSQL database class on 127.0.0.1:{port}"
        with pytest.raises(DashboardError, match=unreachable) as err:
            open_store(url)
    assert time.monotonic() - start < database.PG_CONNECT_TIMEOUT_S + 5
    assert "hunter2" not in str(err.value) and "DATABASE_URL" in str(err.value)


def test_a_damaged_sqlite_file_gets_a_message(tmp_path):
    path = tmp_path / "results.sqlite3"
    path.write_bytes(b"this is not a database, it is a text file " * 200)
    with pytest.raises(DashboardError, match="damaged or not a SQLite file"):
        open_store(f"sqlite:///{path}")


def test_an_unwritable_folder_gets_a_message(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DashboardError, match="cannot open the result store"):
        open_store(f"sqlite:///{blocker / 'sub' / 'results.sqlite3'}")


def test_saving_a_bad_payload_is_refused_and_writes_nothing(store):
    bad = matmul_payload(LAB)
    bad["results"][1]["n"] = -4
    with pytest.raises(DashboardError, match=r"payload.results\[1\].n: expected a whole number >= 1"):
        save_payload(store, "matmul", bad)
    with pytest.raises(DashboardError, match="unknown kind of run 'race'"):
        save_payload(store, "race", matmul_payload(LAB))
    assert _count(store) == 0


class socket_port:
    """A localhost port with nothing listening on it."""

    def __enter__(self) -> int:
        import socket

        self._s = socket.socket()
        self._s.bind(("127.0.0.1", 0))
        return self._s.getsockname()[1]

    def __exit__(self, *exc) -> None:
        self._s.close()


def test_payloads_are_stored_as_the_cli_prints_them(store):
    """A page may hand over NaN for 'not measured' and numpy numbers from a DataFrame."""
    import numpy as np

    payload = matmul_payload(LAB)
    payload["results"][0].update(n=np.int64(256), samples=np.int32(7), median_s=np.float64(0.5),
                                 unsynced_s=float("nan"), rel_error=float("inf"))
    run = store.get(save_payload(store, "matmul", payload, {"budget": np.float32(2.0), "path": Path("/x")}))
    first = run.payload["results"][0]
    assert first["n"] == 256 and type(first["n"]) is int and first["median_s"] == 0.5
    assert first["unsynced_s"] is None and first["rel_error"] is None
    assert run.settings == {"budget": 2.0, "path": "/x"}


@pytest.mark.parametrize("url", ["postgresql://teacher:s3cret@localhost:notaport/class",
                                 "postgresql://teacher:s3cret@[::1/class", "postgres://teacher:s3cret@/class?sslmode=nope"])
def test_malformed_postgresql_urls_get_a_message_without_the_password(url):
    with pytest.raises(DashboardError, match="DATABASE_URL") as err:
        open_store(url)
    assert "s3cret" not in str(err.value)


def test_a_sqlite_store_locked_too_long_is_a_message(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'busy.sqlite3'}"
    store = open_store(url)
    monkeypatch.setenv("GPU_VS_CPU_DB_TIMEOUT_S", "0.3")
    blocker = sqlite3.connect(tmp_path / "busy.sqlite3", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer that does not let go
    try:
        started = time.monotonic()
        with pytest.raises(DashboardError, match=r"locked by another program for more than 0.3 s; nothing was "
                                                 r"changed; try again, or raise GPU_VS_CPU_DB_TIMEOUT_S"):
            save_payload(store, "train", train_payload(), machine=LAPTOP)
        assert time.monotonic() - started < 3
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    save_payload(store, "train", train_payload(), machine=LAPTOP)
    assert _count(store) == 1


@pytest.mark.slow  # a real PostgreSQL server
def test_a_postgresql_lock_held_elsewhere_is_one_line_within_seconds(postgres_url, monkeypatch):
    import psycopg

    store = open_store(postgres_url)
    save_payload(store, "train", train_payload(), machine=LAPTOP)
    monkeypatch.setenv("GPU_VS_CPU_DB_TIMEOUT_S", "1")
    with psycopg.connect(postgres_url) as holder:
        holder.execute("LOCK TABLE gvc_runs IN ACCESS EXCLUSIVE MODE")  # held until this block ends
        for action in (store.list_runs, lambda: save_payload(store, "train", train_payload(), machine=LAPTOP),
                       lambda: store.import_json(store_export), lambda: store.delete(1)):
            started = time.monotonic()
            with pytest.raises(DashboardError) as busy:
                action()
            assert time.monotonic() - started < 10
            assert "busy: a lock held elsewhere" in str(busy.value) and "\n" not in str(busy.value)
            assert "nothing was changed" in str(busy.value)
        holder.rollback()
    assert len(store.list_runs()) == 1, "nothing half-saved"


store_export = json.dumps(matmul_payload(LAB)).encode()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "1e308", "soon"])
def test_database_timeout_setting_is_bounded(value, monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_VS_CPU_DB_TIMEOUT_S", value)
    with pytest.raises(DashboardError, match="GPU_VS_CPU_DB_TIMEOUT_S=.* is not a number of seconds from 0.1 to 600"):
        open_store(f"sqlite:///{tmp_path / 'x.sqlite3'}")


def test_run_numbers_stay_consecutive_after_importing_duplicates(store, tmp_path):
    """A skipped duplicate uses up no run number (PostgreSQL's identity would, on a conflicting insert)."""
    first = save_payload(store, "matmul", matmul_payload(LAB))
    exported = store.export_json()
    for _ in range(3):
        assert store.import_json(exported).skipped == 1
    bundle = json.loads(exported)
    bundle["runs"].append(bundle["runs"][0])  # listed twice in one file
    assert store.import_json(json.dumps(bundle).encode()).skipped == 2
    assert save_payload(store, "train", train_payload(), machine=LAPTOP) == first + 1


def _write_raw(store: Store, **columns) -> int:
    row = {"uid": uuid.uuid4().hex, "kind": "matmul", "created_at": "2025-01-01T00:00:00Z", "label": "",
           "machine_label": "x", "machine_json": "{}", "settings_json": "{}", "versions_json": "{}",
           "payload_json": json.dumps(matmul_payload(LAB))} | columns
    with store._transaction() as tx:
        return tx.run(f"INSERT INTO gvc_runs ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)}) RETURNING id",
                      list(row.values()))[0][0]


@pytest.mark.parametrize("columns, reason", [
    ({"payload_json": "{not json"}, "its payload is not valid JSON"),
    ({"machine_json": '{"gpus": 5}'}, "machine.gpus: expected a list"),
    ({"created_at": "0001-01-01T00:00:00+01:00"}, "created_at: expected an ISO 8601 time between 2000 and 2099"),
    ({"kind": "scaling"}, "kind: expected one of matmul, train, roofline"),
    ({"payload_json": json.dumps(matmul_payload(LAB) | {"schema_version": 9})}, "schema version 9, newer"),
    ({"payload_json": "[" * 5000 + "]" * 5000}, "nested too deeply"),
])
def test_a_stored_row_that_cannot_be_read_is_set_apart(store, columns, reason):
    good = save_payload(store, "train", train_payload(), machine=LAPTOP)
    bad = _write_raw(store, **columns)
    listing = store.read_runs()
    assert [r.run_id for r in listing.runs] == [good] and [u.run_id for u in listing.unreadable] == [bad]
    assert reason in listing.unreadable[0].reason and listing.unreadable[0].reason.count("\n") == 0
    assert [r.run_id for r in store.list_runs()] == [good]
    with pytest.raises(DashboardError, match=f"saved run #{bad} cannot be read"):
        store.get(bad)
    store.export_json()  # exports what can be read
    store.delete(bad)
    assert store.read_runs().unreadable == []


@pytest.mark.parametrize("run_id", [0, -1, 2**63, 99999999999999999999, True])
def test_impossible_run_ids_are_no_such_run(store, run_id):
    with pytest.raises(DashboardError, match="there is no saved run"):
        store.delete(run_id)
    with pytest.raises(DashboardError, match="there is no saved run"):
        store.get(run_id)
    assert store.list_runs(run_ids=[run_id]) == []
