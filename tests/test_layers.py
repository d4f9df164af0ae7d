"""The layers docs/architecture.md draws, checked on every import `core` makes.

The table is read from the doc itself (the code block under "Layers: what may import what"), so the
doc and this test cannot drift: a module the doc places nowhere fails here, and so does an import
that points up the drawing. Lines separated by a `|` line are layers, top first; the paths on the
lines of one layer share it. A path names a folder (`core/matmul`: the folder and everything in
it), a file (`core/errors.py`), or a pattern (`core/charts/<page>.py`: any file there); the most
precise one wins, so `core/charts/axis_style.py` sits lower than the other chart modules.

Every `import` and `from ... import` counts, wherever it is: at the top, inside a function, under
`if TYPE_CHECKING:` (as in tests/test_import_cycles.py: a lazy import up the layers still ties the
lower module to the upper one). Three rules:

1. `core` never imports streamlit, `pages` or `app`: pages render, core computes.
2. A chart module (`core/charts/`) imports neither torch nor a runner. A runner is a core module
   outside `core/platform` that imports torch or the job protocol (`core.platform.jobs`): it
   measures. A chart draws a result it is handed; importing a runner for a type or a helper drags
   torch and the measurement along, and ties the figure to the code that made the numbers.
3. A module imports from its own layer or below, never above.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = "docs/architecture.md"
HEADING = "## Layers: what may import what"

NEVER_IN_CORE = ("streamlit", "pages", "app")  # top-level names core must not import
PLATFORM = "core.platform"
JOBS = "core.platform.jobs"
CHARTS = "core.charts"
TORCH = "torch"

PATH_TOKEN = re.compile(r"app\.py|pages/|core/[\w/<>.]*\w")  # "app.py," and "pages/," lose their commas


def layers_from_doc(text: str) -> list[list[str]]:
    """The doc's layers, top first, each the paths written on its lines."""
    after = text.split(HEADING, 1)[1]
    block = after.split("```", 2)[1]
    layers: list[list[str]] = [[]]
    for line in block.splitlines():
        if line.strip() == "|":
            layers.append([])
        else:
            layers[-1].extend(PATH_TOKEN.findall(line))
    return [layer for layer in layers if layer]


def _precision(pattern: str, path: str) -> int | None:
    """How precisely `pattern` names the file `path` (3 the file itself, 2 a pattern, 1 a folder), None if not."""
    if "<" in pattern:
        regex = re.sub(r"<\w+>", "[^/]+", re.escape(pattern).replace(r"\<", "<").replace(r"\>", ">"))
        return 2 if re.fullmatch(regex, path) else None
    if pattern.endswith(".py"):
        return 3 if path == pattern else None
    return 1 if path.startswith(pattern.rstrip("/") + "/") else None


def layer_of(path: str, layers: Sequence[Sequence[str]]) -> int | None:
    """The index of the layer the most precise pattern places `path` in (0 the top), None if no pattern does."""
    best: tuple[int, int] | None = None  # (precision, layer)
    for index, layer in enumerate(layers):
        for pattern in layer:
            precision = _precision(pattern, path)
            if precision is not None and (best is None or precision > best[0]):
                best = (precision, index)
    return None if best is None else best[1]


@dataclass(frozen=True)
class Import:
    target: str  # a module of the tree ("core.matmul.engine") or an outside top-level name ("torch")
    line: int


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute name a `from` import starts from (relative imports resolved against the package)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    base = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
             known: Mapping[str, Path], package: str) -> Iterator[str]:
    """What one statement imports: modules of `package` by full name, anything else by its top-level name."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        source = _resolve(node, module, is_package)
        names = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
    for name in names:
        if name == package or name.startswith(package + "."):
            while name not in known and "." in name:  # `import core.a.b` of a name that is not a module
                name = name.rsplit(".", 1)[0]
            yield name
        else:
            yield name.split(".")[0]


@dataclass(frozen=True)
class Tree:
    """The modules of one package: their files (relative, with /) and every import each makes."""

    files: dict[str, str]
    imports: dict[str, list[Import]]

    def imports_directly(self, module: str, target: str) -> bool:
        return any(i.target == target for i in self.imports[module])

    def is_runner(self, module: str) -> bool:
        return not _inside(module, PLATFORM) and (self.imports_directly(module, TORCH)
                                                   or self.imports_directly(module, JOBS))


def read_tree(root: Path, package: str) -> Tree:
    paths = {_module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}
    imports: dict[str, list[Import]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        imports[name] = [Import(t, node.lineno) for node in ast.walk(tree)
                         if isinstance(node, (ast.Import, ast.ImportFrom))
                         for t in _targets(node, name, path.name == "__init__.py", paths, package)]
    files = {name: path.relative_to(root).as_posix() for name, path in paths.items()}
    return Tree(files, imports)


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def violations(tree: Tree, layers: Sequence[Sequence[str]]) -> list[str]:
    """Every broken rule, one line each: the module's file and line, the import, the rule."""
    found: list[str] = []
    placed = {m: layer_of(path, layers) for m, path in tree.files.items()}
    found += [f"{path}: in no layer of {DOC}'s drawing; add it there" for m, path in tree.files.items()
              if placed[m] is None]
    for module, imports in tree.imports.items():
        here = f"{tree.files[module]}:"
        for imp in imports:
            if imp.target in NEVER_IN_CORE:
                found.append(f"{here}{imp.line} imports {imp.target}: core never imports streamlit or the pages")
            elif _inside(module, CHARTS) and imp.target == TORCH:
                found.append(f"{here}{imp.line} imports torch: a chart draws a result, it never measures")
            elif _inside(module, CHARTS) and imp.target in tree.files and tree.is_runner(imp.target):
                found.append(f"{here}{imp.line} imports the runner {imp.target} (it imports torch or the job "
                             "protocol): a chart imports result types and pure helpers only")
            if imp.target in tree.files:
                mine, theirs = placed[module], placed[imp.target]
                if mine is not None and theirs is not None and theirs < mine:
                    found.append(f"{here}{imp.line} imports {imp.target}, a layer above it "
                                 f"({tree.files[imp.target]}): an arrow points down only")
    return found


def test_core_keeps_the_layers_the_architecture_doc_draws() -> None:
    layers = layers_from_doc((ROOT / DOC).read_text(encoding="utf-8"))
    tree = read_tree(ROOT, "core")
    assert len(tree.files) > 50 and "core.charts.roofline" in tree.files  # the walk really saw the package
    assert len(layers) >= 5, layers  # the drawing was found and parsed
    found = violations(tree, layers)
    assert not found, f"imports against {DOC} (imports inside functions and under TYPE_CHECKING count):\n  " + \
        "\n  ".join(found)


def test_the_doc_drawing_is_parsed_into_its_layers() -> None:
    layers = layers_from_doc((ROOT / DOC).read_text(encoding="utf-8"))
    assert layers[0] == ["app.py", "pages/"]
    assert "core/charts/<page>.py" in layers[2] and "core/cli" in layers[1]
    features = layers[3]
    assert {"core/matmul", "core/roofline", "core/classifier", "core/parallel", "core/store"} <= set(features)
    assert layer_of("core/charts/roofline.py", layers) == 2
    assert layer_of("core/charts/axis_style.py", layers) == layer_of("core/platform/clock.py", layers) == 4
    assert layer_of("core/results/matmul.py", layers) == layer_of("core/errors.py", layers) == 5
    assert layer_of("core/nowhere.py", layers) is None


SYNTHETIC_DOC = f"""# Made up
{HEADING}

```
app.py, pages/                  the top
   |
core/charts/<page>.py           figures
   |
core/feature                    a feature
   |
core/charts/look.py             the shared look
core/platform                   the machine
core/__init__.py
```
"""


def _write(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_a_synthetic_tree_that_breaks_every_rule_fails(tmp_path: Path) -> None:
    _write(tmp_path, {
        "core/__init__.py": "",
        "core/charts/__init__.py": "",
        "core/charts/look.py": "import plotly\n",
        "core/charts/page.py": "from core.charts import look\nfrom core.feature.pure import Result\n"
                               "def draw():\n    from core.feature.run import helper\n",
        "core/charts/greedy.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch.nn\n",
        "core/feature/__init__.py": "",
        "core/feature/pure.py": "from ..charts.look import x\n",
        "core/feature/run.py": "from core.platform.jobs import run_job\n",
        "core/feature/upward.py": "def f():\n    from core.charts.page import draw\n",
        "core/platform/__init__.py": "",
        "core/platform/jobs.py": "import torch\nimport streamlit as st\n",
        "core/stray.py": "",
    })
    layers = layers_from_doc(SYNTHETIC_DOC)
    found = violations(read_tree(tmp_path, "core"), layers)
    assert found == [
        "core/stray.py: in no layer of docs/architecture.md's drawing; add it there",
        "core/charts/greedy.py:3 imports torch: a chart draws a result, it never measures",
        "core/charts/page.py:4 imports the runner core.feature.run (it imports torch or the job protocol): "
        "a chart imports result types and pure helpers only",
        "core/feature/upward.py:2 imports core.charts.page, a layer above it (core/charts/page.py): "
        "an arrow points down only",
        "core/platform/jobs.py:2 imports streamlit: core never imports streamlit or the pages",
    ], found
    tree = read_tree(tmp_path, "core")
    assert tree.is_runner("core.feature.run") and not tree.is_runner("core.feature.pure")
    assert not tree.is_runner("core.platform.jobs")  # the platform measures by nature; it is not a runner


def test_a_clean_synthetic_tree_passes(tmp_path: Path) -> None:
    _write(tmp_path, {
        "core/__init__.py": "",
        "core/charts/__init__.py": "",
        "core/charts/look.py": "",
        "core/charts/page.py": "from core.charts.look import x\nfrom core.feature import pure\n",
        "core/feature/__init__.py": "",
        "core/feature/pure.py": "from core.charts.look import x\nimport core.platform.clock\n",
        "core/feature/run.py": "import torch\nfrom . import pure\n",
        "core/platform/__init__.py": "",
        "core/platform/clock.py": "import torch\n",
    })
    assert violations(read_tree(tmp_path, "core"), layers_from_doc(SYNTHETIC_DOC)) == []
