"""Who may delete which run on a shared board: the instructor any run, a student browser its own.

A class shares one board, so one browser must not be able to wipe another's runs. Each browser
session gets a random owner token (kept in its session state, never shown); a run saved or
imported by that session stores the token's SHA-256, so the session — and nobody else — can
delete it later. The browser keeps the token in a cookie of this site (OWNER_COOKIE), so a reload keeps
that right: a new session takes the cookie's token back only if this server issued it (the store keeps
the hashes of the tokens it issued, `Store.issued_owner`), so a made-up token gives nothing. The
instructor key (GPU_VS_CPU_INSTRUCTOR_KEY, or the same name in Streamlit's secrets) lets a browser
delete any run; the command line on the server is the instructor (whoever runs it can open the database
anyway). With no key configured the board stays open, as before,
and the Results page says that anyone may delete.

Keys are compared in constant time (hmac.compare_digest over digests, so not even the length
leaks) and never written into a page, a log or a message.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass

from core.results.runs import MEASURED

INSTRUCTOR_KEY_ENV = "GPU_VS_CPU_INSTRUCTOR_KEY"
MIN_KEY_CHARS = 8  # a shorter key is guessed by a class in an afternoon


@dataclass(frozen=True)
class Owner:
    """Who saves a run: a browser session's token (it may delete the run later; None: the command line, whose
    runs only the instructor deletes) and where the run was measured (core.results.runs: here, or the notebook)."""

    token: str | None = None
    source: str = MEASURED

    def __repr__(self) -> str:  # the token never lands in a log through a repr
        return f"Owner(token={'set' if self.token else None}, source={self.source!r})"


COMMAND_LINE = Owner()  # a run saved by `python -m core ... --save`: measured here, no browser owns it


@dataclass(frozen=True)
class Access:
    """What the caller may delete: every run (`instructor`), or the runs saved with `owner_token`."""

    instructor: bool
    owner_token: str | None = None

    def __repr__(self) -> str:  # the token never lands in a log through a repr
        return f"Access(instructor={self.instructor}, owner_token={'set' if self.owner_token else None})"

    @property
    def owner_hash(self) -> str | None:
        return owner_hash(self.owner_token) if self.owner_token else None

    def may_delete(self, stored_owner: str | None) -> bool:
        """True for the instructor, and for the session whose token's hash the run stored."""
        if self.instructor:
            return True
        mine = self.owner_hash
        return mine is not None and stored_owner is not None and hmac.compare_digest(mine, stored_owner)


INSTRUCTOR = Access(instructor=True)  # the command line on the server, and an open board


def new_owner_token() -> str:
    """A fresh session's token: 256 random bits, unguessable by another browser."""
    return secrets.token_urlsafe(32)


OWNER_COOKIE = "gvc_owner"  # the browser keeps its owner token here, so a reload keeps the right to delete its runs
OWNER_KEPT_DAYS = 7  # how long a browser's token is taken back: a week of a course's sessions
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{43}")  # what new_owner_token makes


def token_shape(text: object) -> bool:
    """Could `text` be a token this server made? Anything else is not looked up."""
    return isinstance(text, str) and _TOKEN_SHAPE.fullmatch(text) is not None


def cookie_script(token: str, *, secure: bool) -> str:
    """The script a page runs once to keep the session's token in the browser (a cookie of this site only,
    sent back when the page is loaded again). The token is one the server made (token_shape), so it needs no
    quoting; SameSite=Strict keeps other sites' links from carrying it."""
    if not token_shape(token):
        raise ValueError("not an owner token")
    attributes = f"path=/; max-age={OWNER_KEPT_DAYS * 86400}; SameSite=Strict" + ("; Secure" if secure else "")
    return f"<script>document.cookie = '{OWNER_COOKIE}={token}; {attributes}';</script>"


def owner_hash(token: str) -> str:
    """What the store keeps of a token: reading the database does not let anyone act as the session."""
    return hashlib.sha256(token.encode()).hexdigest()


SERVER_MARK = "server"  # the mark of a run no browser session owns: the command line, or saved before owners existed
MARK_CHARS = 6  # 16.7 million marks: a student would need that many fresh sessions to draw a classmate's


def session_mark(stored_owner: str | None) -> str:
    """A short mark for the browser session that saved a run, from the owner hash the store keeps: the Class
    board shows it beside a name, so two sessions typing "Ana" are two groups, told apart. The token is the
    server's random secret, so no one can choose a session whose mark is another's; the mark is a digest of
    the hash, so it does not reveal the hash either."""
    if not stored_owner:
        return SERVER_MARK
    return hashlib.sha256(f"class board mark:{stored_owner}".encode()).hexdigest()[:MARK_CHARS]


def configured_key(secret: object | None = None) -> str | None:
    """The instructor key: `secret` (the page passes Streamlit's secret) else the environment; None when unset."""
    for value in (secret, os.environ.get(INSTRUCTOR_KEY_ENV)):
        text = str(value).strip() if value is not None else ""
        if text:
            return text
    return None


def key_matches(configured: str | None, entered: str | None) -> bool:
    """True when `entered` is the configured key; constant time, and False when no key is configured."""
    if not configured or not entered:
        return False
    return hmac.compare_digest(hashlib.sha256(configured.encode()).digest(),
                               hashlib.sha256(entered.strip().encode()).digest())


def key_too_short(configured: str | None) -> bool:
    """A configured key too short to keep a class out (the page warns the instructor)."""
    return configured is not None and len(configured) < MIN_KEY_CHARS
