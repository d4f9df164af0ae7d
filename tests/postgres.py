"""A real PostgreSQL server for the store's tests, as a pytest plugin (tests/conftest.py loads it).

TEST_DATABASE_URL, when set, names a server to use. Otherwise, where PostgreSQL's binaries are
installed (Debian: `apt-get install postgresql`), a throwaway cluster is started with initdb and
pg_ctl in a temporary folder on a free port, as the `postgres` user when the tests run as root,
and removed afterwards. Each test gets its own fresh database.

Where neither works the PostgreSQL tests skip with the reason, except under CI=true, where they
fail: CI must never silently stop testing the shared store.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

TEST_URL_ENV = "TEST_DATABASE_URL"
START_TIMEOUT_S = 60


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL tests cannot run under CI: {reason}")
    pytest.skip(reason)


def _bin_dir() -> Path | None:
    """The newest installed server's bin folder (Debian keeps it off PATH), or PATH's."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
                        if Path(p).parent.name.isdigit() else 0)
    for folder in [*reversed(candidates), *(os.environ.get("PATH", "").split(os.pathsep))]:
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _reachable(url: str) -> str | None:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=5, autocommit=True) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return None


@pytest.fixture(scope="session")
def postgres_admin_url() -> Iterator[str]:
    """A superuser URL of a running server: TEST_DATABASE_URL, or a cluster started for this session."""
    url = os.environ.get(TEST_URL_ENV, "").strip()
    if url:
        problem = _reachable(url)
        if problem:
            _unavailable(f"{TEST_URL_ENV} is set but the server is unreachable: {problem}")
        yield url
        return
    bin_dir = _bin_dir()
    if bin_dir is None:
        _unavailable(f"no PostgreSQL server: set {TEST_URL_ENV}, or install the binaries "
                     "(Debian: apt-get install postgresql) so the tests start their own")
    as_root = os.geteuid() == 0
    if as_root and shutil.which("runuser") is None:
        _unavailable("running as root without runuser, so initdb cannot run as another user")
    run_as = ["runuser", "-u", "postgres", "--"] if as_root else []
    root = Path(tempfile.mkdtemp(prefix="gvc-pg-"))
    if as_root:
        try:
            shutil.chown(root, user="postgres")
        except (LookupError, OSError) as exc:
            shutil.rmtree(root, ignore_errors=True)
            _unavailable(f"cannot hand a folder to the postgres user ({exc})")
    data, port = root / "data", _free_port()
    ctl = [*run_as, str(bin_dir / "pg_ctl"), "-D", str(data)]
    try:
        subprocess.run([*run_as, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                        "-E", "UTF8", "--no-sync"], check=True, capture_output=True, timeout=START_TIMEOUT_S)
        subprocess.run([*ctl, "-l", str(root / "server.log"), "-w", "-t", str(START_TIMEOUT_S), "-o",
                        f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off", "start"],
                       check=True, capture_output=True, timeout=START_TIMEOUT_S + 10)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        log = (root / "server.log").read_text()[-2000:] if (root / "server.log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        _unavailable(f"could not start a throwaway PostgreSQL: {exc} {detail.decode(errors='replace')} {log}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*ctl, "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_admin_url) -> Iterator[str]:
    """A fresh, empty database for one test, dropped afterwards."""
    import psycopg

    name = f"gvc_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield _with_dbname(postgres_admin_url, name)
    with psycopg.connect(postgres_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _with_dbname(url: str, name: str) -> str:
    """The same server URL with another database name."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
