"""The page layer stays thin: every page file (and app.py) within 90 lines, one job per page, and the shared
widget modules under pages/shared/ start no job and download nothing (core does, behind a page's one call)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_PAGE_LINES = 90  # docs/architecture.md, "Adding a page": beyond this a page is doing more than render
PAGES = sorted((ROOT / "pages").glob("*.py"))
SHARED = sorted((ROOT / "pages" / "shared").glob("*.py"))
STARTS_WORK = {"page_job", "fetch", "run_job", "hold_devices"}  # a job, a download, a device lock


def _calls(path: Path) -> list[str]:
    return [node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Name, ast.Attribute))]


def _imported_names(path: Path) -> set[str]:
    return {alias.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def test_there_are_pages_to_check():
    assert len(PAGES) >= 10 and len(SHARED) >= 10


@pytest.mark.parametrize("path", [*PAGES, ROOT / "app.py"], ids=lambda p: p.name)
def test_a_page_file_is_at_most_90_lines(path: Path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_PAGE_LINES, (f"{path.name} has {lines} lines (at most {MAX_PAGE_LINES}): move "
                                     "logic into core, a widget group into pages/shared/, or a second job to a page")


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_a_page_runs_at_most_one_job(path: Path):
    assert _calls(path).count("page_job") <= 1, f"{path.name}: a second job gets a page of its own"


@pytest.mark.parametrize("path", [p for p in SHARED if p.name != "device_wait.py"], ids=lambda p: p.name)
def test_shared_widget_modules_start_no_job_and_download_nothing(path: Path):
    used = (set(_calls(path)) | _imported_names(path)) & STARTS_WORK
    assert not used, f"pages/shared/{path.name} uses {sorted(used)}: a page's one core call does that"


def test_the_checks_can_fail(tmp_path: Path):
    long_page = tmp_path / "long.py"
    long_page.write_text("import streamlit as st\n" + "st.write(1)\n" * MAX_PAGE_LINES)
    two_jobs = tmp_path / "two.py"
    two_jobs.write_text("from pages.shared.device_wait import page_job\nwith page_job('a'): pass\n"
                        "with page_job('b'): pass\n")
    downloads = tmp_path / "dl.py"
    downloads.write_text("from core.classifier.datasets import fetch\nfetch('rt-polarity')\n")
    with pytest.raises(AssertionError):
        test_a_page_file_is_at_most_90_lines(long_page)
    with pytest.raises(AssertionError):
        test_a_page_runs_at_most_one_job(two_jobs)
    with pytest.raises(AssertionError):
        test_shared_widget_modules_start_no_job_and_download_nothing(downloads)
