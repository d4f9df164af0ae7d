"""Class board: the class's latest runs on the projector, its guesses against what it measured, and the
hardware in the room. It checks the store every few seconds and redraws only when a run arrived."""

from dataclasses import asdict
from datetime import datetime

import streamlit as st

from core.charts.class_board import hardware_figure, spread_figure
from core.charts.class_reference import with_reference
from core.errors import DashboardError
from core.plain_text import for_markdown
from core.platform.units import readable
from core.store.database import open_store
from core.store.class_board import (
    ARRIVED_HELP, DEFAULT_REFRESH_S, MAX_BOARD_RUNS, WHO_HELP, MAX_REFRESH_S, MIN_REFRESH_S, changed,
    crossover_spread, epoch_spread,
    grouped_rows, refresh, room_hardware, speedup_spread, who,
)
from pages.shared.class_reference import reference
from pages.shared.entry import through_app
from pages.shared.result_store import store_url

through_app()
state = st.session_state

st.title("Class board")
st.caption(f"Every run the class saves lands here within seconds: the newest {MAX_BOARD_RUNS} runs, the guesses "
           "typed in *Your guess* against what was measured, and the machines in the room.")
every = st.sidebar.number_input("Refresh every (s)", MIN_REFRESH_S, MAX_REFRESH_S, DEFAULT_REFRESH_S, step=1.0,
                                format="%.0f", key="cb_every",
                                help="how often this board asks the store whether a run arrived")
try:
    store = open_store(store_url())
    state.cb_board = board = refresh(store, state.get("cb_board"))  # reads only the runs that are new
except DashboardError as exc:
    st.error(str(exc))
    st.stop()
if board.behind is not None:  # a delete's reread waits for the timed jobs (core.store.class_board.refresh)
    st.caption("Runs were deleted: the board catches up when the race or run being timed now ends, so as not to "
               "slow it.")


@st.fragment(run_every=every)
def watch() -> None:
    """One cheap query per refresh; the whole board is redrawn only when it changed."""
    try:
        if changed(store, state.cb_board):
            st.rerun()
    except DashboardError as exc:
        st.caption(f"Cannot reach the result store just now: {exc}")
        return
    st.caption(f"{len(board.runs)} run{'s' * (len(board.runs) != 1)} · checked at {datetime.now():%H:%M:%S} · "
               f"refreshes every {every:g} s",
               help="runs saved from any browser or `python -m core ... --save` appear without a reload")


watch()
if not board.runs:
    st.info("No runs yet. Run the Matmul race or train the Review classifier (or `python -m core matmul --save`); "
            "each finished run appears here.", icon=":material/hourglass_empty:")
    st.stop()

newest = board.runs[0]
st.markdown(f"**Newest:** run #{newest.run_id}, {newest.kind}{' (imported)' * newest.imported}, "
            f"{for_markdown(who(newest))}: {for_markdown(newest.headline)}")
pinned = reference(store, board, every)  # the instructor's measurement for the class, with its noise
left, right = st.columns([3, 2])
crossovers, speedups, epochs = crossover_spread(board), speedup_spread(board), epoch_spread(board)
if not crossovers.empty:
    left.plotly_chart(with_reference(spread_figure(crossovers, title="Matmul crossover n", x_title="matrix size n"),
                                     pinned.sweep if pinned else None), key="cb_crossover")
for spread, title, axis, key in ((speedups, "GPU speed-up in training", "times faster than the CPU", "cb_speedup"),
                                 (epochs, "Seconds per epoch", "seconds per epoch", "cb_epochs")):
    if not spread.empty:
        left.plotly_chart(spread_figure(spread, title=title, x_title=axis, none_word="no race"), key=key)
right.plotly_chart(hardware_figure(room_hardware(board)), key="cb_hardware")

st.subheader("Latest runs")
st.dataframe(readable([asdict(row) for row in grouped_rows(board)]), hide_index=True, key="cb_runs",
             column_config={"who": st.column_config.TextColumn("name or machine", help=WHO_HELP),
                            "run_id": st.column_config.NumberColumn("run", format="#%d"),
                            "when": st.column_config.TextColumn("arrived (UTC)", help=ARRIVED_HELP)})
