"""Load the Results page's heavy modules once per server process, in the background, before anyone opens it.

The first view of Results in a server process used to pay ~1 s of CPU (more on a busy machine) importing
pandas and the result types (pydantic dataclasses built at import) and loading plotly's and Arrow's first-use
code; every later view found them loaded. app.py calls `start()` after each script run: the first call starts
one daemon thread that imports them while the user reads the page they opened, so the page itself never waits
for it (it starts after the page has rendered) and a later Results view finds them loaded.

No page waits for it either: a page importing a module the thread is importing waits for that one module (Python's
per-module import lock), and since no package `__init__` imports its own modules (tests/pages/test_warmup.py), two
threads entering a package from two ends cannot meet a partly initialized module. (They once could: core.results'
and core.store's `__init__`s imported their submodules, and every page waited for the whole warm-up.)
A module that fails here fails again, with its own message, on the page that needs it.
"""

from __future__ import annotations

import importlib
import threading

# The Results page's imports, heaviest first, in the order the page reaches them
MODULES = ("pandas", "pyarrow", "pydantic", "plotly.graph_objects", "core.results.kinds", "core.store.frames",
           "core.store.board", "core.charts.results", "core.charts.ranks", "core.lecture", "core.platform.units",
           "core.errors", "core.store.access", "core.store.records", "pages.shared.entry", "pages.shared.board_widgets",
           "pages.shared.result_store", "pages.shared.results_widgets")

_lock = threading.Lock()
_thread: threading.Thread | None = None


def start() -> threading.Thread:
    """Start the warm-up once per process (later calls return the same thread)."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_warm, name="warm-results-imports", daemon=True)
            _thread.start()
        return _thread


def _warm() -> None:
    try:
        for name in MODULES:
            importlib.import_module(name)
        _first_use()
    except Exception:  # noqa: BLE001 - a warm-up only; the page that needs a module reports its failure
        pass


def _first_use() -> None:
    """What the first chart and table load lazily: plotly's validators, and Arrow's pandas conversion."""
    import pandas as pd
    import plotly.graph_objects as go
    import pyarrow as pa

    go.Figure(go.Scatter(x=[1], y=[1], mode="lines+markers"), layout={"title": "warm-up"}).to_json()
    pa.Table.from_pandas(pd.DataFrame({"n": [1], "s": ["x"]}))
