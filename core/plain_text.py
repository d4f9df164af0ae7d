"""Text that strangers wrote (run labels, device and machine names, file names), shown as plain text.

Plotly reads a subset of HTML in every string it draws (trace names, legend entries, hover
labels, annotations: `<a href>`, `<span style>`, `<b>`), and Streamlit reads Markdown in
`st.error`, captions and metrics (links, bold, `:red[...]`, LaTeX between `$`). A label imported
onto a shared board would otherwise draw a link or 80 px red text in every student's browser. So
every such string passes through one of these two functions on its way to the screen.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pandas as pd

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:$<>])")


def for_plotly(text: object) -> str:
    """`text` as Plotly shows it literally: its HTML-like tags become entities Plotly prints as characters."""
    return html.escape(str(text), quote=False)


def for_markdown(text: object) -> str:
    """`text` as Streamlit's Markdown shows it literally: every character Markdown could read is escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def plotly_safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text cells are escaped for Plotly; numbers, None and NaN are left as they are."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(_escape_cell)
    return out


def _escape_cell(value: Any) -> Any:
    return for_plotly(value) if isinstance(value, str) else value
