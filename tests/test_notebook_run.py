"""The whole Colab notebook, executed headless on the CPU: its no-GPU branch, its export, the class board."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.store.database import open_store
from tests.notebook_runner import EXPORT, ROOT, nbclient_or_skip, run_notebook, text_of

pytestmark = pytest.mark.slow  # a kernel runs the notebook: tens of seconds each


def test_notebook_runs_the_cpu_parts_skips_the_gpu_parts_and_its_export_imports(tmp_path, monkeypatch):
    nb = run_notebook(tmp_path, monkeypatch, LABEL="Colab notebook")
    shown = text_of(nb)
    assert "Runtime > Change runtime type" in shown and "GPU parts are skipped" in shown
    assert "skip  gpu-sweep" in shown and "skip  cuda-events" in shown
    # quick mode without a GPU checks only the devices: never "can be trusted" after checking no timing (issue 34)
    assert ("selfcheck: no timing was checked, so nothing here vouches for the timings yet: 1 passed, 0 failed, "
            "4 skipped") in shown and "can be trusted" not in shown
    report = json.loads((tmp_path / "gpu-vs-cpu-results" / "selfcheck.json").read_text())
    assert report["kind"] == "selfcheck" and len(report["checks"]) == 5

    export = tmp_path / EXPORT
    done = subprocess.run([sys.executable, "-m", "core", "results", "import", str(export), "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env={**os.environ})
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["imported"]) == 2
    runs = open_store().list_runs()  # the tests' own data folder (isolated_dirs)
    assert sorted(r.kind for r in runs) == ["matmul", "train"]
    assert {r.label for r in runs} == {"Colab notebook"}
    sweep = next(r for r in runs if r.kind == "matmul")
    assert [p.n for p in sweep.result.results] == [64, 128, 256], "the quick sweep timed every size"


def test_notebook_stops_without_a_gpu_when_a_gpu_is_required(tmp_path, monkeypatch):
    nbclient = nbclient_or_skip()
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="Stopped: no GPU here"):
        run_notebook(tmp_path, monkeypatch, REQUIRE_GPU=True)
    assert not (tmp_path / EXPORT).exists()


def test_notebook_with_database_url_lands_its_runs_on_the_class_board(tmp_path, monkeypatch, postgres_url):
    nb = run_notebook(tmp_path, monkeypatch, DATABASE_URL=postgres_url)
    assert "class board: 2 new run(s), 0 already there" in text_of(nb)
    board = open_store(postgres_url).list_runs()
    assert sorted(r.kind for r in board) == ["matmul", "train"]
    assert open_store().list_runs() == [], "the board, not this machine's own store"
