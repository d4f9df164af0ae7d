"""The real server gives memory back: students opening and closing pages do not make it creep."""

from __future__ import annotations

import time
import urllib.request

import pytest

from bench.classroom_server import PAGES, Student, running_server

pytestmark = pytest.mark.slow  # a real `streamlit run` server

ROUNDS = 4  # rounds of STUDENTS sessions each
STUDENTS = 8
CREEP = 1.10  # the target: within 10 % of the level after the first round


@pytest.fixture(scope="module")
def server():
    with running_server() as (url, process):
        yield url, process


def _round(url: str) -> None:
    tabs = [Student(url) for _ in range(STUDENTS)]
    for tab, page in zip(tabs, ["home", "hardware", "results", "parallel"] * STUDENTS):
        tab.open(PAGES[page])
    for tab in tabs:
        tab.close()
    deadline = time.monotonic() + 30
    while _active_sessions(url):  # the server has dropped every closed session
        assert time.monotonic() < deadline, "the server still holds sessions 30 s after their tabs closed"
        time.sleep(0.1)


def _active_sessions(url: str) -> int:
    """Sessions the server still counts as connected, from its own metrics endpoint."""
    base = url.replace("ws://", "http://").split("/_stcore")[0]
    with urllib.request.urlopen(f"{base}/_stcore/metrics?families=active_sessions", timeout=10) as reply:
        lines = reply.read().decode().splitlines()
    [line] = [line for line in lines if line.startswith("active_sessions ")]
    return int(line.split()[1])


def test_rss_after_repeated_sessions_stays_near_its_level_after_the_first(server):
    url, proc = server
    _round(url)  # the first round pays for imports (torch, plotly) and the server's caches
    first = proc.memory_info().rss
    for _ in range(ROUNDS - 1):
        _round(url)
    last = proc.memory_info().rss
    assert last <= first * CREEP, f"server RSS grew from {first / 2**20:.0f} to {last / 2**20:.0f} MiB"
