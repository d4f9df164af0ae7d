"""The Results page's listing: summaries stored beside each run, filters in SQL, pages by LIMIT/OFFSET,
and the schema-3 migration that writes the summaries of a board's existing runs."""

from __future__ import annotations

import json

import pytest

from core.store import database

from core.store.database import open_store
from core.store.records import RunFilter, machine_label
from core.results.machine import read_machine
from tests.result_samples import LAB, LAPTOP, matmul_payload, train_payload, save_payload
from tests.store.test_store import store, store_url  # noqa: F401  (the fixtures: SQLite, and PostgreSQL in the slow tier)


@pytest.fixture
def board(store):  # noqa: F811
    ids = {"laptop": save_payload(store, "matmul", matmul_payload(LAPTOP), {}, label="Ana"),
           "lab": save_payload(store, "matmul", matmul_payload(LAB), {}),
           "train": save_payload(store, "train", train_payload("cuda:0"), {}, machine=LAB)}
    ids["imported"] = store.import_json(json.dumps(matmul_payload(LAPTOP)).encode(), file="ben.json").run_ids[0]
    return store, ids


def test_summaries_are_what_the_full_runs_say_and_read_no_payload(board, monkeypatch):
    store, _ = board  # noqa: F811 - the board's store, not the fixture of that name
    full = {r.run_id: r.summary for r in store.list_runs()}

    def no_payload(row):
        raise AssertionError("a listing read a payload")

    monkeypatch.setattr(database, "_row_to_run", no_payload)
    listing = store.read_summaries()
    assert {r.run_id: r for r in listing.runs} == full and not listing.unreadable
    assert [r.run_id for r in listing.runs] == sorted(full, reverse=True), "newest first"
    imported = next(r for r in listing.runs if r.imported)
    assert imported.source == "imported" and imported.title.startswith(f"#{imported.run_id} matmul (imported)")


def test_filters_are_sql_and_combine(board):
    store, ids = board  # noqa: F811 - the board's store, not the fixture of that name

    def listed(**values):
        runs = RunFilter.of(**values)
        assert store.count_runs(runs) == len(found := [r.run_id for r in store.read_summaries(runs).runs])
        return sorted(found)

    assert listed(kinds=["train"]) == [ids["train"]]
    assert listed(kinds=["train", "matmul"]) == sorted(ids.values())
    assert listed(sources=["imported"]) == [ids["imported"]]
    assert listed(devices=["cuda:0"]) == sorted([ids["lab"], ids["train"]])
    assert listed(devices=["cuda:0"], kinds=["matmul"]) == [ids["lab"]]
    laptop = store.get(ids["laptop"]).machine_label
    assert listed(machines=[laptop]) == sorted([ids["laptop"], ids["imported"]])
    assert listed(machines=[laptop], sources=["measured"]) == [ids["laptop"]]
    assert listed(machines=["no such machine"]) == []
    assert RunFilter.of(kinds=["train", "matmul"]) == RunFilter.of(kinds=["matmul", "train", "train"]), "cached alike"


def test_pages_by_limit_and_offset(board):
    store, ids = board  # noqa: F811 - the board's store, not the fixture of that name
    newest = sorted(ids.values(), reverse=True)
    assert [r.run_id for r in store.read_summaries(limit=2).runs] == newest[:2]
    assert [r.run_id for r in store.read_summaries(limit=2, offset=2).runs] == newest[2:]
    assert [r.run_id for r in store.read_summaries(run_ids=[ids["lab"], 0]).runs] == [ids["lab"]]


def test_filter_choices_cover_the_whole_board(board):
    store, _ = board  # noqa: F811 - the board's store, not the fixture of that name
    machines, devices, sources = store.filter_choices()
    assert devices == ["cpu", "cuda:0"] and sources == ["imported", "measured"]
    assert machines == sorted({r.machine_label for r in store.list_runs()})


def test_an_export_of_more_runs_than_one_query_takes(store, monkeypatch):  # noqa: F811
    monkeypatch.setattr(database, "UID_CHUNK", 2)
    saved = [save_payload(store, "matmul", matmul_payload(LAPTOP), {}) for _ in range(5)]
    runs = json.loads(store.export_json(saved))["runs"]
    assert len(runs) == 5


def test_schema_2_boards_get_their_summaries_and_keep_unreadable_rows_named(store_url):  # noqa: F811
    with pytest.MonkeyPatch.context() as schema_2:
        schema_2.setattr(database, "MIGRATIONS", database.MIGRATIONS[:2])
        schema_2.setattr(database, "SCHEMA_VERSION", 2)
        old = open_store(store_url)
        with old._transaction() as tx:  # what schema 2's insert wrote, for a good row and a bad one
            for uid, payload in (("good", json.dumps(matmul_payload(LAPTOP))), ("bad", '{"results": "garbage"}')):
                tx.run("INSERT INTO gvc_runs (uid, kind, created_at, label, machine_label, machine_json, "
                       "settings_json, versions_json, payload_json, source, sort_at) "
                       "VALUES (?, 'matmul', '2025-01-01T00:00:00Z', '', ?, ?, '{}', '{}', ?, 'measured', "
                       "'2025-01-01T00:00:00Z')",
                       (uid, machine_label(read_machine(LAPTOP, "machine")), json.dumps(LAPTOP), payload))
    with pytest.MonkeyPatch.context() as small_batches:
        small_batches.setattr(database, "SUMMARY_BATCH", 1)  # the batches' loop, not one query
        store = open_store(store_url)
    assert store.schema_version() == database.SCHEMA_VERSION
    with store._transaction(write=False) as tx:
        written = dict(tx.run("SELECT uid, summary_json FROM gvc_runs"))
    assert written["bad"] is None and json.loads(written["good"])["devices"] == ["cpu"]
    listing = store.read_summaries()
    assert [r.run_id for r in listing.runs] == [store.list_runs()[0].run_id] and len(listing.unreadable) == 1
    assert "results: expected a list" in listing.unreadable[0].reason
    assert listing.runs[0] == store.list_runs()[0].summary


@pytest.mark.parametrize("summary", ['{"v": 1, "headline": "yesterday\'s wording", "devices": [], "load": "", '
                                     '"shown": "measured"}', "{not json", '{"v": 2}'])
def test_a_summary_of_another_version_is_read_again_and_rewritten(store, summary):  # noqa: F811
    run_id = save_payload(store, "matmul", matmul_payload(LAPTOP), {})
    with store._transaction() as tx:
        tx.run("UPDATE gvc_runs SET summary_json = ? WHERE id = ?", (summary, run_id))
    assert store.read_summaries().runs == [store.get(run_id).summary]
    with store._transaction(write=False) as tx:
        [(written,)] = tx.run("SELECT summary_json FROM gvc_runs")
    assert json.loads(written)["v"] == database.SUMMARY_VERSION, "rewritten: the next listing reads only columns"
