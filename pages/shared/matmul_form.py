"""The Matmul race's settings (in the sidebar) and its Run row: the widgets, and the SweepConfig they build.

Not a page (app.py does not list it). Widget keys are `mm_*`; the choices offered come from core
(core.matmul.choices: `dtype_choices`, `size_choices`, `thread_choices`, `TF32_CHOICES`; core.matmul.plan:
`tf32_unavailable`), so the page cannot offer what the machine cannot run.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import streamlit as st

from core.matmul.choices import (
    TF32_CHOICES, default_race_threads, dtype_choices, log_sizes, size_choices, tf32_settings, thread_choices,
)
from core.matmul.config import MatmulOptions, SweepConfig
from core.matmul.plan import tf32_unavailable
from core.platform.cache import CACHE_CHOICES
from core.platform.devices import NEEDS_GPU, available_devices
from core.results.guess import MATMUL_EXAMPLE

BUDGETS_S = [0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0]
DEFAULT_SIZES = (64, 2048)
FREE = None  # the threads option "free cores": resolved by the sweep's load probe


def default_devices(available: list[str]) -> list[str]:
    """The first GPU and the CPU: a sweep holds every device it times, so on an 8-GPU server the
    default must not lock all eight (a user adds more on purpose)."""
    return [d for d in available if d != "cpu"][:1] + ["cpu"]


def _threads_label(threads: int | None) -> str:
    return "free cores" if threads is FREE else str(threads)


def sweep_form(gpu_here: bool) -> tuple[bool, bool, Callable[[], SweepConfig]]:
    """Draw the settings in the sidebar and the guess, the name, Run, Stop and Run my own in one row under the
    title; return whether Run and Run my own were pressed and the SweepConfig the choices build, called when
    Run is (a bad combination, such as no device, raises DashboardError then, not while the user is choosing).

    The sidebar keeps the page's main column for what the class watches: at a projector's 1280 × 720
    the Run button, the progress and the first result all fit above the fold."""
    with st.sidebar:
        st.subheader("Race settings")
        devices = st.multiselect("Devices", available_devices(), default=default_devices(available_devices()),
                                 key="mm_devices")
        dtypes = st.multiselect("dtypes", dtype_choices(devices or ["cpu"]), default=["float32"], key="mm_dtypes",
                                help="float16 on a CPU is very slow; "
                                     "sizes that would overrun the budget are left out before timing.")
        cores: list[int | None] = [FREE, *thread_choices()]
        threads = st.multiselect("CPU threads (each is a series)", cores, key="mm_threads", format_func=_threads_label,
                                 default=list(default_race_threads(gpu_here)),  # two series that differ
                                 help="free cores: as many threads as other programs leave idle when the sweep starts")
        end_to_end = st.checkbox("End to end (with copies)", value=False, key="mm_end_to_end", disabled=not gpu_here,
                                 help="also time the copies to and from the GPU"
                                      + ("" if gpu_here else f": {NEEDS_GPU}"))
        cache = st.radio("Cache", list(CACHE_CHOICES), horizontal=True, key="mm_cache",
                         help="warm: the same matrices stay in cache from one repetition to the next, as in a loop "
                              "(small products look fast). cold: the caches are evicted before each timed call, "
                              "outside the clock, as if the program had touched other data in between.")
        options = size_choices(devices or ["cpu"], dtypes or ["float32"], end_to_end=end_to_end, cache=cache)
        sizes = st.select_slider("Matrix sizes n (log scale; larger sizes offered while memory allows)", options,
                                 value=(min(DEFAULT_SIZES[0], options[-1]), min(DEFAULT_SIZES[1], options[-1])),
                                 key="mm_sizes", format_func="{:,}".format)  # 16,384, as sizes read elsewhere
        per_doubling = st.selectbox("Sizes per doubling", [1, 2, 4], key="mm_per_doubling")
        budget = st.select_slider("Time budget per size (s)", BUDGETS_S, value=1.0, key="mm_budget",
                                  format_func="{:g}".format,
                                  help="Per size and series. A size whose series cannot yet be told apart samples "
                                       "on, up to twice this.")
        no_tf32 = tf32_unavailable(devices)
        tf32 = st.radio("TF32 for CUDA float32", list(TF32_CHOICES), horizontal=True, key="mm_tf32",
                        disabled=no_tf32 is not None,
                        help="TF32 tensor cores: faster, less exact." + (f" Off here: {no_tf32}." if no_tf32 else ""))
        tf32 = "off" if no_tf32 else tf32
        unsynced = st.checkbox("Also time unsynchronized (the bug)", value=True, key="mm_unsynced",
                               disabled=not gpu_here,
                               help="the classic bug: reading the clock without synchronizing. "
                                    + ("" if gpu_here else f"It {NEEDS_GPU}: on a CPU nothing is asynchronous."))
    c1, c2, c3, c4, c5 = st.columns([2.5, 2.5, 1, 1, 1.4], vertical_alignment="bottom")  # one row: chart in view
    c1.text_input("Your guess", key="mm_guess", max_chars=40, placeholder=MATMUL_EXAMPLE,
                  help="before you press Run: from which size n does the faster series win? Saved with the run; "
                       "the page compares it with the measurement afterwards")
    c2.text_input("Name for the Results page (optional)", key="mm_label", max_chars=200,
                  placeholder="e.g. Ana's laptop", help="finished sweeps are saved there, under this name")
    run = c3.button("Run", type="primary", key="mm_run", icon=":material/play_arrow:")
    c4.button("Stop", key="mm_stop", icon=":material/stop:")
    own = c5.button("Run my own", key="mm_run_own", help="Run joins a race with the same settings already running "
                    "here; this one waits its turn for a race of your own")
    options = MatmulOptions(budget_s=float(budget), unsynced=unsynced, end_to_end=end_to_end, cache=cache)
    return run, own, partial(SweepConfig, sizes=log_sizes(*sizes, per_doubling), devices=tuple(devices),
                        dtypes=tuple(dtypes), threads=tuple(threads), tf32=tf32_settings(tf32), options=options)
