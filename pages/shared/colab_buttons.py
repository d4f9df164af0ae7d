"""The "Download for Colab" buttons: the Colab notebook and this project's wheel, built once per server.

Not a page (app.py does not list it). Hardware check shows them always, Start here when there is no GPU.
"""

from __future__ import annotations

import streamlit as st

from core.colab_kit import kit_downloads
from core.errors import DashboardError


@st.cache_resource(show_spinner=False)
def _kit() -> list[tuple[str, bytes]]:
    """Built once per server: the running code does not change while it serves (a few hundred kB)."""
    return kit_downloads()


def colab_buttons(key: str) -> None:
    """Two download buttons and the two steps that follow them on Colab."""
    try:
        kit = _kit()
    except DashboardError as exc:
        st.caption(f"The Colab kit cannot be built here: {exc}")
        return
    st.caption("No GPU? Borrow Colab's: download both files, open the notebook in Colab (*File > Upload notebook*), "
               "drop the `.whl` into its Files panel (left), choose *Runtime > Change runtime type > T4 GPU* and "
               "*Run all*. The notebook installs this project from the wheel: no repository address needed.")
    columns = st.columns(len(kit))
    for column, (name, data) in zip(columns, kit):
        column.download_button(f"Download for Colab: {name}", data, name, key=f"{key}_{name}",
                               icon=":material/download:")
