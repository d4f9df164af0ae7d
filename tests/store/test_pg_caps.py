"""Issue 30.5: caps and quotas hold under concurrent writers on a real PostgreSQL server. Count-then-insert
under READ COMMITTED let 12 concurrent imports against a board cap of 1 store 5, and a session quota of 1 let
4-8 through; SQLite's BEGIN IMMEDIATE already held (tested here too)."""

from __future__ import annotations

import json
import threading

import pytest

from core.errors import DashboardError
from core.store.database import open_store
from tests.result_samples import LAPTOP, matmul_payload

WRITERS = 12


def _import_at_once(url: str, token_of) -> list[str]:
    """WRITERS imports of distinct one-run files, released together; returns each one's outcome."""
    open_store(url)  # the tables exist before the race
    start = threading.Barrier(WRITERS)
    outcomes: list[str] = [""] * WRITERS
    files = [json.dumps(matmul_payload(LAPTOP, sizes=(256 + 8 * i, 1024))).encode() for i in range(WRITERS)]

    def write(i: int) -> None:
        store = open_store(url)
        start.wait()
        try:
            store.import_json(files[i], file=f"{i}.json", owner_token=token_of(i))
            outcomes[i] = "stored"
        except DashboardError as exc:
            outcomes[i] = str(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return outcomes


def _url(request, backend: str, tmp_path) -> str:
    return request.getfixturevalue("postgres_url") if backend == "postgresql" else f"sqlite:///{tmp_path / 'b.sqlite3'}"


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_twelve_concurrent_imports_against_a_board_cap_of_one_store_one(backend, request, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_MAX_RUNS", "1")
    monkeypatch.setenv("GPU_VS_CPU_DB_TIMEOUT_S", "30")
    url = _url(request, backend, tmp_path)
    outcomes = _import_at_once(url, lambda i: f"token {i}")
    assert outcomes.count("stored") == 1, outcomes
    assert all("its limit is 1" in o for o in outcomes if o != "stored"), outcomes
    assert len(open_store(url).list_runs()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgresql", "sqlite"])
def test_a_session_quota_of_one_holds_under_twelve_concurrent_imports(backend, request, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_MAX_SESSION_RUNS_PER_HOUR", "1")
    monkeypatch.setenv("GPU_VS_CPU_DB_TIMEOUT_S", "30")
    url = _url(request, backend, tmp_path)
    outcomes = _import_at_once(url, lambda i: "one session's token")
    assert outcomes.count("stored") == 1, outcomes
    assert all("its limit is 1 per hour" in o for o in outcomes if o != "stored"), outcomes
    assert len(open_store(url).list_runs()) == 1
