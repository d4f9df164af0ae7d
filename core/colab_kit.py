"""`python -m core colab-kit --out DIR`: the Colab notebook plus this project's wheel, for a student with
only a Colab account.

The notebook's install cell takes a wheel uploaded in Colab's Files panel when there is one, so the
student needs no repository URL. The wheel is built here from the running code, without network and
without a build backend: a wheel is a zip of the package with a `.dist-info` folder (METADATA, WHEEL,
entry_points.txt, RECORD with each file's sha256), which `pip install` reads like any other.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from core.errors import DashboardError

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "core"
NOTEBOOK = ROOT / "notebooks" / "colab.ipynb"
PYPROJECT = ROOT / "pyproject.toml"
WHEEL_TAG = "py3-none-any"  # pure Python: the same wheel installs on Colab's Linux and anywhere else
ASSETS: tuple[str, ...] = ()  # non-Python files the package needs at run time, relative to core/ (none yet)


@dataclass(frozen=True)
class Project:
    """What the wheel's METADATA says, from pyproject.toml (one source with `pip install .`)."""

    name: str
    version: str
    summary: str
    requires_python: str
    dependencies: tuple[str, ...]
    scripts: dict[str, str]

    @property
    def dist(self) -> str:
        """The wheel file's name part: '-' becomes '_' (PEP 427)."""
        return self.name.replace("-", "_")


@dataclass(frozen=True)
class Kit:
    notebook: Path
    wheel: Path


def project() -> Project:
    try:
        data = tomllib.loads(PYPROJECT.read_text())["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise DashboardError(f"the Colab kit is built from a checkout of this project; {PYPROJECT} cannot be "
                             f"read ({exc})") from None
    return Project(name=data["name"], version=data["version"], summary=data.get("description", ""),
                   requires_python=data.get("requires-python", ""), dependencies=tuple(data.get("dependencies", ())),
                   scripts=dict(data.get("scripts", {})))


def _metadata(p: Project) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {p.name}", f"Version: {p.version}", f"Summary: {p.summary}"]
    lines += [f"Requires-Python: {p.requires_python}"] if p.requires_python else []
    lines += [f"Requires-Dist: {d}" for d in p.dependencies]
    return "\n".join(lines) + "\n"


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def package_files() -> list[Path]:
    """The files the wheel ships: the package's modules and its listed ASSETS, nothing else.

    By rule, not by what lies under core/ (a `core/.env`, a results.sqlite3, editor swap files and
    .mypy_cache/ all went into the wheel every browser can download, issue 30): `.py` files whose every
    part is a Python name, in folders that are packages (an `__init__.py`), no dotfiles. In a git checkout,
    only those git tracks too (a stray untracked module stays home); a pip-installed copy has no git and
    the rule alone applies.
    """
    chosen = [f for f in PACKAGE.rglob("*.py") if _is_module(f)] + [PACKAGE / a for a in ASSETS]
    tracked = _git_tracked()
    return sorted(f for f in chosen if f.is_file() and (tracked is None or f.relative_to(ROOT).as_posix() in tracked))


def _is_module(path: Path) -> bool:
    parts = path.relative_to(ROOT).with_suffix("").parts
    folders = [ROOT.joinpath(*parts[:i]) for i in range(1, len(parts))]
    return (path.suffix == ".py" and all(p.isidentifier() for p in parts)
            and all((folder / "__init__.py").is_file() for folder in folders))


def _git_tracked() -> set[str] | None:
    """The paths under core/ that git tracks, or None where this is no git checkout (a pip-installed copy)."""
    import subprocess

    if not (ROOT / ".git").exists():
        return None
    try:
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--", "core"], capture_output=True,
                                timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {name for name in listed.decode(errors="replace").split("\0") if name}


def build_wheel(out: Path) -> Path:
    """The wheel of the running code in `out` (no network, no build backend)."""
    p = project()
    info = f"{p.dist}-{p.version}.dist-info"
    wheel = out / f"{p.dist}-{p.version}-{WHEEL_TAG}.whl"
    entries: list[tuple[str, bytes]] = [(f.relative_to(ROOT).as_posix(), f.read_bytes()) for f in package_files()]
    entries.append((f"{info}/METADATA", _metadata(p).encode()))
    entries.append((f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: core.colab_kit\nRoot-Is-Purelib: true\n"
                                     f"Tag: {WHEEL_TAG}\n".encode()))
    if p.scripts:
        scripts = "".join(f"{name} = {target}\n" for name, target in p.scripts.items())
        entries.append((f"{info}/entry_points.txt", f"[console_scripts]\n{scripts}".encode()))
    record = "".join(f"{name},{_digest(data)},{len(data)}\n" for name, data in entries) + f"{info}/RECORD,,\n"
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            zf.writestr(name, data)
        zf.writestr(f"{info}/RECORD", record)
    return wheel


def write_kit(out: Path) -> Kit:
    """colab.ipynb and the wheel in `out`: upload both to Colab (the notebook, then the wheel in its Files panel)."""
    if not NOTEBOOK.is_file():
        raise DashboardError(f"the Colab notebook {NOTEBOOK} is missing: "
                             "the kit is built from a checkout of this project")
    from core.platform.paths import output_folder  # platformdirs: a --no-deps install still imports this module

    out = output_folder(out, "--out")  # before any work: a file, /proc, a read-only folder is one line
    notebook = out / NOTEBOOK.name
    try:
        shutil.copyfile(NOTEBOOK, notebook)
        return Kit(notebook=notebook, wheel=build_wheel(out))
    except OSError as exc:  # the disk filled, or the folder changed under us
        raise DashboardError(f"cannot write the Colab kit to {out} ({exc.strerror or type(exc).__name__}); "
                             "give --out a writable folder with room") from None


def kit_downloads() -> list[tuple[str, bytes]]:
    """(file name, bytes) of the notebook and the wheel, for a page's download buttons."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        kit = write_kit(Path(folder))
        return [(kit.notebook.name, kit.notebook.read_bytes()), (kit.wheel.name, kit.wheel.read_bytes())]
