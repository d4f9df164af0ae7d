"""Issue 30.1: no part of a database password in any text made from DATABASE_URL, whatever its form.

Every case is a password as the instructor meant it and the URL as they typed it (special characters
not percent-encoded, or encoded, or elsewhere). No run of three characters of the password may show in
the store's description, the message of a failed connect (a closed local port), a log line, or the
Results and Class board pages.
"""

from __future__ import annotations

import logging
import socket
from urllib.parse import quote

import pytest

from core.errors import DashboardError
from core.store import url_redaction
from core.store.database import Store, open_store

PW = "Zq9Kx7Wv"


def _cases(port: int) -> dict[str, tuple[str, str]]:
    """name: (the password meant, the URL typed)."""
    at = f"127.0.0.1:{port}"
    raw = {
        "slash": "Zq9K/x7Wv-SECRET", "at": "Zq9K@x7Wv", "colon": "Zq9K:x7Wv", "space": "Zq9K x7Wv",
        "hash": "Zq9K#x7Wv", "question": "Zq9K?x7Wv", "bad escape": "Zq9K%zzx7Wv", "percent at end": "Zq9Kx7W%",
        "ampersand equals": "Zq9K&x7=Wv", "all of them": "Zq/9@K:x #7?W%vQj", "holds the host": f"Qj{at}Zv",
        "holds the database": "Qjkq7dbZv", "two ats": "Zq@@x7Wv", "backslash": "Zq9K\\x7Wv",
        "non-ascii": "Zq9Kéx7Wv",
    }
    cases = {name: (pw, f"postgresql://teacher:{pw}@{at}/kq7db") for name, pw in raw.items()}
    cases["empty user"] = (PW, f"postgresql://:{PW}@{at}/kq7db")
    cases["empty user, slash"] = ("Zq9K/x7Wv", f"postgresql://:Zq9K/x7Wv@{at}/kq7db")
    cases["no user, no colon"] = ("Zq9Kx7/Wv", f"postgres://Zq9Kx7/Wv@{at}/kq7db")
    cases["encoded"] = ("Zq9K/x7@Wv", f"postgresql://teacher:{quote('Zq9K/x7@Wv', safe='')}@{at}/kq7db")
    cases["in the query"] = (PW, f"postgresql://teacher@{at}/kq7db?password={PW}")
    cases["in the query, slash"] = ("Zq9K/x7Wv", f"postgresql://teacher@{at}/kq7db?password=Zq9K/x7Wv")
    cases["in the query, at"] = ("Zq9K@x7Wv", f"postgresql://teacher@{at}/kq7db?password=Zq9K@x7Wv")
    cases["well formed"] = (PW, f"postgresql://teacher:{PW}@{at}/kq7db")
    cases["well formed, holds the host"] = ("Qj127.0.0.1Zv", f"postgresql://teacher:Qj127.0.0.1Zv@{at}/kq7db")
    cases["well formed, holds the port"] = (f"Qj{port}Zv", f"postgresql://teacher:Qj{port}Zv@{at}/kq7db")
    return cases


def _leaks(text: str, password: str) -> list[str]:
    return sorted({password[i:i + 3] for i in range(len(password) - 2) if password[i:i + 3] in text})


@pytest.fixture(scope="module")
def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


CASE_NAMES = list(_cases(1))


@pytest.mark.parametrize("case", CASE_NAMES)
def test_no_part_of_the_password_in_the_description_errors_or_logs(case, closed_port, caplog):
    password, url = _cases(closed_port)[case]
    caplog.set_level(logging.DEBUG)
    store = Store(url)
    assert not _leaks(store.describe(), password), store.describe()
    with pytest.raises(DashboardError, match="DATABASE_URL") as err:
        open_store(url)
    assert not _leaks(str(err.value), password), str(err.value)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert not _leaks(logged, password), logged


@pytest.mark.parametrize("message", [
    'connection to server at "127.0.0.1" failed: password authentication failed for user "teacher"',
    "could not connect to postgresql://teacher:{pw}@127.0.0.1:5432/kq7db",
    "conninfo: host=127.0.0.1 password={pw} user=teacher",
    "invalid port number: \"{tail}\"",
    "dbname {tail}@127.0.0.1:5432/kq7db",
])
@pytest.mark.parametrize("case", CASE_NAMES)
def test_a_driver_message_echoing_any_piece_is_blanked(message, case):
    """Whatever a driver printed of the URL, as written or decoded, in whatever pieces: redact blanks it."""
    password, url = _cases(5432)[case]
    for piece in (password, password[len(password) // 2:]):
        shown = url_redaction.redact(message.format(pw=password, tail=piece), url)
        assert not _leaks(shown, password), shown


def test_a_well_formed_url_still_names_its_database_and_host():
    store = Store("postgresql://teacher:Zq9Kx7Wv@db.school.example:6543/class")
    assert store.describe() == "PostgreSQL database class on db.school.example:6543 (shared)"
    assert url_redaction.read_url("postgresql://t:p%2F%40@h1:5432,h2/db?sslmode=require&connect_timeout=5")
    assert url_redaction.read_url("postgresql:///db?host=/var/run/postgresql")
    assert url_redaction.read_url("postgresql://t:p/q@h/db") is None


def test_a_malformed_url_is_never_handed_to_the_driver(monkeypatch):
    import psycopg

    def connect(*args, **kwargs):
        raise AssertionError("the driver was called")

    monkeypatch.setattr(psycopg, "connect", connect)
    with pytest.raises(DashboardError, match="percent-encode"):
        open_store("postgresql://teacher:pa/ss-SECRET@127.0.0.1:5/class")


def test_an_unknown_scheme_is_named_only_when_it_looks_like_one():
    with pytest.raises(DashboardError) as err:
        open_store("teacher:Zq9Kx7Wv@db://class")
    assert not _leaks(str(err.value), "Zq9Kx7Wv")


@pytest.mark.parametrize("page", ["pages/results.py", "pages/class_board.py"])
def test_the_pages_show_no_part_of_the_password(page, app, closed_port, monkeypatch):
    for password, url in _cases(closed_port).values():
        monkeypatch.setenv("DATABASE_URL", url)
        at = app.switch_page(page)
        at.run()
        assert not at.exception, at.exception
        shown = "\n".join(str(e.value) for kind in ("markdown", "caption", "error", "warning", "info", "success")
                          for e in at.get(kind))
        assert shown and not _leaks(shown, password), shown
