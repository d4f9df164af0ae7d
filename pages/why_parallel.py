"""Why parallel: marbles, a chain of tiny steps, the timing bug, the cold first call, tensor location."""

import streamlit as st

from core.parallel import demos
from core.parallel import text
from core.charts import parallel as charts
from core.errors import DashboardError
from pages.shared.device_wait import device_turn
from pages.shared.entry import through_app

through_app()

MAX_CPU_N = 8192  # one product of this size takes tens of seconds on one CPU thread
MAX_GPU_N = 32768  # 4 GiB per matrix; the memory check refuses what does not fit

st.title("Why parallel")
st.caption(
    "Why a GPU is fast, and when it is not, measured live on this machine. Each section runs on its own "
    "button; its results stay here until you run it again."
)

gpu = demos.pick_gpu()
if gpu is None:
    st.info("No GPU here: every section runs on the CPU and says what a GPU would change.", icon=":material/info:")

with st.expander("Sizes and time budget", icon=":material/tune:"):
    st.caption("The budget bounds how often each product is repeated, not one product: a single n = 8192 "
               "product on one CPU thread takes tens of seconds.")
    c1, c2, c3 = st.columns(3)
    small_n = int(c1.number_input("Small matrix n", min_value=1, max_value=MAX_CPU_N, value=64, key="wp_small_n"))
    large_n = int(c2.number_input("Large matrix n", min_value=1, max_value=MAX_CPU_N, value=1024, key="wp_large_n"))
    budget_s = float(c3.number_input("Seconds per section", min_value=demos.MIN_SECTION_BUDGET_S, max_value=60.0,
                                     value=demos.SECTION_BUDGET_S, step=0.5, key="wp_budget_s"))
    c1, c2, c3 = st.columns(3)
    steps = int(c1.number_input("Chain: steps", min_value=1, max_value=100_000, value=demos.ChainConfig.steps,
                                key="wp_steps"))
    rows = int(c2.number_input("Chain: rows of x", min_value=1, max_value=4096, value=demos.ChainConfig.rows,
                               key="wp_rows"))
    width = int(c3.number_input("Chain: width of W", min_value=1, max_value=4096, value=demos.ChainConfig.width,
                                key="wp_width"))
    c1, c2, _ = st.columns(3)
    bug_cpu_n = int(c1.number_input("Timing bug: CPU n", min_value=1, max_value=MAX_CPU_N,
                                    value=demos.TimingBugConfig.cpu_size, key="wp_bug_cpu_n"))
    bug_gpu_n = int(c2.number_input("Timing bug: GPU n", min_value=1, max_value=MAX_GPU_N,
                                    value=demos.TimingBugConfig.gpu_size, key="wp_bug_gpu_n"))

JOBS = demos.section_runners(
    marbles=demos.MarblesConfig((small_n, large_n), budget_s=budget_s),
    chain=demos.ChainConfig(steps, rows, width, budget_s=budget_s),
    timing_bug=demos.TimingBugConfig(bug_cpu_n, bug_gpu_n, budget_s=budget_s),
    first_call=demos.FirstCallConfig((small_n, large_n), budget_s=budget_s),
)
EXPLAIN = {
    "marbles": text.explain_marbles(gpu),
    "chain": text.explain_chain(gpu, steps),
    "timing_bug": text.explain_timing_bug(gpu),
    "first_call": text.explain_first_call(gpu),
    "location": text.explain_location(gpu),
}
SHOW = {  # key -> (figure builder, summary)
    "marbles": (charts.marbles_figure, text.summarize_marbles),
    "chain": (charts.chain_figure, text.summarize_chain),
    "timing_bug": (charts.timing_bug_figure, text.summarize_timing_bug),
    "first_call": (charts.first_call_figure, text.summarize_first_call),
    "location": (charts.location_figure, text.summarize_location),
}


def run_section(key: str) -> None:
    """Wait for the devices, then run one section; each finished step goes to session_state, so a stop loses nothing."""

    def on_progress(p: demos.Progress) -> None:
        st.session_state[f"wp_result_{key}"] = p.partial
        bar.progress(p.fraction, text=f"{p.label}: {p.done} of {p.total} steps done")

    devices, label = demos.section_devices(key), f"Why parallel: {text.SECTIONS[key]}"
    try:
        with device_turn(devices, key=f"wp_{key}", label=label) as job:
            st.session_state[f"wp_partial_{key}"] = True
            bar = st.progress(0.0, text="Starting…")
            try:
                st.session_state[f"wp_result_{key}"] = JOBS[key](demos.JobHooks(on_progress=on_progress, job=job))
                st.session_state[f"wp_partial_{key}"] = False
            finally:
                bar.empty()
    except DashboardError as exc:
        st.error(str(exc))


for key, title in text.SECTIONS.items():
    with st.container(border=True):
        st.subheader(title)
        st.markdown(EXPLAIN[key])
        if key == "timing_bug":
            wrong, right = text.timing_snippets(gpu)
            left, right_col = st.columns(2)
            left.markdown(":red[**Wrong**]")
            left.code(wrong, language="python")
            right_col.markdown(":green[**Right**]")
            right_col.code(right, language="python")
        if key == "location":
            st.code(text.NAMING_SNIPPET, language="python")
        if st.button("Run", key=f"wp_run_{key}", icon=":material/play_arrow:"):
            run_section(key)
        result = st.session_state.get(f"wp_result_{key}")
        if result is not None:
            figure, summary = SHOW[key]
            if st.session_state.get(f"wp_partial_{key}"):
                st.caption("Stopped before the end: these are the steps measured so far.")
            st.plotly_chart(figure(result), key=f"wp_chart_{key}")
            st.markdown(summary(result))
            if key == "location" and result.error:
                st.code(result.error, language="text")
