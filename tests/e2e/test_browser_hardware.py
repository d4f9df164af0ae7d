"""The home and hardware pages in a real headless Chromium."""

import pytest

from core.hardware import cpu_name
from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_idle

pytestmark = pytest.mark.browser


def test_home_then_hardware(page, streamlit_url):
    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_text("When does a GPU beat a CPU").wait_for()
    assert_no_exception(page)
    screenshot(page, "home")

    page.get_by_role("link", name="Hardware check").click()
    page.get_by_text(f"CPU: {cpu_name()}").wait_for()
    wait_for_idle(page)
    assert_no_exception(page)
    assert page.get_by_text("Logical cores").count() >= 1
    screenshot(page, "hardware")
