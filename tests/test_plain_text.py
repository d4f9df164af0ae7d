"""User-written text reaches Plotly and Markdown as plain text, never as markup."""

import re

import pandas as pd
import plotly.graph_objects as go
from streamlit.testing.v1 import AppTest

from core.plain_text import for_markdown, for_plotly, plotly_safe_frame

HOSTILE = ('<a href="https://example.invalid/login" target="_blank">x</a>'
           '<span style="font-size:80px;color:red">BIG</span><b>bold</b>')


def test_plotly_text_has_no_tags_left():
    shown = for_plotly(HOSTILE)
    assert "<" not in shown and ">" not in shown
    assert "&lt;a href=" in shown and "BIG" in shown  # the text itself is kept, only the markup is defused


def test_a_frame_is_escaped_cell_by_cell_and_numbers_are_untouched():
    frame = pd.DataFrame({"label": [HOSTILE, "Ana's laptop"], "n": [64, 128], "x": [1.5, None]})
    safe = plotly_safe_frame(frame)
    assert "<" not in safe.loc[0, "label"] and safe.loc[1, "label"] == "Ana's laptop"
    assert safe["n"].tolist() == [64, 128] and pd.isna(safe.loc[1, "x"])
    assert frame.loc[0, "label"] == HOSTILE, "the input frame is not changed"


def test_markdown_special_characters_are_escaped():
    for text in ("[click](https://example.invalid)", "**bold**", ":red[alarm]", "$x^2$", "# title"):
        escaped = for_markdown(text)
        assert all(f"\\{c}" in escaped for c in "[]*:$#" if c in text), escaped


def _page():
    import streamlit as st

    from core.plain_text import for_markdown

    st.error(f"{for_markdown('[evil](https://example.invalid) **loud** :red[x]')}: not a readable file")


def test_streamlit_shows_escaped_markdown_literally():
    app = AppTest.from_function(_page).run()
    assert not app.exception
    body = app.error[0].value
    shown = body.removesuffix(": not a readable file")
    assert re.search(r"(?<!\\)[\[\]*:]", shown) is None, body  # no markup character left unescaped
    assert body.replace("\\", "").startswith("[evil](https")  # the text itself is all there


def test_plotly_figure_keeps_the_escaped_name():
    fig = go.Figure(go.Scatter(x=[1], y=[1], name=for_plotly(HOSTILE)))
    assert "<a" not in fig.data[0].name


def test_a_message_keeps_its_code_spans_as_code_and_escapes_the_rest():
    from core.plain_text import message_markdown, message_plain

    text = "[evil](https://x.invalid).csv: no reviews; run `python -m core data add rt-polarity PATH` first"
    shown = message_markdown(text)
    assert "`python -m core data add rt-polarity PATH`" in shown  # Markdown draws it as code
    assert shown.startswith(r"\[evil\]\(https\:") and "**" not in shown  # the file name stays plain text
    assert message_plain(text) == ("[evil](https://x.invalid).csv: no reviews; "
                                   "run python -m core data add rt-polarity PATH first")


def _error_page():
    import streamlit as st

    from core.plain_text import message_markdown

    st.error(message_markdown("run `python -m core data add rt-polarity PATH` (a *local* copy)"))


def test_streamlit_draws_a_message_s_code_span_as_code():
    app = AppTest.from_function(_error_page).run()
    body = app.error[0].value
    assert "`python -m core data add rt-polarity PATH`" in body and r"\*local\*" in body


def test_the_cli_prints_an_error_without_backticks(capsys, monkeypatch):
    from core.cli import main
    from core.errors import DashboardError
    from core.cli import results

    def refuse(args):
        raise DashboardError("cannot read it; try `python -m core results list`")

    monkeypatch.setattr(results, "run_list", refuse)
    assert main(["results", "list"]) == 2
    assert capsys.readouterr().err == "error: cannot read it; try python -m core results list\n"
