"""`python -m core colab-kit`: the notebook and a wheel of the running code, built offline; the wheel installs."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import pytest

from core.cli import main
from core.colab_kit import ROOT, package_files, project, write_kit


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


def _fake_project(root, *, git: bool):
    """A checkout with a module, a subpackage, and what must never ship: secrets, a database, caches, swap files,
    a folder that is no package, an untracked module."""
    import subprocess

    files = {"core/__init__.py": "", "core/a.py": "A = 1\n", "core/sub/__init__.py": "", "core/sub/b.py": "",
             "core/.env": "DATABASE_URL=postgresql://t:secret@h/db\n", "core/results.sqlite3": "SQLite format 3",
             "core/.a.py.swp": "swap", "core/a.py~": "backup", "core/.mypy_cache/m.py": "", "core/notes/c.py": "",
             "core/__pycache__/a.cpython-312.pyc": "", "core/.hidden/d.py": "", "core/my-module.py": ""}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "add", "-f", "core/__init__.py", "core/a.py", "core/sub/__init__.py",
                        "core/sub/b.py", "core/.env"], check=True)
        (root / "core" / "untracked.py").write_text("")
    return root


@pytest.mark.parametrize("git", [True, False])
def test_the_wheel_ships_modules_only_never_secrets_databases_or_caches(tmp_path, monkeypatch, git):
    """Issue 30: a core/.env, a results.sqlite3, swap files and .mypy_cache/ went into the wheel."""
    import core.colab_kit as kit

    root = _fake_project(tmp_path / "checkout", git=git)
    monkeypatch.setattr(kit, "ROOT", root)
    monkeypatch.setattr(kit, "PACKAGE", root / "core")
    shipped = {f.relative_to(root).as_posix() for f in kit.package_files()}
    expected = {"core/__init__.py", "core/a.py", "core/sub/__init__.py", "core/sub/b.py"}
    assert shipped == expected


def test_the_real_wheel_holds_only_tracked_modules():
    names = {f.relative_to(ROOT).as_posix() for f in package_files()}
    assert names and all(n.endswith(".py") and "/." not in n for n in names)


@pytest.fixture
def no_build(monkeypatch):
    import core.colab_kit as kit

    def never(*args):
        raise AssertionError("the wheel was built before --out was checked")

    monkeypatch.setattr(kit, "build_wheel", never)


@pytest.mark.parametrize("where, says", [
    ("file", "is a file"), ("file/sub", "which is a file"), ("/proc/gvc-kit", "a view of the kernel"),
    ("/sys/gvc-kit", "a view of the kernel"), ("/proc/self", "a view of the kernel"),
])
def test_every_out_is_checked_before_work(where, says, tmp_path, capsys, no_build):
    (tmp_path / "file").write_text("x")
    out = where if where.startswith("/") else str(tmp_path / where)
    assert main(["colab-kit", "--out", out]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err and "Traceback" not in err


@pytest.mark.parametrize("refusal", ["access", "immutable"])
def test_a_read_only_or_immutable_out_folder_is_one_line(refusal, tmp_path, capsys, monkeypatch, no_build):
    import os
    import tempfile

    if refusal == "access":  # chmod 555 does not stop root: what os.access says for a user it would stop
        monkeypatch.setattr(os, "access", lambda *a, **k: False)
    else:  # chattr +i: os.access says yes, creating a file fails
        def refuse(*a, **k):
            raise PermissionError(1, "Operation not permitted")
        monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    assert main(["colab-kit", "--out", str(tmp_path / "kit")]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot be written to" in err and "\n" not in err
