"""ruff over the whole tree, with pyproject.toml's rules: any finding fails the fast tier, and so CI.

The rules and why they were chosen are in pyproject.toml's [tool.ruff] comments. ruff is a
development requirement (requirements-dev.txt); a checkout without it skips these tests with a
hint, but CI (CI=true, as .ci/run sets) fails instead, so a forgotten install cannot pass unlinted.
ruff runs in well under a second, so this belongs in the fast tier.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "pyproject.toml"
Ruff = Callable[..., subprocess.CompletedProcess[str]]
LIMIT = 120  # pyproject.toml's line-length
COMMENTED = "    return None  # "  # a line padded with a comment up to a chosen width


def _run_ruff(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m ruff check ARGS` from the project root, without a cache (nothing written by a test)."""
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.fixture
def ruff() -> Ruff:
    if importlib.util.find_spec("ruff") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("ruff is not installed, and CI must lint: pip install -r requirements-dev.txt")
        pytest.skip("ruff is not installed: pip install -r requirements-dev.txt (CI fails here instead)")
    return _run_ruff


def test_the_tree_has_no_lint_findings(ruff: Ruff) -> None:
    run = ruff(".")
    assert run.returncode == 0, f"ruff found problems (fix them, or say why in a `# noqa: CODE - reason`):\n" \
        f"{run.stdout}{run.stderr}"


def test_ruff_fails_on_each_kind_of_finding_the_project_checks(ruff: Ruff, tmp_path: Path) -> None:
    """A file with one finding per selected family fails, under the project's own settings."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import os\n"  # F401: unused
        "\n"
        "\n"
        "def f() -> None:\n"
        "    try:\n"
        "        pass\n"
        "    except Exception:\n"  # BLE001: blind, and no reason given
        "        pass\n"
        "    x = 1  # noqa: E731\n"  # RUF100: a noqa no rule needs
        f"{COMMENTED}{'x' * (LIMIT + 1 - len(COMMENTED))}\n"  # E501: one character too long
        "y = 1 \n",  # W291: trailing whitespace
        encoding="utf-8")
    run = ruff("--config", str(CONFIG), str(bad))
    assert run.returncode == 1, run.stdout + run.stderr
    found = {line.split()[1] for line in run.stdout.splitlines() if line.startswith(str(bad))}
    assert {"F401", "BLE001", "RUF100", "E501", "W291", "F841"} <= found, run.stdout


def test_ruff_passes_a_clean_file_at_the_line_limit(ruff: Ruff, tmp_path: Path) -> None:
    """The other side: a line of exactly the limit and a blind except with its reason are fine."""
    good = tmp_path / "good.py"
    good.write_text(
        "def f() -> None:\n"
        "    try:\n"
        "        pass\n"
        "    except Exception:  # noqa: BLE001 - a reason\n"
        "        pass\n"
        f"{COMMENTED}{'x' * (LIMIT - len(COMMENTED))}\n",
        encoding="utf-8")
    assert len(good.read_text(encoding="utf-8").splitlines()[-1]) == LIMIT
    run = ruff("--config", str(CONFIG), str(good))
    assert run.returncode == 0, run.stdout + run.stderr
