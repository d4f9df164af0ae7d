"""`python -m core colab-kit`: the notebook and a wheel of the running code, built offline; the wheel installs."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import pytest

from core.cli import main
from core.colab_kit import package_files, project, write_kit


def test_kit_writes_the_notebook_and_a_wheel_of_every_core_file(tmp_path, capsys):
    assert main(["colab-kit", "--out", str(tmp_path / "kit"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    p = project()
    assert out["wheel"].endswith(f"{p.dist}-{p.version}-py3-none-any.whl")
    notebook = json.loads(open(out["notebook"]).read())
    text = "".join("".join(c["source"]) for c in notebook["cells"])
    assert "OWNER/REPO" not in text and 'glob.glob("/content/gpu_vs_cpu-*.whl")' in text
    with zipfile.ZipFile(out["wheel"]) as wheel:
        names = set(wheel.namelist())
        assert {"core/__init__.py", "core/cli/entry.py", "core/colab_kit.py"} <= names
        assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
        info = f"{p.dist}-{p.version}.dist-info"
        metadata = wheel.read(f"{info}/METADATA").decode()
        assert f"Name: {p.name}" in metadata and "Requires-Dist: torch>=2.3,<3" in metadata
        assert "gpu-vs-cpu = core.cli.entry:main" in wheel.read(f"{info}/entry_points.txt").decode()
        record = wheel.read(f"{info}/RECORD").decode().splitlines()
        assert len(record) == len(names) and all(line.count(",") == 2 for line in record)
    assert len([n for n in names if n.startswith("core/")]) == len(package_files())


@pytest.mark.slow
def test_the_wheel_installs_without_dependencies_into_a_fresh_venv(tmp_path):
    kit = write_kit(tmp_path / "kit")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                    "-q", str(kit.wheel)], check=True, timeout=300)
    proc = subprocess.run([str(python), "-c", "import core.errors, core.colab_kit; print(core.errors.__file__)"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert str(venv) in proc.stdout  # the installed copy, not this checkout
    assert (venv / "bin" / "gpu-vs-cpu").is_file()  # the console script
    # (only modules without third-party imports load here: --no-deps left pydantic, torch and the rest out)


def test_hardware_check_offers_the_kit_and_start_here_does_without_a_gpu(app, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    for page in ("pages/hardware.py", "pages/home.py"):
        app.switch_page(page).run()
        assert not app.exception
        labels = [b.proto.label for b in app.get("download_button")]
        assert labels == ["Download for Colab: colab.ipynb", f"Download for Colab: {project().dist}-{project().version}"
                          "-py3-none-any.whl"], page
