"""The Matmul race in a real headless Chromium: shrink the sweep with the keyboard, run it, see the chart."""

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_idle

pytestmark = pytest.mark.browser


def _slider(page, label: str):
    return page.locator('[data-testid="stSlider"]').filter(has_text=label)


def _press(page, thumb, key: str, times: int) -> None:
    thumb.focus()
    for _ in range(times):
        thumb.press(key)
    wait_for_idle(page)


def test_a_tiny_sweep_draws_the_race(page, streamlit_url):
    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_role("link", name="Matmul race", exact=True).click()
    page.get_by_role("heading", name="Matmul race").wait_for()
    wait_for_idle(page)
    assert_no_exception(page)

    sizes = _slider(page, "Matrix sizes")
    low, high = sizes.get_by_role("slider").nth(0), sizes.get_by_role("slider").nth(1)
    _press(page, low, "ArrowLeft", 2)  # 64 -> 16
    _press(page, high, "ArrowLeft", 6)  # 2048 -> 32
    _press(page, _slider(page, "Time budget").get_by_role("slider").first, "ArrowLeft", 2)  # 1 s -> 0.25 s
    text = sizes.inner_text() + _slider(page, "Time budget").inner_text()
    assert "16" in text and "32" in text and "0.25" in text, text

    page.get_by_role("button", name="Run", exact=True).click()
    page.locator('[data-testid="stPlotlyChart"]').first.wait_for(timeout=120_000)
    wait_for_idle(page)
    assert_no_exception(page)
    assert page.locator(".js-plotly-plot .scatterlayer .trace").count() >= 1  # lines drawn, not an empty frame
    assert page.get_by_text("Download CSV").count() == 1
    # the results table (the verdicts one is in a closed expander)
    page.locator("[data-testid=\"stDataFrame\"]:visible").first.wait_for()
    page.locator('[data-testid="stPlotlyChart"]').first.scroll_into_view_if_needed()
    screenshot(page, "matmul_race")
    for tab, name in (("GFLOP/s", "matmul_race_gflops"), ("Speed-up", "matmul_race_speedup")):
        page.get_by_role("tab", name=tab).click()
        chart = page.locator('[data-testid="stPlotlyChart"]:visible').first
        chart.locator(".main-svg").first.wait_for()
        chart.scroll_into_view_if_needed()
        screenshot(page, name)
