"""Why parallel: every section of core.parallel.registry, each holding its devices itself; this page
draws the settings, passes hooks (the waiting line, progress) and shows what comes back."""

from typing import Any

import streamlit as st

from core.errors import DashboardError
from core.parallel import registry
from core.parallel.machine import pick_gpu
from core.parallel.section import Section
from core.platform.jobs import Progress
from pages.shared.device_wait import page_job
from pages.shared.entry import through_app
from pages.shared.notices import gpu_badge, load_notice

through_app()

st.title("Why parallel")
st.caption("Why a GPU is fast, and when it is not, measured live on this machine. Each section runs on its own "
           "button; its results stay here until you run it again.")

gpu = pick_gpu()
if gpu is None:
    gpu_badge("every section runs on the CPU and says what a GPU would change")

with st.expander("Sizes and time budget", icon=":material/tune:"):
    st.caption("The budget bounds how often each product is repeated, not one product: a single n = 8192 "
               "product on one CPU thread takes tens of seconds.")
    knobs = registry.knobs(registry.SECTIONS)  # three to a row, in page order
    cells = [cell for _ in range(0, len(knobs), 3) for cell in st.columns(3)]
    values = {k.name: cell.number_input(k.label, min_value=k.low, max_value=k.high, value=k.default, step=k.step,
                                        key=f"wp_{k.name}") for k, cell in zip(knobs, cells)}


def run(section: Section[Any, Any], config: object) -> None:
    """Run one section; each finished step goes to session_state, so a stop or the time cap loses nothing."""
    key, bar = section.key, st.empty()

    def on_progress(p: Progress[object]) -> None:
        st.session_state[f"wp_result_{key}"], st.session_state[f"wp_partial_{key}"] = p.item, True
        bar.progress(p.fraction, text=f"{p.message}: {p.done} of {p.total} steps done")

    try:
        st.session_state[f"wp_load_{key}"] = section.probe()
        with page_job(f"wp_{key}", on_progress=on_progress, end_run=False) as turn:
            st.session_state[f"wp_result_{key}"] = section.run(config, turn.hooks)
            st.session_state[f"wp_partial_{key}"] = False
    except DashboardError as exc:
        st.error(str(exc))
    finally:
        bar.empty()


def show(section: Section[Any, Any], config: object) -> None:
    """A section: its title with Run beside it, then the progress and the result (directly under the
    button: its verdicts, then its chart, so a 720-pixel projector shows both without scrolling), then the
    explanation and the code."""
    with st.container(border=True):
        title, button = st.columns([6, 1], vertical_alignment="center")
        title.subheader(section.title)
        if button.button("Run", key=f"wp_run_{section.key}", icon=":material/play_arrow:"):
            run(section, config)
        result = st.session_state.get(f"wp_result_{section.key}")
        if result is not None:
            if st.session_state.get(f"wp_partial_{section.key}"):
                st.caption("Stopped before the end: these are the steps measured so far.")
            st.markdown(section.summarize(result))  # the one-line verdicts, then their chart: both in view
            st.plotly_chart(section.figure(result), key=f"wp_chart_{section.key}")
            load_notice(st.session_state.get(f"wp_load_{section.key}"))
            if verbatim := section.verbatim(result):
                st.code(verbatim, language="text")
        st.markdown(section.explain(gpu, config))
        snippets = section.snippets(gpu)
        for column, snippet in zip(st.columns(len(snippets)) if snippets else (), snippets):
            if snippet.label:
                column.markdown(f":{'green' if snippet.right else 'red'}[**{snippet.label}**]")
            column.code(snippet.code, language="python")


for section in registry.SECTIONS:
    show(section, section.config(values))
