"""A lock, data or cache folder that cannot be used is one line saying which setting to change."""

from __future__ import annotations

import pytest

from core.cli import main
from core.errors import DashboardError
from core.platform import paths
from core.platform.device_lock import hold_devices


@pytest.mark.parametrize("env, get", [("GPU_VS_CPU_LOCK_DIR", paths.lock_dir), ("GPU_VS_CPU_DATA_DIR", paths.data_dir),
                                      ("GPU_VS_CPU_CACHE_DIR", paths.cache_dir)])
def test_a_file_where_the_folder_should_be(monkeypatch, tmp_path, env, get):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv(env, str(blocker))
    with pytest.raises(DashboardError, match=f"set {env} to a writable folder"):
        get()


def test_a_read_only_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_VS_CPU_LOCK_DIR", str(tmp_path))
    monkeypatch.setattr(paths.os, "access", lambda path, mode: False)  # root ignores chmod, so fake the answer
    with pytest.raises(DashboardError, match="is not writable"):
        paths.lock_dir()


def test_the_lock_line_cannot_be_written(monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_VS_CPU_LOCK_DIR", str(tmp_path))
    (tmp_path / "cpu.queue").write_text("a file where the queue folder goes")
    with pytest.raises(DashboardError, match="cannot write the device line"):
        with hold_devices(["cpu"]):
            pass


@pytest.mark.parametrize("argv", [["matmul", "--sizes", "16", "--budget", "0.05"],
                                  ["why-parallel", "--section", "chain"], ["results", "list"]])
def test_the_cli_says_it_in_one_line(monkeypatch, tmp_path, capsys, argv):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    monkeypatch.setenv("GPU_VS_CPU_LOCK_DIR", str(blocker))
    monkeypatch.setenv("GPU_VS_CPU_DATA_DIR", str(blocker))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    last = err.splitlines()[-1]  # why-parallel names its section first
    assert last.startswith("error: ") and "writable folder" in last
