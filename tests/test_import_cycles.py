"""No import circles inside `core`, counting every import a module makes, wherever it makes it.

A circle hidden by a function-level import (or by `if TYPE_CHECKING:`) still runs at import or
call time, or still ties two modules so that neither can be read, tested or moved without the
other. So the graph below counts *every* `import` and `from ... import` statement in a module:
at the top, inside functions and methods, and under `if TYPE_CHECKING:`. A TYPE_CHECKING-only
import is not a runtime circle, but it is a design circle all the same (the figure builder that
needs the section's result type, and the section that needs the figure builder, want to be one
module or to be wired by a third), so it counts too.

Edges: `import core.a.b` and `from core.a import b` (b a module) point at `core.a.b`;
`from core.a import name` (name not a module) points at the package `core.a` itself. Relative
imports are resolved against the importing module's package. A package's own `__init__` importing
its submodules is an ordinary edge; importing `core.a.b` does not add an edge to `core.a`'s
`__init__` (every package would otherwise be a circle with its children).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
Graph = dict[str, set[str]]

# core.results is the schema every layer reads (docs/architecture.md: "depends on nothing above it"), so it
# imports nothing of core but itself and core.errors: otherwise the package circle results <-> platform
# (platform's jobs and load probe build results' MachineLoad) is back, hidden between modules.
SCHEMA = "core.results"
SCHEMA_MAY_IMPORT = ("core.results", "core.errors", "core.platform.units")  # units: the one formatter, a leaf


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of `package` (a folder under `root`), by dotted name."""
    return {_module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}


def _base(module: str, is_package: bool, level: int) -> str:
    """The package a relative import of `level` dots starts from."""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    return ".".join(parts[: len(parts) - (level - 1)])


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
             known: Mapping[str, Path]) -> Iterator[str]:
    """The modules of the graph one import statement points at."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in known:
                yield alias.name
        return
    source = node.module or ""
    if node.level:
        base = _base(module, is_package, node.level)
        source = f"{base}.{source}" if source else base
    for alias in node.names:
        if f"{source}.{alias.name}" in known:
            yield f"{source}.{alias.name}"  # from package import module
        elif source in known:
            yield source  # from module import name


def import_graph(root: Path, package: str) -> Graph:
    """Module -> the modules of `package` it imports, counting imports anywhere in its body."""
    known = _modules(root, package)
    graph: Graph = {}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[name] = {t for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                       for t in _targets(node, name, is_package, known)}
    return graph


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module, and modules that import themselves (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # recursion depth is bounded by the number of modules (a few hundred)
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def cycle_path(graph: Mapping[str, set[str]], component: list[str]) -> str:
    """One concrete circle through a component, as 'core.a -> core.b -> core.a' (shortest back to the start)."""
    members, start = set(component), component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w == start:
                return " -> ".join(paths[v] + [start])
            if w in members and w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    raise AssertionError(f"{component} is not a circle")


def _describe(graph: Mapping[str, set[str]], components: list[list[str]]) -> str:
    return "\n".join(f"  {cycle_path(graph, c)}   (component: {', '.join(c)})" for c in components)


def test_core_has_no_import_circles() -> None:
    graph = import_graph(ROOT, "core")
    assert len(graph) > 50 and "core.parallel.registry" in graph  # the walk really saw the package
    found = circles(graph)
    assert not found, "import circles in core (imports inside functions and under TYPE_CHECKING count):\n" + \
        _describe(graph, found)


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_result_schema_imports_nothing_above_it() -> None:
    graph = import_graph(ROOT, "core")
    edges = {(a, b) for a, targets in graph.items() if _inside(a, SCHEMA) for b in targets
             if not any(_inside(b, allowed) for allowed in SCHEMA_MAY_IMPORT)}
    assert any(_inside(a, SCHEMA) for a in graph)
    assert not edges, f"{SCHEMA} imports above itself: {sorted(edges)}"


def _write(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_a_circle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    _write(tmp_path, {"pkg/__init__.py": "",
                      "pkg/a.py": "from pkg.b import thing\n",
                      "pkg/b.py": "def thing():\n    from pkg import a\n    return a\n",
                      "pkg/c.py": "import os\nimport pkg.a\n"})
    graph = import_graph(tmp_path, "pkg")
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.a"}}
    assert circles(graph) == [["pkg.a", "pkg.b"]]
    assert cycle_path(graph, ["pkg.a", "pkg.b"]) == "pkg.a -> pkg.b -> pkg.a"


def test_relative_and_type_checking_imports_count(tmp_path: Path) -> None:
    _write(tmp_path, {"pkg/__init__.py": "from .sub import x\n",
                      "pkg/sub/__init__.py": "from .deep import x\n",
                      "pkg/sub/deep.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    from ..top import T\nx = 1\n",
                      "pkg/top.py": "from . import sub\nfrom .sub import deep\n",
                      "pkg/self.py": "import pkg.self\n"})
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg"] == {"pkg.sub"}
    assert graph["pkg.sub"] == {"pkg.sub.deep"}
    assert graph["pkg.sub.deep"] == {"pkg.top"}
    assert graph["pkg.top"] == {"pkg.sub", "pkg.sub.deep"}
    assert circles(graph) == [["pkg.self"], ["pkg.sub", "pkg.sub.deep", "pkg.top"]]


def test_an_acyclic_graph_has_no_circles(tmp_path: Path) -> None:
    _write(tmp_path, {"pkg/__init__.py": "from pkg import a\n", "pkg/a.py": "from pkg.b import y\n",
                      "pkg/b.py": "y = 1\n"})
    assert circles(import_graph(tmp_path, "pkg")) == []
