"""The background warm-up of the Results page's imports: started once per process, after the first page,
and covering what the page imports."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from pages.shared import warmup

ROOT = Path(__file__).resolve().parents[2]


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return names


def test_it_covers_the_results_pages_own_imports():
    page = {name for name in _imported(ROOT / "pages" / "results.py") if name.startswith(("core.", "pages."))}
    page -= {"pages.shared", "core.store"}  # `from pages.shared import result_store`: named as modules below
    assert page - set(warmup.MODULES) == set(), "add the page's new imports to pages/shared/warmup.py's MODULES"


def test_it_starts_once_and_loads_them():
    first = warmup.start()
    assert warmup.start() is first and first.daemon
    first.join(120)
    assert not first.is_alive() and all(name in sys.modules for name in warmup.MODULES)


def test_the_app_starts_it_after_the_page_has_rendered():
    app = (ROOT / "app.py").read_text()
    assert app.index("st.navigation(PAGES).run()") < app.index("warm_results()")


def _top_level_imports(path: Path) -> set[str]:
    """Modules a file imports when it is imported (not inside a function)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return names


def test_no_package_init_imports_its_own_modules():
    """Two threads entering one package from two ends (one importing the package, whose __init__ imports its
    modules; one importing a module, which imports the package face) could meet a partly initialized module,
    which is why every page once waited for the warm-up. With thin __init__s neither import order nor a wait
    matters."""
    inits = [*(ROOT / "core").glob("**/__init__.py"), *(ROOT / "pages").glob("**/__init__.py")]
    assert len(inits) > 5
    for init in inits:
        package = ".".join(init.parent.relative_to(ROOT).parts)
        own = {name for name in _top_level_imports(init) if name == package or name.startswith(package + ".")}
        assert not own, f"{init.relative_to(ROOT)} imports {sorted(own)}: import them where they are used"


def test_the_app_imports_no_core_module_and_waits_for_nothing():
    app = (ROOT / "app.py").read_text()
    assert not {name for name in _top_level_imports(ROOT / "app.py") if name.startswith("core")}
    assert "wait" not in app and not hasattr(warmup, "wait")
