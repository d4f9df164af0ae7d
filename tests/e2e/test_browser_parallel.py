"""The 'why parallel' page in a real headless Chromium: open it, run the marbles, see the chart."""

import pytest

from core.parallel.registry import SECTIONS
from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_idle

pytestmark = pytest.mark.browser


def test_run_the_marbles_section(page, streamlit_url):
    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_role("link", name="Why parallel", exact=True).click()
    page.get_by_text("1. Marbles: one worker or many").wait_for()
    wait_for_idle(page)  # the whole page drawn, not only its first section
    assert_no_exception(page)
    for section in SECTIONS:  # every registered section, in page order, with its Run button
        assert page.get_by_role("heading", name=section.title).count() == 1, section.title
        run = page.locator(f".st-key-wp_run_{section.key} button")
        run.wait_for()  # on a busy machine the last sections' buttons can arrive after the headings
        assert run.count() == 1
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 0

    page.locator(".st-key-wp_run_marbles button").click()
    chart = page.locator(".st-key-wp_chart_marbles [data-testid='stPlotlyChart']")
    chart.wait_for(timeout=120_000)
    wait_for_idle(page)
    assert_no_exception(page)
    alerts = page.locator('[data-testid="stAlert"]').all_inner_texts()
    assert all("Machine busy: figures may be noisy" in text for text in alerts), alerts  # no st.error
    chart.locator(".main-svg").first.wait_for()  # plotly drew it
    assert chart.get_by_text("ideal: k workers, k× as fast").count() >= 1
    chart.scroll_into_view_if_needed()
    screenshot(page, "why_parallel")


def test_every_section_draws_its_chart(page, streamlit_url):
    """Each section run once with its defaults, each chart screenshotted: the page as a class sees it."""
    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_role("link", name="Why parallel", exact=True).click()
    page.get_by_text("1. Marbles: one worker or many").wait_for()
    wait_for_idle(page)
    for section in SECTIONS:
        page.locator(f".st-key-wp_run_{section.key} button").click()
        chart = page.locator(f".st-key-wp_chart_{section.key} [data-testid='stPlotlyChart']")
        chart.wait_for(timeout=180_000)
        wait_for_idle(page, 180_000)
        assert_no_exception(page)
        chart.locator(".main-svg").first.wait_for()
        if section.key == "processes":  # real worker processes under torchrun, launched from the page
            assert chart.get_by_text("all_gather (and waiting)").count() >= 1
        chart.scroll_into_view_if_needed()
        screenshot(page, f"why_parallel_{section.key}")
