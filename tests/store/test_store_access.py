"""Who may delete which run (core.store.access): the owner session, the instructor, nobody else."""

from __future__ import annotations

import json

import pytest

from core.errors import DashboardError
from core.store.database import SCHEMA_VERSION, open_store
from core.store.access import INSTRUCTOR, Access, configured_key, key_matches, owner_hash
from tests.result_samples import LAB, LAPTOP, matmul_payload, save_payload
from tests.store.test_store import store, store_url  # noqa: F401  (the fixtures: SQLite, and PostgreSQL in the slow tier)


def test_owner_instructor_and_stranger(store):  # noqa: F811
    mine = save_payload(store, "matmul", matmul_payload(LAPTOP), {}, owner_token="ana")
    cli = save_payload(store, "matmul", matmul_payload(LAB), {})
    ben = Access(instructor=False, owner_token="ben")
    with pytest.raises(DashboardError, match="saved by another browser session"):
        store.delete(mine, ben)
    with pytest.raises(DashboardError, match="saved by another browser session"):
        store.delete(cli, Access(instructor=False, owner_token="ana")), "a run with no owner is the instructor's"
    assert {r.run_id for r in store.list_runs()} == {mine, cli}, "nothing deleted by a refusal"
    store.delete(mine, Access(instructor=False, owner_token="ana"))
    store.delete(cli)  # the command line is the instructor
    assert store.list_runs() == []


def test_imported_runs_belong_to_the_importing_session(store):  # noqa: F811
    [run_id] = store.import_json(json.dumps(matmul_payload(LAPTOP)).encode(), owner_token="ana",
                                 file="a.json", session="browser session 1").run_ids
    run = store.get(run_id)
    assert run.owner == owner_hash("ana") and "ana" not in repr(run), "the store keeps a hash, never the token"
    assert Access(instructor=False, owner_token="ana").may_delete(run.owner)
    assert not Access(instructor=False, owner_token=None).may_delete(run.owner)
    assert INSTRUCTOR.may_delete(None) and not Access(instructor=False, owner_token="x").may_delete(None)
    assert "owner" not in store.export_json().decode(), "an export carries no owner"


def test_keys_compare_whole_and_unset_means_none(monkeypatch):
    monkeypatch.delenv("GPU_VS_CPU_INSTRUCTOR_KEY", raising=False)
    assert configured_key(None) is None and configured_key("  ") is None
    monkeypatch.setenv("GPU_VS_CPU_INSTRUCTOR_KEY", "from the environment")
    assert configured_key(None) == "from the environment"
    assert configured_key("from secrets") == "from secrets", "the page's secret wins"
    assert key_matches("s3cret-key", "s3cret-key") and key_matches("s3cret-key", " s3cret-key ")
    assert not key_matches("s3cret-key", "s3cret-ke") and not key_matches("s3cret-key", "")
    assert not key_matches(None, "anything") and not key_matches("", "")
    assert "zq9" not in repr(Access(instructor=False, owner_token="zq9"))


def test_a_schema_1_store_upgrades_its_runs_to_measured_with_no_owner(tmp_path):
    from core.store import database

    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    with pytest.MonkeyPatch.context() as schema_1:
        schema_1.setattr(database, "MIGRATIONS", database.MIGRATIONS[:1])
        schema_1.setattr(database, "SCHEMA_VERSION", 1)
        old = open_store(url)
        with old._transaction() as tx:  # what schema 1's insert wrote
            tx.run("INSERT INTO gvc_runs (uid, kind, created_at, label, machine_label, machine_json, settings_json, "
                   "versions_json, payload_json) "
                   "VALUES ('u', 'matmul', '2025-01-01T00:00:00Z', '', 'm', ?, '{}', '{}', ?)",
                   (json.dumps(LAPTOP), json.dumps(matmul_payload(LAPTOP))))
    [run] = open_store(url).list_runs()
    assert run.source == "measured" and run.owner is None and open_store(url).schema_version() == SCHEMA_VERSION
    with pytest.raises(DashboardError, match="saved by another browser session"):
        open_store(url).delete(run.run_id, Access(instructor=False, owner_token="ana"))


def test_the_board_and_each_import_are_capped(store, monkeypatch):  # noqa: F811
    save_payload(store, "matmul", matmul_payload(LAPTOP), {})
    monkeypatch.setenv("GPU_VS_CPU_MAX_RUNS", "2")
    save_payload(store, "matmul", matmul_payload(LAPTOP), {})
    with pytest.raises(DashboardError, match="the board holds 2 runs and its limit is 2, so 1 more cannot be saved; "
                                             "delete old runs .* or raise GPU_VS_CPU_MAX_RUNS"):
        save_payload(store, "matmul", matmul_payload(LAPTOP), {})
    monkeypatch.setenv("GPU_VS_CPU_MAX_RUNS", "100")
    exported = json.loads(store.export_json())
    exported["runs"] = [{**exported["runs"][0], "uid": f"u{i}"} for i in range(5)]
    monkeypatch.setenv("GPU_VS_CPU_MAX_IMPORT_RUNS", "4")
    with pytest.raises(DashboardError, match="the file adds 5 new runs, over the limit of 4 per import"):
        store.import_json(json.dumps(exported).encode())
    assert len(store.list_runs()) == 2, "nothing of a refused import is stored"
    monkeypatch.setenv("GPU_VS_CPU_MAX_IMPORT_RUNS", "many")
    with pytest.raises(DashboardError, match="GPU_VS_CPU_MAX_IMPORT_RUNS='many' is not a whole number"):
        store.import_json(json.dumps(exported).encode())


def test_a_browser_session_saves_at_most_its_runs_per_hour(store, monkeypatch):  # noqa: F811
    from core.store import database

    monkeypatch.setenv("GPU_VS_CPU_MAX_SESSION_RUNS_PER_HOUR", "3")
    for _ in range(2):
        save_payload(store, "matmul", matmul_payload(LAPTOP), {}, owner_token="ana")
    exported = json.loads(store.export_json())
    two = json.dumps({**exported, "runs": [{**exported["runs"][0], "uid": f"u{i}"} for i in range(2)]}).encode()
    with pytest.raises(DashboardError, match="this browser session has saved or imported 2 runs in the last hour "
                                             "and its limit is 3 per hour, so 2 more cannot be saved; wait, "
                                             r"import the file on the server .* or raise "
                                             "GPU_VS_CPU_MAX_SESSION_RUNS_PER_HOUR"):
        store.import_json(two, owner_token="ana")
    save_payload(store, "matmul", matmul_payload(LAPTOP), {}, owner_token="ana")
    for run in store.list_runs():
        store.delete(run.run_id)  # deleting what it saved gives a session no more
    with pytest.raises(DashboardError, match="saved or imported 3 runs in the last hour"):
        save_payload(store, "matmul", matmul_payload(LAPTOP), {}, owner_token="ana")
    assert store.list_runs() == [], "nothing of a refused save is stored"
    store.import_json(two, owner_token="ben")  # another session has its own hour
    save_payload(store, "matmul", matmul_payload(LAPTOP), {})  # the command line has no quota
    assert len(store.list_runs()) == 3
    monkeypatch.setattr(database, "_hour_ago", lambda: "2099-01-01T00:00:00Z")  # an hour later
    save_payload(store, "matmul", matmul_payload(LAPTOP), {}, owner_token="ana")
    monkeypatch.setenv("GPU_VS_CPU_MAX_SESSION_RUNS_PER_HOUR", "0")
    with pytest.raises(DashboardError, match="GPU_VS_CPU_MAX_SESSION_RUNS_PER_HOUR='0' is not a whole number from 1"):
        save_payload(store, "matmul", matmul_payload(LAPTOP), {}, owner_token="ana")


def test_a_token_is_taken_back_only_if_this_server_issued_it(store, monkeypatch):  # noqa: F811
    """Issue 30 item 11: what a browser hands back after a reload is checked against the store."""
    from core.store import database
    from core.store.access import new_owner_token

    issued = new_owner_token()
    assert not store.issued_owner(issued)
    store.issue_owner(issued)
    store.issue_owner(issued)  # twice: still one row
    assert store.issued_owner(issued)
    for forged in (new_owner_token(), "a" * 43, issued + "x", "x' ; alert(1)", "", None, 12):
        assert not store.issued_owner(forged), forged
    with store._transaction(write=False) as tx:
        assert [row[0] for row in tx.run("SELECT owner FROM gvc_owners")] == [owner_hash(issued)], "only its hash"
    monkeypatch.setattr(database, "OWNER_KEPT_DAYS", 0)  # a week later
    with store._transaction() as tx:
        tx.run("UPDATE gvc_owners SET issued_at = '2020-01-01T00:00:00Z'")
    assert not store.issued_owner(issued)
    store.issue_owner(new_owner_token())  # forgets the old ones meanwhile
    with store._transaction(write=False) as tx:
        assert tx.run("SELECT COUNT(*) FROM gvc_owners")[0][0] == 1


def test_a_first_save_issues_its_token_in_the_same_transaction(store):  # noqa: F811
    """A session's first save records its token as issued (one commit, not two): a reload then keeps it."""
    from core.results.kinds import read_result
    from core.store.access import Owner, new_owner_token

    token, other = new_owner_token(), new_owner_token()
    sweep = read_result("matmul", json.loads(json.dumps(matmul_payload(LAPTOP))))
    mine = store.save(sweep, label="first", owner=Owner(token, "measured"), issue=True)
    store.save(sweep, label="not issued", owner=Owner(other, "measured"))
    assert store.issued_owner(token) and not store.issued_owner(other)
    store.delete(mine, Access(instructor=False, owner_token=token))  # and the run is that session's


def test_the_cookie_keeps_only_a_token_the_server_made():
    from core.store.access import cookie_script, new_owner_token

    token = new_owner_token()
    script = cookie_script(token, secure=False)
    assert f"gvc_owner={token}; path=/; max-age=604800; SameSite=Strict'" in script and "Secure" not in script
    assert "; Secure';" in cookie_script(token, secure=True)
    with pytest.raises(ValueError):
        cookie_script("x'; alert(1); '", secure=False)
