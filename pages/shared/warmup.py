"""Load the Results page's heavy modules once per server process, in the background, before anyone opens it.

The first view of Results in a server process used to pay ~1 s of CPU (more on a busy machine) importing
pandas and the result types (pydantic dataclasses built at import) and loading plotly's and Arrow's first-use
code; every later view found them loaded. app.py calls `start()` after each script run: the first call starts
one daemon thread that imports them while the user reads the page they opened, so the page itself never waits
for it (it starts after the page has rendered) and a later Results view finds them loaded. A view that comes
while the thread is still importing waits only for what is left: Python's import lock lets no module load twice.
A module that fails here fails again, with its own message, on the page that needs it.
"""

from __future__ import annotations

import importlib
import threading

# The Results page's imports, heaviest first, in the order the page reaches them (core has no import cycles,
# tests/test_import_cycles.py, so a page importing the same modules at the same time cannot deadlock with this)
MODULES = ("pandas", "pyarrow", "pydantic", "plotly.graph_objects", "core.results", "core.store", "core.store.frames",
           "core.store.board", "core.charts.results", "core.charts.ranks", "core.results.cluster", "core.lecture",
           "core.platform.units", "core.errors", "core.store.access", "core.store.records", "pages.shared.entry",
           "pages.shared.board_widgets", "pages.shared.result_store")

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
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001: the page that needs it reports it
            return
    try:
        _first_use()
    except Exception:  # noqa: BLE001: a warm-up only; the pages draw and convert for real
        pass


def _first_use() -> None:
    """What the first chart and table load lazily: plotly's validators, and Arrow's pandas conversion."""
    import pandas as pd
    import plotly.graph_objects as go
    import pyarrow as pa

    go.Figure(go.Scatter(x=[1], y=[1], mode="lines+markers"), layout={"title": "warm-up"}).to_json()
    pa.Table.from_pandas(pd.DataFrame({"n": [1], "s": ["x"]}))
