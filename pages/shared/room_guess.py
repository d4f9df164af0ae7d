"""The Matmul race page's line about the room's reference: the student's crossover guess judged against the run
the instructor pinned (*Measure for the class*), by the Class board's own judge. Not a page (app.py does not list
it).

The sentence is core.store.class_reference.against_reference's; this module only finds the reference and draws
the line. Nothing is drawn when no reference is pinned (or the store cannot be read) or there is no crossover
guess. After a run the sweep's saved guess is judged (what the board judges), on the race's own settings and
machine; before any run, the guess as typed, on the settings chosen in the sidebar and this machine. The pinned
run is read once per pin (kept in session state): each rerun asks the store only whether the pin moved.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from core.errors import DashboardError
from core.matmul.config import SweepConfig
from core.platform.hardware import inspect_machine
from core.results.guess import parse_matmul_guess
from core.results.matmul import MatmulSweep
from core.store.class_reference import RoomReference, against_reference, read_reference
from core.store.database import open_store
from pages.shared.result_store import store_url

state = st.session_state
KNOWN = "mm_reference"  # session state: the RoomReference last read, or None
ICON = ":material/push_pin:"


def _reference() -> RoomReference | None:
    try:
        state[KNOWN] = read_reference(open_store(store_url()), state.get(KNOWN))
    except DashboardError:  # no store to ask: the race's own comparison still stands
        return None
    return state[KNOWN]


def after_run(shown: MatmulSweep) -> str | None:
    """The line for the sweep's own guess (the one saved and judged on the board), or None."""
    if shown.guess is None or (reference := _reference()) is None:
        return None
    found = against_reference(reference, shown.guess, shown.settings, shown.machine)
    return None if found is None else found.text


def before_run(typed: str, config: Callable[[], SweepConfig]) -> None:
    """Before any run: the guess as typed so far against the reference, for the race the sidebar's settings make."""
    try:
        guess = parse_matmul_guess(typed)
    except DashboardError:  # Run says what is wrong with it
        return
    if guess is None or (reference := _reference()) is None:
        return
    try:
        settings = config().to_dict()
    except DashboardError:  # no device chosen, say: nothing to compare the reference's settings with
        settings = None
    found = against_reference(reference, guess, settings, inspect_machine().record())
    if found is not None:
        st.info(found.text, icon=ICON)
