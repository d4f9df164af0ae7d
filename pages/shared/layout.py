"""The app's page layout for a classroom projector (1280 × 720): less empty space above the title.

Not a page (app.py does not list it). Streamlit leaves about 6 rem (96 px) above a page's title;
on a 720-pixel projector that is room the Run button, its progress bar and the first result need
to stay above the fold, so app.py trims it once for every page.
"""

from __future__ import annotations

import streamlit as st

TOP_PADDING_REM = 2.5  # still clears the toolbar (the menu at the top right) at 1280 × 720
PROJECTOR_CSS = f"""<style>
[data-testid="stMainBlockContainer"] {{ padding-top: {TOP_PADDING_REM}rem; }}
</style>"""


def projector_layout() -> None:
    """Trim the space above every page's title (a style element: it takes no room of its own)."""
    st.html(PROJECTOR_CSS)
