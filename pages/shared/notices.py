"""One-line notices several pages show: the busy-machine warning beside a timed figure, and the no-GPU badge.

Not a page (app.py does not list it). The busy text comes from core (`MachineLoad.notice`, which the CLI
prints too); the badge is page wording, a link to the Hardware check page, where the full no-GPU advice
(`core.platform.devices.GET_A_GPU`) is shown.
"""

from __future__ import annotations

import streamlit as st

from core.results.load import MachineLoad

HARDWARE_PAGE = "pages/hardware.py"
NO_GPU_BADGE = "No GPU here. How to get one free: Hardware check"  # the short form of GET_A_GPU


def load_notice(load: MachineLoad | None) -> None:
    """'Machine busy: figures may be noisy (...)' when the job's probe found the machine busy; else nothing."""
    if load is not None and load.notice:
        st.warning(load.notice, icon=":material/speed:")


def gpu_badge(what_changes: str = "") -> None:
    """A one-line link to Hardware check, where the full advice on getting a GPU is; `what_changes` says
    in a few words what this page does without one."""
    if what_changes:
        st.caption(f"Without a GPU, {what_changes}.")
    st.page_link(HARDWARE_PAGE, label=NO_GPU_BADGE, icon=":material/memory:")
