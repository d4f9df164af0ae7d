"""The instructor's *Measure for the class* on the Matmul race page: the key field, the button, and the pin.

Not a page (app.py does not list it). Only a session that entered the configured instructor key
(GPU_VS_CPU_INSTRUCTOR_KEY, checked by result_store.enter_key and its server-wide wrong-key guard) sees the
button; with no key configured nobody does (an open board would let any student pin), and the sidebar says
how to set one. The race itself is the page's one core call (core.matmul.shared_race.join_race with
`for_class`): the same settings with a longer budget per size, which students pressing Run with those
settings join; the page then saves it and `pin` pins it as the room's reference for the Class board.
"""

from __future__ import annotations

import streamlit as st

from core.errors import DashboardError
from core.matmul.collector import SweepCollector
from core.matmul.config import SweepConfig
from core.matmul.shared_race import CLASS_BUDGET_FACTOR, class_config
from core.results.guess import parse_matmul_guess
from core.store.access import INSTRUCTOR, INSTRUCTOR_KEY_ENV
from core.store.database import open_store
from pages.shared import board_widgets as words
from pages.shared import result_store

state = st.session_state
BUTTON_HELP = (f"Runs this race with {CLASS_BUDGET_FACTOR}× the time budget per size (so about "
               f"{CLASS_BUDGET_FACTOR}× the samples), holding the devices; students who press Run with the same "
               "settings join it, other races wait their turn. It is saved and pinned on the Class board as the "
               "room's reference, and the class's guesses are judged against it.")
NO_KEY = f"Measure for the class needs an instructor key: set {INSTRUCTOR_KEY_ENV} on the server (docs/security.md)."
PINNED = "Pinned as the room's reference on the **Class board** (run #{run_id}); the class's guesses are judged there."


def instructor() -> bool:
    """A key is configured and this session entered it (an open board, with no key, is nobody's to pin)."""
    return result_store.instructor_key() is not None and bool(state.get(result_store.INSTRUCTOR_MODE))


def _enter_key() -> None:
    """Check the typed key, then empty the field: the key stays in no widget and no message."""
    outcome = result_store.enter_key(state.get("mm_key", ""))
    state.mm_key = ""
    if outcome is not True:
        state.mm_key_error = words.key_notice(outcome)[1]


def button() -> bool:
    """The sidebar's 'For the instructor' box: the key field, then *Measure for the class*; True when pressed."""
    with st.sidebar.expander("For the instructor", icon=":material/school:", expanded=instructor()):
        if result_store.instructor_key() is None:
            st.caption(NO_KEY)
            return False
        if not instructor():
            if error := state.pop("mm_key_error", None):
                st.error(error)
            st.text_input(words.KEY_LABEL, type="password", key="mm_key", on_change=_enter_key,
                          help="entered once per browser session")
            return False
        return bool(st.button("Measure for the class", key="mm_for_class", icon=":material/push_pin:",
                              help=BUTTON_HELP, use_container_width=True))


def start(asked: SweepConfig, guess: str, for_class: bool) -> SweepCollector:
    """Plan the race the page runs (a bad choice raises here, before anyone waits): the instructor's measurement
    is `class_config(asked)` with no guess (it is the reference, not a prediction); else `asked` and the guess."""
    if for_class:
        return SweepCollector.start(class_config(asked))
    return SweepCollector.start(asked, parse_matmul_guess(guess))


def pin(sweep: SweepCollector, for_class: bool) -> None:
    """Pin the instructor's saved measurement as the room's reference (checked again: the key's session only)."""
    if not for_class or sweep.saved_run is None:
        return
    try:
        if not instructor():
            raise DashboardError("only the instructor (with the instructor key) can pin the room's reference")
        open_store(result_store.store_url()).pin_reference(sweep.saved_run, INSTRUCTOR)
    except DashboardError as exc:
        st.error(f"Measured and saved, but not pinned: {exc}")
        return
    st.success(PINNED.format(run_id=sweep.saved_run), icon=":material/push_pin:")
