"""Page-side glue for the result store: the database URL and instructor key from Streamlit's secrets,
this browser session's owner token, and saving a run.

Not a page (app.py does not list it). core never imports streamlit, so reading `st.secrets` and
`st.session_state` and showing the outcome of a save live here; the pages call `save_run(...)`
once after a run finishes. Who may delete what is core.store.access.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import streamlit as st

from core.errors import DashboardError
from core.results.kinds import Result
from core.results.runs import MEASURED
from core.store import board, key_guard
from core.store.database import DATABASE_URL_ENV, open_store
from core.store.access import (INSTRUCTOR_KEY_ENV, OWNER_COOKIE, Access, Owner, configured_key, cookie_script,
                               new_owner_token, token_shape)
from pages.shared.entry import OWNER_COOKIE_DUE, keep_owner
from core.store.records import RunFilter, RunListing

if TYPE_CHECKING:
    import plotly.graph_objects as go

OWNER_TOKEN = "board_owner_token"  # session state: this session's secret owner token (never shown)
# The browser keeps it in a cookie (core.store.access.OWNER_COOKIE) so a reload keeps the right to delete its runs.
SESSION_TAG = "board_session_tag"  # session state: a short name for the session in an import's provenance
INSTRUCTOR_MODE = "board_instructor"  # session state: True once the right key was entered


def _secret(name: str) -> object | None:
    try:
        return st.secrets.get(name)
    except FileNotFoundError:  # no secrets file at all: the usual case
        return None


def store_url() -> str | None:
    """DATABASE_URL from .streamlit/secrets.toml when set; None lets core use the environment or SQLite."""
    value = _secret(DATABASE_URL_ENV)
    text = str(value).strip() if value is not None else ""
    return text or None


def instructor_key() -> str | None:
    """GPU_VS_CPU_INSTRUCTOR_KEY from the secrets, else the environment; None leaves the board open."""
    return configured_key(_secret(INSTRUCTOR_KEY_ENV))


def owner_token() -> str:
    """This browser session's owner token, on first use the one its browser kept (a reload) if this server
    issued it, else a new one the server records and the browser is given to keep; runs it saves store its
    hash. A store that cannot be reached gives a token for this session only, as before."""
    token = st.session_state.get(OWNER_TOKEN)
    if token is None:
        token = _kept_token() or _issued_token()
        st.session_state[OWNER_TOKEN] = token
    return str(token)


def _browser_cookie() -> str | None:
    """The owner token this browser kept, sent with the page's request (None in a first visit)."""
    return st.context.cookies.get(OWNER_COOKIE)


def _kept_token() -> str | None:
    kept = _browser_cookie()
    try:
        return kept if token_shape(kept) and open_store(store_url()).issued_owner(kept) else None
    except DashboardError:
        return None


def _issued_token() -> str:
    token = new_owner_token()
    try:
        open_store(store_url()).issue_owner(token)
    except DashboardError:
        return token
    _keep_issued(token)
    return token


def _keep_issued(token: str) -> None:
    secure = str(st.context.url or "").startswith("https:")
    st.session_state[OWNER_TOKEN] = token
    st.session_state[OWNER_COOKIE_DUE] = cookie_script(token, secure=secure)  # entry.keep_owner() runs it


def _token_for_save() -> tuple[str, bool]:
    """(this session's owner token, whether the save must record it as issued): a session's first save issues its
    token in the save's own transaction (core.store.database.Store.save), not in one of its own first."""
    token = st.session_state.get(OWNER_TOKEN)
    if token is not None:
        return str(token), False
    kept = _kept_token()
    if kept is not None:
        st.session_state[OWNER_TOKEN] = kept
        return kept, False
    return new_owner_token(), True


def session_tag() -> str:
    """A short random name for this session, recorded in an import's provenance (not the owner token)."""
    tag: str = st.session_state.setdefault(SESSION_TAG, f"browser session {uuid.uuid4().hex[:8]}")
    return tag


def access() -> Access:
    """What this session may delete: any run with no key configured (an open board) or after the key
    was entered; else the runs it saved or imported itself."""
    open_board = instructor_key() is None
    return Access(instructor=open_board or bool(st.session_state.get(INSTRUCTOR_MODE)), owner_token=owner_token())


def enter_key(entered: str) -> bool | None:
    """Check a key typed on the page: True (instructor mode from now on), False (wrong), None (locked: too
    many wrong keys from this client or on this server, core.store.key_guard). Nothing of the key is kept or shown."""
    outcome = key_guard.SERVER_GUARD.check(instructor_key(), entered, st.context.ip_address)
    if outcome:
        st.session_state[INSTRUCTOR_MODE] = True
    return outcome


def save_run(result: Result, *, label: str = "", source: str = MEASURED) -> int | None:
    """Save a finished run for the Results page; a store that fails is a warning, never a lost run.
    `source`: where it was measured (core.results.runs: here, or reported by a student's browser).

    Call it after the run's results are already in st.session_state, so nothing depends on it.
    """
    token, issue = _token_for_save()
    try:
        store = open_store(store_url())
        run_id = store.save(result, label=label, owner=Owner(token, source), issue=issue)
    except DashboardError as exc:
        st.warning(f"The run was not saved to the Results page: {exc}", icon=":material/save:")
        return None
    if issue:  # the save recorded it as issued: this session keeps it, its browser is given it
        _keep_issued(token)
    keep_owner()  # a reload right after this save still may delete the run
    st.toast(f"Saved as run #{run_id} (see Results).", icon=":material/save:")
    return run_id


@st.cache_resource(max_entries=8, show_spinner=False)
def _board_at(url: str | None, limit: int, runs: RunFilter, version: tuple[str, int, int]) -> board.Board:
    return board.read_board(url, limit, runs)


@st.cache_resource(max_entries=4, show_spinner=False)
def _choices_at(url: str | None, version: tuple[str, int, int]) -> tuple[board.Choices, int]:
    return board.choices(url)


@st.cache_resource(max_entries=16, show_spinner=False)
def _compared_at(url: str | None, run_ids: tuple[int, ...], version: tuple[str, int, int]) -> RunListing:
    return board.compared(url, run_ids)


def board_version() -> tuple[str, int, int]:
    """What changes with every save, import and delete: the key the reads below are cached by (one query)."""
    return board.board_version(store_url())


def board_choices(version: tuple[str, int, int]) -> tuple[board.Choices, int]:
    """The filters' options over the whole board and its number of runs, once per board version."""
    return _choices_at(store_url(), version)


def read_board(limit: int, runs: RunFilter, version: tuple[str, int, int]) -> board.Board:
    """The newest `limit` runs `runs` matches, as summaries, read once per board version and filter and
    shared by every session (they are frozen): a rerun, or a second student, reads nothing more.
    Any save, import or delete changes the version."""
    return _board_at(store_url(), limit, runs, version)


def compared(run_ids: list[int], version: tuple[str, int, int]) -> RunListing:
    """The runs chosen for the charts, read in full once per board version and choice (the class
    mostly looks at the same newest runs, so one session's read serves the others)."""
    return _compared_at(store_url(), tuple(run_ids), version)


@st.cache_resource(max_entries=32, show_spinner=False)
def _figures_at(url: str | None, kind: str, run_ids: tuple[int, ...], choices: tuple[str | bool, ...],
                version: tuple[str, int, int]) -> list[tuple[str, go.Figure]]:
    from core.charts.results import view_of  # plotly: only the Results page pays for it

    return view_of(kind).figures(_compared_at(url, run_ids, version).runs, choices)


def figures(kind: str, run_ids: list[int], version: tuple[str, int, int],
            choices: tuple[str | bool, ...] = ()) -> list[tuple[str, go.Figure]]:
    """A kind's Results figures of the chosen runs (its view in core.charts.results), none when none is of
    its kind; built once per board version, choice and choices (a Plotly figure of six runs costs a few
    hundred ms, every session and rerun showing the newest runs shares it; st.plotly_chart copies, never
    changes it)."""
    return _figures_at(store_url(), kind, tuple(run_ids), tuple(choices), version)
