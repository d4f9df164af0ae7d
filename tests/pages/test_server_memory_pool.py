"""The server's Arrow pool is the system allocator (pages/shared/server_memory.py), unless the operator chose one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = "import pages.shared.server_memory, pyarrow; print(pyarrow.default_memory_pool().backend_name)"


def _pool(env_value: str | None, first: str = "") -> str:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if env_value is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = env_value
    out = subprocess.run([sys.executable, "-c", first + CHECK], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    return out.stdout.strip()


@pytest.mark.slow  # starts Python three times
def test_arrow_uses_the_system_allocator_unless_the_operator_chose():
    assert _pool(None) == "system"
    assert _pool(None, first="import pyarrow; pyarrow.default_memory_pool(); ") == "system", "imported before"
    assert _pool("mimalloc") == "mimalloc"


def test_app_imports_it_before_any_page():
    app = (ROOT / "app.py").read_text()
    assert app.index("import pages.shared.server_memory") < app.index("st.navigation")
