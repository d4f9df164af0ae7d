"""The Class board's block for the room's reference: the instructor's pinned measurement with its noise, and the
class's guesses judged against it. Not a page (app.py does not list it).

What it shows is core.store.class_reference's; this module only draws it. The pinned run is read once per pin
(kept in session state) and a fragment asks the store every refresh whether the pin moved (one small query), so
an unpin reaches every open board without a reload. Only the instructor's session (the key entered, on the
Matmul race or the Results page) sees *Unpin*.
"""

from __future__ import annotations

from dataclasses import asdict

import streamlit as st

from core.errors import DashboardError
from core.plain_text import for_markdown
from core.platform.units import readable
from core.store.access import Access
from core.store.class_board import ClassBoard, who
from core.store.class_reference import RoomReference, judged_guesses, read_reference, tally
from core.store.database import Store
from pages.shared.class_measure import instructor

state = st.session_state
SHOWN = "cb_reference"  # session state: the RoomReference drawn, or None
NOISE_COLUMNS = {"faster": st.column_config.TextColumn("faster / compared"),
                 "ratio": st.column_config.TextColumn("ratio", help="the slower median over the faster"),
                 "low": st.column_config.TextColumn("95 % low"), "high": st.column_config.TextColumn("95 % high"),
                 "why": st.column_config.TextColumn("why it cannot tell")}
GUESS_COLUMNS = {"who": st.column_config.TextColumn("name or machine"),
                 "run_id": st.column_config.NumberColumn("run", format="#%d"),
                 "against_reference": st.column_config.TextColumn("against the room's reference")}


def _unpin(store: Store) -> None:
    try:
        store.unpin_reference(Access(instructor=instructor()))
    except DashboardError as exc:
        state.cb_reference_error = str(exc)


def reference(store: Store, board: ClassBoard, every: float) -> RoomReference | None:
    """Draw the room's reference, if one is pinned, and return it (the crossover chart draws its band)."""
    try:
        pinned = store.pinned_reference()
        shown = state[SHOWN] = read_reference(store, state.get(SHOWN))
    except DashboardError as exc:
        st.caption(f"Cannot read the room's reference just now: {exc}")
        return None
    _watch(store, pinned, every)
    if error := state.pop("cb_reference_error", None):
        st.error(error)
    if shown is None:
        return None
    budget = f", {shown.budget_s:g} s per size" if shown.budget_s else ""
    with st.container(border=True):
        judged = judged_guesses(board, shown)
        st.markdown(f"**:material/push_pin: The room's reference** (run #{shown.run_id}, "
                    f"{for_markdown(who(shown.run))}{budget}): {for_markdown(shown.headline)}  \n{tally(judged)}")
        noise = shown.noise_summary()
        with st.expander(f"Its noise, size by size{f' ({noise})' if noise else ''}: faster, same, or cannot tell"):
            st.caption("A size is called only when the 95 % interval of its ratio says so; *cannot tell* where it "
                       "does not.")
            st.dataframe(readable([asdict(r) for r in shown.noise()]), hide_index=True, key="cb_reference_noise",
                         column_config=NOISE_COLUMNS)
        with st.expander("Each guess against the reference"):
            st.dataframe(readable([asdict(j) for j in judged]), hide_index=True, key="cb_reference_guesses",
                         column_config=GUESS_COLUMNS)
        if instructor():
            st.button("Unpin the reference", key="cb_unpin", icon=":material/keep_off:", on_click=_unpin,
                      args=(store,), help="the run stays saved; the board shows no reference until the next one")
    return shown


def _watch(store: Store, pinned: int | None, every: float) -> None:
    @st.fragment(run_every=every)
    def pin_check() -> None:
        """An unpin (or a pin of a run already on the board) redraws the board at the next refresh."""
        try:
            if store.pinned_reference() != pinned:
                st.rerun()
        except DashboardError:
            return

    pin_check()
