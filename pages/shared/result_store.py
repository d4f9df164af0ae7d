"""Page-side glue for the result store: the database URL from Streamlit's secrets, and saving a run.

Not a page (app.py does not list it). core never imports streamlit, so reading `st.secrets` and
showing the outcome of a save live here; the pages call `save_run(...)` once after a run finishes.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.errors import DashboardError
from core.store import DATABASE_URL_ENV, open_store


def store_url() -> str | None:
    """DATABASE_URL from .streamlit/secrets.toml when set; None lets core use the environment or SQLite."""
    try:
        value = st.secrets.get(DATABASE_URL_ENV)
    except FileNotFoundError:  # no secrets file at all: the usual case
        return None
    text = str(value).strip() if value is not None else ""
    return text or None


def save_run(kind: str, payload: dict[str, Any], settings: dict[str, Any], *, label: str = "") -> int | None:
    """Save a finished run for the Results page; a store that fails is a warning, never a lost run.

    Call it after the run's results are already in st.session_state, so nothing depends on it.
    """
    try:
        store = open_store(store_url())
        run_id = store.save(kind, payload, settings, label=label)
    except DashboardError as exc:
        st.warning(f"The run was not saved to the Results page: {exc}", icon=":material/save:")
        return None
    st.toast(f"Saved as run #{run_id} (see Results).", icon=":material/save:")
    return run_id
