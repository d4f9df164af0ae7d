"""Streamlit helpers several pages share (not pages themselves).

They live in a sub-folder because Streamlit, until app.py's st.navigation has run once, lists every
`pages/*.py` file as a page of its own; files in a sub-folder are never listed.
"""
