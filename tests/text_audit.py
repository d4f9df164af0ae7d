"""What issue 34's "Done when" asks of every text a person reads: no number with more than three significant
figures, no result field's name. Used by tests/test_page_text.py (every page, AppTest) and
tests/cli/test_cli_text.py (every CLI command).

A *figure* is a measured or derived value: a number with a decimal point or an exponent, or a whole number
followed by a unit of time, rate, share or size ('1234 ms', '18,550 reviews/s', '8 %'). A bare whole number is a
count or a size (n = 131,072, 104,903 terms, 2 threads, run #12, port 8501): exact by nature, any length. Dates,
clock times and version strings are not figures. A figure fails when it shows more than three significant
figures ('83.31', '1.163', '100.0'), a positive exponent ('8.46e+03': a unit a person would choose reads it at a
glance), or two zeros after the point ('0.00682': 6.82 ms, in a smaller unit). A count from 10,000 on is written
with separators, like the figures beside it ('104,903 terms', never '104903 terms').
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import pkgutil
import re
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any

# not figures: dates, clock times, versions, ISO stamps, hashes, hex ids, file names with digits
NOT_FIGURES = [
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z?)?",  # 2026-12-01, 2026-12-01T05:00:00Z
    r"\b\d{1,2}:\d{2}(?::\d{2})?\b",  # 09:12, 09:12:44
    r"(?<![\w.])v?\d+(?:\.\d+){2,}(?:[+\w.-]*)",  # 2.13.0, 1.67.0+cpu, v3.11.2
    r"\b(?:Python|python3?|torch|PyTorch|CUDA|cuDNN|streamlit|Streamlit|numpy|pandas|scikit-learn|NumPy|"
    r"capability|cu|sm_|Chrome|Chromium|Firefox|Safari)[ /_]?\d+(?:\.\d+)*",  # Python 3.11, CUDA 12.8
    r"\b[\w-]*\d[\w-]*\.(?:json|csv|txt|ipynb|whl|gz|tar|py|sqlite3|zip|parquet)\b",  # file names
    r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,}\b",  # hashes, hex ids
    r"(?<![\w.+-])(?!\d+(?:\.\d+)?[eE][+-]?\d+(?![\w.]))"  # (not 8.46e+03: a figure)
    r"(?:[\w.+-]*[A-Za-z_][\w+-]*\d[\w.+-]*|[\w.+-]*\d[\w+-]*[A-Za-z_][\w.+-]*)",  # words with digits: float32, H200,
    # A100-80GB, rt-polarity2, i5-1135G7 (a name, not a figure; '2x', '10s' are caught before this: UNIT_GLUED)
    r"(?:pid|PID|port|Port|localhost|#)\s*:?\s*\d+",  # process ids, ports, run numbers
]
# a number written against its unit ('2x', '10s', '1.5ms', '83GB/s') is a figure, read before names are removed
UNIT_GLUED = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?)(?=(?:x|×|s|ms|µs|us|ns|%)\b)")
NUMBER = re.compile(r"(?<![\w.])[-+−]?\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w])")
# after a whole number, a unit that makes it a measured figure (a duration, a rate, a share, an amount of memory)
MEASURED_UNIT = re.compile(
    r"^\s*(?:[kMGT]?B/s|[kMGT]?i?B\b|[GT]?FLOP/s|GFLOPS|s\b|ms\b|µs\b|us\b|ns\b|min\b|minutes?\b|seconds?\b|"
    r"%|percent|points?\b|x\b|×|times\b|W\b|MHz|GHz|°C|\S+/s\b|[\w ]{0,20}per second)")


def significant(token: str) -> int:
    """Significant figures a person reads in a number as printed: '83.31' 4, '0.00682' 3, '127,000' 3,
    '100.0' 4 (a trailing zero after the point is a claimed digit)."""
    mantissa = token.lower().lstrip("+-−").partition("e")[0].replace(",", "")
    digits = mantissa.replace(".", "").lstrip("0")
    return len(digits if "." in mantissa else digits.rstrip("0")) or 1


def _is_figure(token: str, after: str) -> bool:
    return "." in token or "e" in token.lower() or bool(MEASURED_UNIT.match(after))


# after a figure, a unit a smaller one could replace ('0.00682 s' is 6.82 ms), or none ('0.0034×', a bare 0.00682)
SCALABLE = re.compile(r"^(?:\s*(?:s|ms|µs|us|min)\b|\s*[×x]|\s*$|\s*[^\w\s%/°])")


def _fails(token: str, after: str = "", *, in_table: bool = False) -> bool:
    mantissa, _, exponent = token.lower().lstrip("+-−").partition("e")
    if exponent:  # '8.46e+03' reads better whole or in a larger unit; '1.2e-07' (an error) by its digits
        return not exponent.startswith("-") or significant(token) > 3
    plain = mantissa.replace(",", "")
    if re.match(r"0\.00\d", plain) and not in_table and SCALABLE.match(after):
        return True  # 0.00682 s in a sentence: 6.82 ms. A table's column (or an axis) keeps one unit: 0.00262 ms
    if "," not in mantissa and "." not in mantissa and len(plain) > 4:
        return True  # '40000 GFLOP/s' beside '18,600 reviews/s': separators from 10,000 on
    return significant(token) > 3


def too_precise(text: str, *, in_table: bool = False) -> list[str]:
    """Every figure in `text` showing more than a person should read (see the module's docstring); `in_table`: a
    row of a table or an axis's tick labels, whose unit is the column's or the axis's, chosen once for all."""
    found = [m.group(1) for m in UNIT_GLUED.finditer(text)
             if _fails(m.group(1), text[m.end():m.end() + 5], in_table=in_table)]
    text = UNIT_GLUED.sub(" ", text)
    for pattern in NOT_FIGURES:
        text = re.sub(pattern, " ", text)
    for match in NUMBER.finditer(text):
        token = match.group().lstrip("+-−")
        after = text[match.end():match.end() + 30]
        if _is_figure(token, after):
            if _fails(token, after, in_table=in_table):
                found.append(token)
        elif len(token) > 4 and token.isdigit():  # a count: '104903 terms' beside '18,550 reviews/s', separators
            found.append(token)
    return found


@cache
def field_names() -> frozenset[str]:
    """Every snake_case field of every result dataclass in core.results (bandwidth_gbs, launch_s, median_s, ...):
    derived, so a field added tomorrow is checked tomorrow. Plain words ('device', 'epochs') are English."""
    import core.results

    names: set[str] = set()
    for info in pkgutil.iter_modules(core.results.__path__):
        module = importlib.import_module(f"core.results.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if dataclasses.is_dataclass(cls) and cls.__module__.startswith("core.results"):
                names |= {f.name for f in dataclasses.fields(cls) if "_" in f.name.strip("_")}
    return frozenset(names)


SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def leaked_fields(text: str) -> list[str]:
    """Result fields named in `text` as a program names them ('bandwidth_gbs'), or 'gflops' in lower case."""
    words = set(re.findall(r"(?<![\w/.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/-])", text))
    return sorted((words & field_names()) | ({"gflops"} & set(re.findall(r"\b[a-z]+\b", text))))


# ---------------------------------------------------------------------------- the text of a page (AppTest)

TEXT_KEYS = {"body", "label", "help", "text", "placeholder", "caption", "options", "delta", "title"}
SKIPPED = {"code", "json", "exception", "html", "iframe", "imgs"}


def _strings(value: Any, keys: frozenset[str] | set[str] = TEXT_KEYS) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys:
                yield from (x for x in _flat(item) if isinstance(x, str))
            elif isinstance(item, (dict, list)):
                yield from _strings(item, keys)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, keys)


def _flat(value: Any) -> Iterator[Any]:
    if isinstance(value, list):
        for item in value:
            yield from _flat(item)
    elif isinstance(value, dict):
        yield from (v for k, v in value.items() if k in ("text", "label", "body"))
    else:
        yield value


def figure_text(spec: str) -> list[tuple[str, str]]:
    """What a Plotly figure prints: its titles, axis titles, tick labels it was given, trace names, the text drawn
    on its marks and its annotations, each as ("plotly_chart", text), tick labels as ("plotly_chart tick", text),
    and its hover templates with a many-digit value in each formatted place ("plotly_chart hover")."""
    figure = json.loads(spec)
    layout, out, ticks = figure.get("layout", {}), [], []
    for key, value in layout.items():
        if isinstance(value, dict):
            title = value.get("title")
            out.append(title.get("text") if isinstance(title, dict) else title)
            ticks.extend(value.get("ticktext") or [])
    title = layout.get("title")
    out.append(title.get("text") if isinstance(title, dict) else title)
    out.extend(a.get("text") for a in layout.get("annotations") or [])
    for trace in figure.get("data", []):
        out.append(trace.get("name") if trace.get("showlegend", True) is not False else None)
        if "text" in str(trace.get("mode", "text")) and isinstance(trace.get("text"), (list, str)):
            out.extend([trace["text"]] if isinstance(trace["text"], str) else trace["text"])
    hovers = [_hover_sample(t["hovertemplate"]) for t in figure.get("data", []) if t.get("hovertemplate")]
    return [(kind, re.sub(r"<[^>]+>", " ", str(t))) for kind, texts in (("plotly_chart", out),
                                                                        ("plotly_chart tick", ticks),
                                                                        ("plotly_chart hover", hovers))
            for t in texts if t not in (None, "")]


HOVER_FORMAT = re.compile(r"%\{[^}:]+:(,?)\.(\d+)(~?)([fgser%])\}")
SAMPLES = (1.2345678, 12345.678, 0.012345678)  # each digit shows; a large one shows an exponent where one comes


def _d3(value: float, comma: str, digits: int, trim: str, kind: str) -> str:
    """d3-format, as Plotly draws a hover value, for the kinds used here ('r': significant digits, never an
    exponent; 'g': an exponent from 10^digits on, like Python's)."""
    if kind == "r":
        rounded = float(f"{value:.{digits}g}")
        decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
        shown = f"{rounded:{comma}.{decimals}f}"
        return shown.rstrip("0").rstrip(".") if trim and "." in shown else shown
    if kind == "%":
        return f"{value / 10:{comma}.{digits}%}"  # a share: 0.123
    return format(value, f"{comma}.{digits}{'g' if kind == 's' else kind}")


def _hover_sample(template: str) -> str:
    """A hover template with each formatted value drawn as Plotly would draw many-digit numbers, small and large:
    '%{y:.4g} ms' reads '1.235 ms' (too many), '%{y:.3g} ms' '1.23e+04 ms' for 12,345.678 (an exponent),
    '%{y:,.3~r} ms' '1.23', '12,300' and '0.0123'. Values without a format are left out ('%{x}')."""
    def sample(match: re.Match[str]) -> str:
        comma, digits, trim, kind = match.group(1), int(match.group(2)), match.group(3), match.group(4)
        values = SAMPLES if kind in "gsre" else SAMPLES[:1]  # a fixed-point or share format: its range is known
        return " / ".join(_d3(v, comma, digits, trim, kind) for v in values)

    return re.sub(r"%\{[^}]*\}", " ", HOVER_FORMAT.sub(sample, template.replace("<extra></extra>", "")))


BARE_NUMBER = re.compile(r"^[-+−]?\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?$")


def header_unit(header: str) -> str:
    """The unit a column's header ends in ('median ms' -> 'ms', 'peak GFLOP/s' -> 'GFLOP/s', 'dense matrix MB'
    -> 'MB', 's / epoch' whole), or '' for a header of a count or a name ('samples', 'calls per sample')."""
    last = header.split()[-1] if header.split() else ""
    match = MEASURED_UNIT.match(" " + last)
    if match and match.end() == len(last) + 1:
        return last
    return header if re.match(r"^\S+ / ", header) and MEASURED_UNIT.match(header) else ""  # 's / epoch'


def _printf(fmt: str, value: float) -> str:
    """A column_config format as the grid applies it: printf-style ('%.4f', '#%d'); the named ones Streamlit
    offers as they draw ('plain': every digit; 'localized': up to three decimals with separators)."""
    if fmt == "plain":
        return repr(value)
    if fmt == "localized":
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    if "%" in fmt:
        return fmt.replace("%,", "%") % (int(value) if re.search(r"%[^a-z]*[diu]", fmt) else value)
    return _grid_number(value)


def _grid_number(value: float) -> str:
    """A number in st.dataframe without a format: whole numbers as they are, others to four decimals (1/3 reads
    '0.3333'), trailing zeros dropped."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.4f}".rstrip("0").rstrip(".")


def shown_cells(frame: Any, config: dict[str, Any], *, static: bool = False) -> Iterator[str]:
    """Each non-empty cell of a data frame as the person sees it: text as it is; a number through its column's
    format where column_config gives one, else as the grid draws numbers (st.dataframe: up to four decimals;
    st.table, `static`: always four, '1.5000', a claim of five figures). A bare number in a column headed with a
    unit ('median ms', 'GFLOP/s') is read with it, as a person reads it: '4322 ms' is a figure, '4322' a count."""
    import pandas as pd

    for name in frame.columns:
        fmt = (config.get(str(name), {}).get("type_config") or {}).get("format")
        unit = header_unit(str(config.get(str(name), {}).get("label") or name))
        for value in frame[name].tolist():
            if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                text = str(value)
            elif fmt:
                text = _printf(fmt, value)
            elif static and isinstance(value, float):
                text = f"{value:.4f}"
            else:
                text = _grid_number(value)
            if text.strip():
                yield f"{text} {unit}" if unit and BARE_NUMBER.match(text) else text


def page_text(app: Any) -> list[tuple[str, str]]:
    """(element type, text) for every text a person reads on the page now: headings, Markdown, captions, alerts,
    metrics, every widget's label, help and options, tabs and expanders, progress lines, page links, each chart's
    words, each data frame's headers and the cells of every data frame and static table as the grid draws them
    (`shown_cells`). Left out: code blocks (code and program output, verbatim) and exceptions (a test fails on
    those anyway)."""
    from google.protobuf.json_format import MessageToDict

    found: list[tuple[str, str]] = []
    for node in app._tree:
        kind = getattr(node, "type", "")
        proto = getattr(node, "proto", None)
        if kind in SKIPPED or proto is None:
            continue
        if kind == "plotly_chart":
            found += figure_text(proto.spec)
            continue
        if kind == "dataframe":  # its headers as shown (a column_config label replaces the frame's name)
            config = json.loads(proto.columns or "{}")
            found += [("dataframe header", str(config.get(str(name), {}).get("label") or name))
                      for name in node.value.columns]
            found += [("dataframe cell", text) for text in shown_cells(node.value, config)]
            continue
        if kind == "table":
            found += [("table header", str(name)) for name in node.value.columns]
            found += [("table cell", text) for text in shown_cells(node.value, {}, static=True)]
            continue
        try:
            fields = MessageToDict(proto, preserving_proto_field_name=True)
        except (TypeError, AttributeError):
            continue
        found += [(kind, s) for s in _strings(fields) if s.strip()]
    return found


def offenders(texts: Iterable[tuple[str, str]]) -> list[str]:
    """One line per text that breaks a rule: what broke, the element and the text. An element whose kind ends in
    'table', 'cell' or 'tick' is a table's row or cell or an axis's labels (see `too_precise`)."""
    bad = []
    for kind, text in texts:
        if digits := too_precise(text, in_table=kind.endswith(("table", "tick", "cell"))):
            bad.append(f"digits {digits} in {kind}: {text[:300]!r}")
        if fields := leaked_fields(text):
            bad.append(f"field names {fields} in {kind}: {text[:300]!r}")
        elif kind.endswith("header") and (names := SNAKE.findall(text)):  # 'median_ms': a header reads in words
            bad.append(f"identifiers {names} in {kind}: {text!r}")
    return bad
