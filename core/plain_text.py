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


_CODE_SPAN = re.compile(r"(`[^`\n]+`)")  # `python -m core data add ...` in a message the project wrote


def message_markdown(text: object) -> str:
    """A message for st.error and its kind: its `code` spans render as code (a command to type, a setting),
    everything else literally (a message may quote a file name or a label that a stranger chose)."""
    parts = _CODE_SPAN.split(str(text))
    return "".join(part if i % 2 else for_markdown(part) for i, part in enumerate(parts))


def message_plain(text: object) -> str:
    """The same message for a terminal: code spans without their backticks (a command stays copyable as typed)."""
    return _CODE_SPAN.sub(lambda m: m.group(1)[1:-1], str(text))


def plotly_safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text cells are escaped for Plotly; numbers, None and NaN are left as they are."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(_escape_cell)
    return out


def _escape_cell(value: Any) -> Any:
    return for_plotly(value) if isinstance(value, str) else value
