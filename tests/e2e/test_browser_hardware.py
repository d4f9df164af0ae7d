"""The home and hardware pages in a real headless Chromium."""

import pytest

from core.platform.hardware import cpu_name
from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_idle

pytestmark = pytest.mark.browser


def test_home_then_hardware(page, streamlit_url):
    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_text("When does a GPU beat a CPU").wait_for()
    assert_no_exception(page)
    screenshot(page, "home")

    page.get_by_role("link", name="Hardware check", exact=True).click()
    page.get_by_text(f"CPU: {cpu_name()}").wait_for()
    wait_for_idle(page)
    assert_no_exception(page)
    page.get_by_text("Logical cores").first.wait_for()  # waits; a bare count() raced the rendering under load
    screenshot(page, "hardware")


def test_direct_link_on_a_fresh_server_opens_through_app(page, fresh_streamlit_url):
    """A shared link to /hardware as a restarted server's first request still gets the app's
    navigation (page titles, not file names) rather than Streamlit's pages-folder mode."""
    page.goto(f"{fresh_streamlit_url}/hardware")
    page.get_by_text(f"CPU: {cpu_name()}").wait_for()
    wait_for_idle(page)
    assert_no_exception(page)
    nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
    # the pages-folder mode would list file names ("app", "why parallel") instead of page titles
    assert "Start here" in nav and "Why parallel" in nav, nav
    assert "app" not in nav.split() and "why parallel" not in nav, f"file names in the sidebar: {nav}"
