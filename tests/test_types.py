"""mypy over core/ with torch's own hints: the one check of the GPU-only paths that needs no GPU.

No test here can run `torch.cuda.synchronize()` on a real device, so a misspelt call or a wrong
argument there would only show on a GPU machine; mypy reads torch's inline hints and reports it
now. The settings live in pyproject.toml's [tool.mypy]; the cache in .mypy_cache/ makes every run
after the first take well under a second.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # mypy: about 30 s on a cold cache

ROOT = Path(__file__).resolve().parents[1]


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m mypy ARGS` from the project root, so pyproject.toml's settings and cache apply."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_core_type_checks_clean() -> None:
    run = _mypy()  # files = ["core"] in pyproject.toml
    assert run.returncode == 0, f"mypy found errors in core/:\n{run.stdout}{run.stderr}"
    assert "Success: no issues found" in run.stdout, run.stdout


def test_mypy_sees_torch_hints(tmp_path: Path) -> None:
    """Without torch's hints (an Any torch) both lines below would pass; they must not."""
    probe = tmp_path / "gpu_vs_cpu_torch_probe.py"
    probe.write_text(
        "import torch\n"
        "\n"
        "\n"
        "def wait_for_gpu() -> None:\n"
        "    torch.cuda.synchronise()\n"
        "    torch.cuda.set_device('cuda:0', 1)\n"
    )
    run = _mypy(str(probe))
    assert run.returncode == 1, f"mypy should reject the probe:\n{run.stdout}{run.stderr}"
    assert f"{probe.name}:5: error: Module has no attribute \"synchronise\"" in run.stdout, run.stdout
    assert f"{probe.name}:6: error: Too many arguments for \"set_device\"" in run.stdout, run.stdout
