"""Only core takes device locks: pages and CLI commands build JobHooks and call core entry points."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCKING = {"hold_devices", "run_job"}
CALLERS = sorted(p.relative_to(ROOT).as_posix() for folder in ("pages", "core/cli")
                 for p in (ROOT / folder).rglob("*.py"))


def _imported_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}


@pytest.mark.parametrize("module", CALLERS)
def test_pages_and_the_cli_never_lock_themselves(module):
    assert not _imported_names(ROOT / module) & LOCKING, f"{module} takes a device lock; pass JobHooks to core instead"


def test_the_check_sees_the_pages_and_commands_it_is_about():
    assert {"pages/matmul_race.py", "pages/review_classifier.py", "pages/why_parallel.py",
            "pages/shared/device_wait.py", "core/cli/matmul.py", "core/cli/train.py",
            "core/cli/why_parallel.py"} <= set(CALLERS)
    assert "hold_devices" in _imported_names(ROOT / "core/platform/jobs.py"), "the parser finds a real import"
