"""A real `streamlit run app.py` on a free localhost port, driven by Debian's Chromium via Playwright.

Outside CI a missing browser skips these tests (a user's laptop may have none); under CI=true it
fails them, so the browser test can never silently stop running.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts"
SERVER_START_S = 90
# Flags that keep Chromium off the network it cannot reach here, and working as root in a container.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]
APP_IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _missing_browser(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests cannot run under CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def e2e_home(tmp_path_factory) -> Path:
    """The server's user folders: a test seeds `e2e_home / "data"` (the result store) before opening a page."""
    return tmp_path_factory.mktemp("e2e-userdirs")


@contextmanager
def _server(home: Path) -> Iterator[str]:
    """`streamlit run app.py` on a free port with its user folders in `home`; yields its URL."""
    port = _free_port()
    env = dict(os.environ, GPU_VS_CPU_CACHE_DIR=str(home / "cache"), GPU_VS_CPU_DATA_DIR=str(home / "data"),
               GPU_VS_CPU_LOCK_DIR=str(home / "locks"), PYTHONUNBUFFERED="1")
    env.pop("DATABASE_URL", None)  # the server's store is the SQLite file in home/data, never a real board
    log = open(home / "streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_S
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not start; log:\n{(home / 'streamlit.log').read_text()[-3000:]}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def streamlit_url(e2e_home) -> Iterator[str]:
    """One server shared by the browser tests of a run."""
    with _server(e2e_home) as url:
        yield url


@pytest.fixture
def fresh_streamlit_url(tmp_path) -> Iterator[str]:
    """A server no browser has visited yet, for what only happens on the first request."""
    with _server(tmp_path) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        _missing_browser(f"{CHROMIUM} not found (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing_browser("python package playwright is not installed (pip install -r requirements-dev.txt)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    context.close()


SETTLE_MS = 300  # a widget's rerun request leaves the app marked notRunning until the server starts the run


def wait_for_idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until the script has run to the end and stayed idle for SETTLE_MS.

    Streamlit marks the app `notRunning` between runs, but a click or a changed widget does not
    change that mark when it asks for a rerun: only the server's "run started" does. Seen straight
    after a click, `notRunning` may describe the run before it; seen twice, SETTLE_MS apart, it
    describes the run the click asked for.
    """
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_ms)
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        page.wait_for_selector(APP_IDLE, timeout=max(1, (deadline - time.monotonic()) * 1000))
        page.wait_for_timeout(SETTLE_MS)
        if page.locator(APP_IDLE).count():  # else a run started meanwhile: wait for it too (or time out above)
            return


def upload(page, path: Path) -> None:
    """Choose a file in the page's uploader and wait until the server has it.

    The uploader lists the file at once and uploads it in the background (a spinner on its chip);
    a click before the upload has finished reaches a script that has no file yet.
    """
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(path))
    page.get_by_test_id("stFileChip").first.wait_for()
    page.get_by_test_id("stFileChipIconSpinner").first.wait_for(state="detached")
    wait_for_idle(page)


TOAST = '[data-testid="stToast"]'
TOAST_GONE_MS = 8_000  # Streamlit closes a toast after about 4 s


def screenshot(page, name: str) -> Path:
    """The page at the test's viewport (1400 × 1000) as test-artifacts/<name>.png, which CI keeps.

    A "Saved as run #N" toast lies over the charts for a few seconds; wait until it has gone, so
    the picture shows the page a class reads rather than the passing notice.
    """
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    if page.locator(TOAST).count():
        page.locator(TOAST).last.wait_for(state="detached", timeout=TOAST_GONE_MS)
    page.screenshot(path=str(path), full_page=True)
    return path


def assert_no_exception(page) -> None:
    count = page.locator('[data-testid="stException"]').count()
    assert count == 0, page.locator('[data-testid="stException"]').first.inner_text()
