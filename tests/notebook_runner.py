"""Execute notebooks/colab.ipynb headless (nbclient) against this checkout, on the CPU.

The settings cell's Colab form fields (`NAME = value  # @param ...`) are rewritten before the run,
as a student fills in the form; SOURCE stays empty, so the notebook uses this checkout (on the
kernel's PYTHONPATH) instead of installing one. nbclient, nbformat and ipykernel come from
requirements-dev.txt; without them these tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from tests.review_fixtures import write_rt_folder

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "colab.ipynb"
EXPORT = Path("gpu-vs-cpu-results") / "gpu-vs-cpu-results.json"  # under the folder the notebook runs in
CELL_TIMEOUT_S = 180


def nbclient_or_skip() -> Any:
    try:
        import ipykernel  # noqa: F401
        import nbclient
    except ImportError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the notebook tests cannot run under CI: {exc}")
        pytest.skip(f"{exc}: pip install -r requirements-dev.txt")
    return nbclient


def with_settings(source: str, settings: dict[str, Any]) -> str:
    """The settings cell with each named form field set to `repr(value)`; an unknown name is an error."""
    for name, value in settings.items():
        source, found = re.subn(rf"^{name} = .*?(  # @param .*)$", lambda m: f"{name} = {value!r}{m.group(1)}",
                                source, flags=re.M)
        assert found == 1, f"no form field {name} in the settings cell"
    return source


def settings_cell(nb: Any) -> Any:
    return next(c for c in nb.cells if c.cell_type == "code" and "# @param" in c.source)


def run_notebook(workdir: Path, monkeypatch: pytest.MonkeyPatch, *, notebook: Path = NOTEBOOK,
                 kernel_name: str = "python3", checkout: bool = True, last_cell: str = "", **settings: Any) -> Any:
    """Run every cell in `workdir` with the quick CPU settings plus `settings`; returns the executed notebook.

    `checkout`: the kernel imports this checkout (PYTHONPATH); without it, whatever `kernel_name`'s Python has
    installed (the Colab kit's wheel). `last_cell`: code run after the notebook's own cells."""
    nbclient = nbclient_or_skip()
    import nbformat

    data = write_rt_folder(workdir / "reviews")
    nb = nbformat.read(notebook, as_version=4)
    cell = settings_cell(nb)
    cell.source = with_settings(cell.source, {"REQUIRE_GPU": False, "QUICK": True, "DATA": str(data), **settings})
    if last_cell:
        nb.cells.append(nbformat.v4.new_code_cell(last_cell))
    if checkout:
        monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel and its `python -m core` use this checkout
    else:
        monkeypatch.delenv("PYTHONPATH", raising=False)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name=kernel_name,
                                     resources={"metadata": {"path": str(workdir)}})
    client.execute()
    return nb


def text_of(nb: Any) -> str:
    """Everything the code cells printed or displayed as text."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", "") or out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)
