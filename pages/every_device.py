"""Every device at once: K torchrun ranks (one per GPU, else CPU ranks), the same matmul sweep on each, all at
once and then each alone; GFLOP/s per rank with the median and the straggler, saved for Results and the board."""

import streamlit as st

from core import glossary
from core.charts.ranks import ranks_figure, spread_table, verdict_line
from core.errors import DashboardError
from core.matmul.rank_launch import PAGE_SIZES, crowding, most_ranks, run_ranks
from core.matmul.rank_worker import RanksConfig
from core.platform.devices import cuda_count
from core.platform.units import readable
from pages.shared.device_wait import page_job
from pages.shared.entry import through_app
from pages.shared.notices import load_notice
from pages.shared.result_store import save_run

BUDGET_S = 0.3  # seconds per size, rank and phase: K = 2 with three sizes takes about 3 s of timing

through_app()
state = st.session_state
state.setdefault("mm_ranks_run", None)
gpus = cuda_count()

st.title("Every device at once")
st.caption("In data-parallel training every step waits for the slowest device. Here K processes (torchrun, "
           + (f"one per GPU of the {gpus} here" if gpus else "CPU ranks sharing the cores") + ") time the same "
           "matmul sweep all at once, then each alone: are they equally fast, and do they slow each other down?")
c1, c2, c3, c4 = st.columns([2, 3, 3, 2], vertical_alignment="bottom")
ranks = int(c1.number_input("Ranks", min_value=1, max_value=most_ranks(gpus), value=min(2, most_ranks(gpus)),
                            key="mm_ranks_k", help=glossary.RANKS))
sizes = c2.selectbox("Sizes", list(PAGE_SIZES), key="mm_ranks_sizes")
c3.text_input("Name for the Results page (optional)", key="mm_ranks_label", max_chars=200,
              placeholder="e.g. lab node")
if crowded := crowding(RanksConfig(), ranks, gpus):  # allowed, but then no rank can be named a straggler
    st.warning(crowded, icon=":material/group_work:")
if c4.button("Run", key="mm_ranks_go", type="primary", icon=":material/play_arrow:", width="stretch"):
    bar = st.empty()
    try:
        with page_job("mm_ranks", on_progress=lambda p: bar.progress(p.fraction, text=p.message)) as turn:
            run = run_ranks(RanksConfig(sizes=PAGE_SIZES[sizes], budget_s=BUDGET_S,
                                        settings={"ranks": ranks, "sizes": list(PAGE_SIZES[sizes])}), ranks, turn.hooks)
        state.mm_ranks_run = run
        bar.empty()
        save_run(run, label=state.mm_ranks_label.strip())
    except DashboardError as exc:
        st.error(str(exc))

if (run := state.mm_ranks_run) is not None:
    (st.warning if run.straggler_call == "named" else st.info)(verdict_line(run))
    load_notice(run.load)
    st.plotly_chart(ranks_figure(run), key="mm_ranks_chart")
    st.dataframe(readable(spread_table(run)), hide_index=True, key="mm_ranks_table")
    st.caption("alone / together: the ranks' median GFLOP/s each alone over all at once; above 1, they slowed "
               f"each other down (shared cores, memory bandwidth, power). {glossary.GFLOPS} {glossary.INTERVAL}")
