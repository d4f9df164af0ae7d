"""`python -m core` (core/__main__.py): output complete, exit status kept, a closed pipe is no traceback."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test starts `python -m core`, which imports torch

ROOT = Path(__file__).resolve().parents[2]


def _core(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "core", *args], cwd=ROOT, stderr=subprocess.PIPE, text=True,
                            **kwargs)


def test_output_to_a_file_is_complete_and_the_status_kept(tmp_path):
    out = tmp_path / "devices.json"
    with out.open("w") as f:
        proc = _core("devices", "--json", stdout=f)
        assert proc.wait(120) == 0, proc.stderr.read()
    assert out.read_text().rstrip().endswith("}")  # flushed before the process left without teardown
    bad = _core("matmul", "--sizes", "0", stdout=subprocess.DEVNULL)
    assert bad.wait(120) == 2 and bad.stderr.read().startswith("error: ")


def test_a_reader_that_leaves_early_is_no_traceback():
    proc = _core("devices", stdout=subprocess.PIPE)
    proc.stdout.close()  # like `python -m core devices | head -0`
    assert proc.wait(120) == 141
    assert "Traceback" not in proc.stderr.read()
