"""The Colab kit end to end (issue 22, item 6): `python -m core colab-kit --out DIR` builds the notebook and the
wheel; the wheel goes with --no-deps into a fresh venv, and the kit's notebook runs headless on the CPU in a kernel
of that venv, importing the project from the wheel, never from this checkout.

The fresh venv has no packages of its own: torch, pydantic, ipykernel and the rest come from this project's venv
through a .pth file placed after the venv's own site-packages (what Colab's preinstalled packages are to a
student), so the test needs no network.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.notebook_runner import EXPORT, ROOT, nbclient_or_skip, run_notebook, text_of

pytestmark = pytest.mark.slow  # a wheel, a venv and a kernel running the notebook: about a minute


def _kit(out: Path) -> tuple[Path, Path]:
    done = subprocess.run([sys.executable, "-m", "core", "colab-kit", "--out", str(out), "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    paths = json.loads(done.stdout)
    return Path(paths["notebook"]), Path(paths["wheel"])


def _venv_with(wheel: Path, venv: Path) -> Path:
    """A fresh venv holding only the wheel (installed --no-deps), seeing this venv's packages after its own."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True, timeout=300)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "project-packages.pth").write_text("\n".join(sorted(ours)) + "\n")
    return python


def _kernel(python: Path, jupyter: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernel spec that starts ipykernel with the venv's Python, found through JUPYTER_PATH."""
    spec = jupyter / "kernels" / "colab-kit-wheel"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "the Colab kit's wheel", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter))
    return spec.name


def test_the_kit_s_notebook_runs_on_the_cpu_from_the_kit_s_wheel_in_a_fresh_venv(tmp_path, monkeypatch):
    nbclient_or_skip()
    notebook, wheel = _kit(tmp_path / "kit")
    python = _venv_with(wheel, tmp_path / "venv")
    kernel = _kernel(python, tmp_path / "jupyter", monkeypatch)
    workdir = tmp_path / "content"
    workdir.mkdir()
    nb = run_notebook(workdir, monkeypatch, notebook=notebook, kernel_name=kernel, checkout=False,
                      LABEL="from the wheel", last_cell="import core, sys\nprint('core from', core.__file__)\n"
                                                       "print('python', sys.executable)")
    shown = text_of(nb)
    assert "ready: python -m core is installed" in shown
    assert f"core from {tmp_path / 'venv'}" in shown and str(ROOT) not in shown.split("core from", 1)[1]
    assert f"python {python}" in shown
    assert "selfcheck: no timing was checked" in shown and "GPU parts are skipped" in shown  # quick, no GPU
    export = json.loads((workdir / EXPORT).read_text())
    assert sorted(run["kind"] for run in export["runs"]) == ["matmul", "train"]
