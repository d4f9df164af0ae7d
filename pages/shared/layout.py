"""The app's page layout for a classroom projector (1280 × 720): less empty space above the title, a narrower
sidebar.

Not a page (app.py does not list it). Streamlit leaves about 6 rem (96 px) above a page's title;
on a 720-pixel projector that is room the Run button, its progress bar and the first result need
to stay above the fold, so app.py trims it once for every page. Its sidebar starts 300 px wide: a quarter of
1,280 for the page list and a few settings, so app.py starts it at SIDEBAR_PX (Streamlit 1.67's
`initial_sidebar_state` takes a width in pixels; config.toml has no such option). It stays collapsible and
resizable; a student who drags it wider keeps that width (the browser remembers it).
"""

from __future__ import annotations

import streamlit as st

TOP_PADDING_REM = 2.5  # still clears the toolbar (the menu at the top right) at 1280 × 720
SIDEBAR_PX = 240  # the widest page name ("Data-parallel scaling") and the settings' labels still fit on a line or two;
# the main column gains 60 px: fewer wrapped lines above the first chart
PROJECTOR_CSS = f"""<style>
[data-testid="stMainBlockContainer"] {{ padding-top: {TOP_PADDING_REM}rem; }}
</style>"""


def projector_layout() -> None:
    """Trim the space above every page's title (a style element: it takes no room of its own)."""
    st.html(PROJECTOR_CSS)
