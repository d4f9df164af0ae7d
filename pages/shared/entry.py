"""Make every page open through app.py, even as a fresh server's very first request.

With a `pages/` folder beside app.py, Streamlit starts in its legacy pages-folder mode until
some session has run app.py's `st.navigation`. A link such as /matmul_race opened first after a
restart would run the page file alone: no page config, and a sidebar listing every file. Each
page calls `through_app()` first; in that one case it runs app.py (which sets the layout and
navigation and runs this page properly) and ends the direct run.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import streamlit as st

APP = Path(__file__).resolve().parents[2] / "app.py"
FLAG = "_entered_through_app"  # set by app.py on every run
OWNER_COOKIE_DUE = "board_owner_cookie"  # session state: the script that gives the browser its owner token to keep


def mark_entered() -> None:
    """Called by app.py before it runs a page."""
    st.session_state[FLAG] = True


def keep_owner() -> None:
    """Once, after this session's owner token was issued (pages/shared/result_store.py), have the browser keep it
    in a cookie, so a reload keeps the right to delete the runs it saved. In the sidebar, out of the way; the
    script was built there (core.store.access.cookie_script), so this module imports nothing of core."""
    if script := st.session_state.pop(OWNER_COOKIE_DUE, None):
        st.sidebar.html(script, unsafe_allow_javascript=True)


def through_app() -> None:
    """Run app.py instead of this page when Streamlit ran the page file directly; then give the browser
    its owner token to keep, if one was issued since the last run."""
    if st.session_state.get(FLAG):
        keep_owner()
        return
    runpy.run_path(str(APP), run_name="__main__")
    st.stop()
