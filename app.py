"""Entry point: `streamlit run app.py`. Navigation only; each page is a file under pages/."""

import streamlit as st

import pages.shared.server_memory  # noqa: F401  (Arrow on the system allocator: memory given back)
from pages.shared.entry import mark_entered
from pages.shared.layout import SIDEBAR_PX, projector_layout
from pages.shared.warmup import start as warm_results


st.set_page_config(page_title="GPU vs CPU, measured", page_icon=":material/speed:", layout="wide",
                   initial_sidebar_state=SIDEBAR_PX)
PAGES = [
    st.Page("pages/home.py", title="Start here", icon=":material/home:", default=True),
    st.Page("pages/hardware.py", title="Hardware check", icon=":material/memory:"),
    st.Page("pages/matmul_race.py", title="Matmul race", icon=":material/sprint:"),
    st.Page("pages/every_device.py", title="Every device at once", icon=":material/lan:"),
    st.Page("pages/laptop_race.py", title="Race on your laptop", icon=":material/laptop:"),
    st.Page("pages/roofline.py", title="Roofline", icon=":material/roofing:"),
    st.Page("pages/review_classifier.py", title="Review classifier", icon=":material/reviews:"),
    st.Page("pages/classifier_scaling.py", title="Data-parallel scaling", icon=":material/stacked_bar_chart:"),
    st.Page("pages/why_parallel.py", title="Why parallel", icon=":material/call_split:"),
    st.Page("pages/results.py", title="Results", icon=":material/leaderboard:"),
    st.Page("pages/class_board.py", title="Class board", icon=":material/co_present:"),
]

mark_entered()
projector_layout()
st.navigation(PAGES).run()
warm_results()  # once per server process, after the first page has rendered: Results' imports in the background
