"""`pip install .` gives `core` and the `gpu-vs-cpu` console script: the wheel is built and used here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.notebook_runner import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _requirements() -> list[str]:
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_package_depends_on_what_requirements_txt_lists():
    assert PROJECT["dependencies"] == _requirements()
    assert PROJECT["scripts"] == {"gpu-vs-cpu": "core.cli.entry:main"}
    assert "from core.cli.entry import main" in (ROOT / "core" / "__main__.py").read_text()


def _build_wheel(tmp_path: Path) -> Path:
    """The wheel of a copy of what the package needs (the checkout stays free of build/ and egg-info)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "core", src / "core", ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("gpu_vs_cpu-*.whl")
    return wheel


@pytest.mark.slow
def test_the_wheel_holds_every_core_package_and_the_console_script(tmp_path):
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
        archive.extractall(tmp_path / "site")
    packages = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "core").rglob("__init__.py")}
    assert packages >= {"core", "core/cli", "core/results", "core/store", "core/platform"}
    assert {f"{p}/__init__.py" for p in packages} <= names
    assert "core/notebook.py" in names and not [n for n in names if n.startswith(("tests/", "pages/"))]
    assert "gpu-vs-cpu = core.cli.entry:main" in entry_points

    # What the installed script runs, from the unpacked wheel alone (not this checkout).
    script = "import sys; from core.cli.entry import main; main()"
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run([sys.executable, "-c", script, "devices", "--json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "torch_version" in json.loads(done.stdout)
    where = subprocess.run([sys.executable, "-c", "import core; print(core.__file__)"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
    assert where.stdout.strip().startswith(str(tmp_path / "site"))
    bad = subprocess.run([sys.executable, "-c", script, "matmul", "--sizes", "0"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("error: matrix sizes")
