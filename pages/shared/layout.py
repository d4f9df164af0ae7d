"""The app's page layout for a classroom projector (1280 × 720): less empty space above the title, a narrower
sidebar.

Not a page (app.py does not list it). Streamlit leaves about 6 rem (96 px) above a page's title;
on a 720-pixel projector that is room the Run button, its progress bar and the first result need
to stay above the fold, so app.py trims it once for every page. Its sidebar starts 300 px wide: a quarter of
1,280 for the page list and a few settings. config.toml has no option for it; Streamlit 1.67's
`initial_sidebar_state` takes a width (app.py passes SIDEBAR_PX), but only if the page's config reaches the
browser before the sidebar is drawn, which a server's first, slow run misses (measured: 300 px on the first
page of a fresh server, 240 px after). So the style below holds the open sidebar at SIDEBAR_PX: it still
collapses and opens with its arrow (checked in Chromium at 1280 × 720); dragging it wider is what it gives up.
"""

from __future__ import annotations

import streamlit as st

TOP_PADDING_REM = 2.5  # still clears the toolbar (the menu at the top right) at 1280 × 720
SIDEBAR_PX = 240  # the widest page name ("Data-parallel scaling") and the settings' labels still fit on a line or two;
# the main column gains 60 px: fewer wrapped lines above the first chart
PROJECTOR_CSS = f"""<style>
[data-testid="stMainBlockContainer"] {{ padding-top: {TOP_PADDING_REM}rem; }}
[data-testid="stSidebar"][data-collapsed="false"] {{ width: {SIDEBAR_PX}px !important; min-width: {SIDEBAR_PX}px; }}
</style>"""


def projector_layout() -> None:
    """Trim the space above every page's title (a style element: it takes no room of its own)."""
    st.html(PROJECTOR_CSS)
