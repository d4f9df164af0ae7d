"""The background warm-up of the Results page's imports: started once per process, after the first page,
and covering what the page imports."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from pages.shared import warmup

ROOT = Path(__file__).resolve().parents[1]


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
    names |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return names


def test_it_covers_the_results_pages_own_imports():
    page = {name for name in _imported(ROOT / "pages" / "results.py") if name.startswith(("core.", "pages."))}
    page.discard("pages.shared")  # `from pages.shared import board_widgets, result_store`: named as modules below
    assert page - set(warmup.MODULES) == set(), "add the page's new imports to pages/shared/warmup.py's MODULES"


def test_it_starts_once_and_loads_them():
    first = warmup.start()
    assert warmup.start() is first and first.daemon
    first.join(120)
    assert not first.is_alive() and all(name in sys.modules for name in warmup.MODULES)


def test_the_app_starts_it_after_the_page_has_rendered():
    app = (ROOT / "app.py").read_text()
    assert app.index("st.navigation(PAGES).run()") < app.index("warm_results()")


def test_a_page_waits_for_a_warm_up_in_progress_and_not_once_it_is_done(monkeypatch):
    """Page and warm-up never import at once: a page run waits for the warm-up's end (its Event)."""
    import threading

    done = threading.Event()
    monkeypatch.setattr(warmup, "_done", done)
    monkeypatch.setattr(warmup, "_thread", None)
    assert warmup.wait(0.01), "no warm-up started: nothing to wait for"
    monkeypatch.setattr(warmup, "_thread", threading.Thread(target=lambda: None))
    assert not warmup.wait(0.05), "one in progress: the page waits (here until the timeout)"
    finished = []
    waiter = threading.Thread(target=lambda: finished.append(warmup.wait(30)))
    waiter.start()
    done.set()
    waiter.join(30)
    assert finished == [True] and warmup.wait(0.0)


def test_the_app_waits_for_the_warm_up_before_running_a_page():
    app = (ROOT / "app.py").read_text()
    assert app.index("warm_up_finished()") < app.index("st.navigation(PAGES).run()")


def test_the_app_imports_every_core_package_that_imports_its_own_modules_before_any_page():
    """Such a package entered from two ends by two threads at once is the race warmup.py describes."""
    app = (ROOT / "app.py").read_text()
    own = sorted(init.parent.name for init in (ROOT / "core").glob("*/__init__.py")
                 if any(isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"core.{init.parent.name}.")
                        for node in ast.walk(ast.parse(init.read_text()))))
    assert own == ["results", "store"]
    for name in own:
        assert app.index(f"import core.{name}") < app.index("st.navigation(PAGES).run()")
