"""Entry point: `streamlit run app.py`. Navigation only; each page is a file under pages/."""

import streamlit as st

st.set_page_config(page_title="GPU vs CPU, measured", page_icon=":material/speed:", layout="wide")

PAGES = [
    st.Page("pages/home.py", title="Start here", icon=":material/home:", default=True),
    st.Page("pages/hardware.py", title="Hardware check", icon=":material/memory:"),
    st.Page("pages/review_classifier.py", title="Review classifier", icon=":material/reviews:"),
]

st.navigation(PAGES).run()
