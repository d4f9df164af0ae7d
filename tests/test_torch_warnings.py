"""No torch warning on stderr under pip's default (CUDA) torch on a machine without a GPU.

That build logs `[W1201 ...] No CUDA runtime is found, using CUDA_HOME=...` when torch.utils.cpp_extension
is imported (torch.utils.benchmark imports it) and a CUDA toolkit folder exists. This machine's torch is
a CPU build, so the test makes it look like the CUDA build without a GPU, as Colab's CPU runtime is.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from core.selfcheck import CPP_EXTENSION_LOGGER, quiet_cpp_extension

ROOT = Path(__file__).resolve().parents[1]
AS_PIP_TORCH_WITHOUT_GPU = """
import sys
import torch
torch.version.cuda = "12.8"  # pip's default torch is a CUDA build...
torch.cuda._is_compiled = lambda: True
torch.cuda.is_available = lambda: False  # ...and this machine has no GPU
if sys.argv[1] == "--import-benchmark":
    import torch.utils.benchmark
    sys.exit(0)
from core.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _run(tmp_path, *args: str) -> subprocess.CompletedProcess:
    toolkit = tmp_path / "cuda"  # a CUDA toolkit folder without a driver: what makes torch look and warn
    toolkit.mkdir(exist_ok=True)
    env = {**__import__("os").environ, "CUDA_HOME": str(toolkit)}
    return subprocess.run([sys.executable, "-c", AS_PIP_TORCH_WITHOUT_GPU, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_cpp_extension_logger_is_quiet_only_inside(capfd):
    log = logging.getLogger(CPP_EXTENSION_LOGGER)
    before = log.level
    with quiet_cpp_extension():
        assert not log.isEnabledFor(logging.WARNING)
        log.warning("No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'")
    assert log.level == before and log.isEnabledFor(logging.WARNING)
    assert "No CUDA runtime" not in capfd.readouterr().err


@pytest.mark.slow
def test_the_imitation_reproduces_the_warning(tmp_path):
    """Without the filter, the same import prints it: the check below can fail."""
    proc = _run(tmp_path, "--import-benchmark")
    assert proc.returncode == 0 and "No CUDA runtime is found" in proc.stderr


@pytest.mark.slow
def test_selfcheck_prints_no_torch_warning(tmp_path):
    proc = _run(tmp_path, "selfcheck", "--only", "cpu-vs-torch-benchmark", "--out", str(tmp_path / "report"))
    assert proc.returncode in (0, 1), proc.stderr  # 1: the check's figure failed on a busy machine, not a crash
    assert "cpu-vs-torch-benchmark" in proc.stderr  # the progress line is there...
    assert "No CUDA runtime" not in proc.stderr and "Warning" not in proc.stderr  # ...and nothing from torch
    assert not [line for line in proc.stderr.splitlines() if line.startswith(("[W", "W1", "W0"))]
