"""At a classroom projector's 1280 × 720, after its Run, each page's first chart starts inside the viewport
without scrolling (issue 34): the class sees what it came for, not only the button. A screenshot of the
viewport after each run goes to test-artifacts/first_chart_<page>.png."""

from __future__ import annotations

import pytest

from pages.shared.layout import SIDEBAR_PX
from tests.e2e.conftest import ARTIFACTS, TOAST, TOAST_GONE_MS, assert_no_exception, upload, wait_for_idle
from tests.review_fixtures import csv_bytes, toy_reviews

pytestmark = pytest.mark.browser
WIDTH, HEIGHT = 1280, 720
MAIN = '[data-testid="stMainBlockContainer"]'
SHOWN_PX = 150  # at least this much of the chart's height inside the viewport: its title and the top of its plot
RUN_S = 240_000


@pytest.fixture
def projector(browser):
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    context.close()


def _open(page, url: str, name: str) -> None:
    page.goto(url)
    wait_for_idle(page)
    page.get_by_role("link", name=name, exact=True).click()
    page.get_by_role("heading", name=name).first.wait_for()
    wait_for_idle(page)
    assert_no_exception(page)


def _assert_chart_in_view(page, chart, name: str) -> None:
    """The chart's top lies in the viewport with SHOWN_PX of it showing, the page unscrolled; screenshots either way."""
    chart.wait_for(timeout=RUN_S)
    wait_for_idle(page, timeout_ms=RUN_S)
    assert_no_exception(page)
    ARTIFACTS.mkdir(exist_ok=True)
    if page.locator(TOAST).count():
        page.locator(TOAST).last.wait_for(state="detached", timeout=TOAST_GONE_MS)
    page.mouse.move(WIDTH - 2, HEIGHT - 2)  # no button's tooltip over the picture (hover, or focus: blur it)
    page.evaluate("() => document.activeElement?.blur()")
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / f"first_chart_{name}.png"))
    scrolled = page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollTop ?? 0")
    box = chart.bounding_box()
    chart.screenshot(path=str(ARTIFACTS / f"first_chart_{name}_whole.png"))  # the whole chart, scrolled to
    assert scrolled == 0
    assert box is not None and 0 <= box["y"] and box["y"] + SHOWN_PX <= HEIGHT, f"{name}: chart at {box}"
    sidebar = page.locator('[data-testid="stSidebar"]').bounding_box()  # 240 px of 1,280, not Streamlit's 300
    assert sidebar is not None and sidebar["width"] <= SIDEBAR_PX + 1, sidebar


def _upload_tiny_reviews(page, tmp_path) -> None:
    reviews = toy_reviews(30)
    csv = tmp_path / "tiny_reviews.csv"
    csv.write_bytes(csv_bytes([(t, "pos" if y else "neg") for t, y in zip(reviews.texts, reviews.labels)]))
    page.get_by_text("upload a file").click()
    wait_for_idle(page)
    upload(page, csv)


def test_roofline_chart_in_view_after_run(projector, streamlit_url):
    _open(projector, streamlit_url, "Roofline")
    projector.locator(MAIN).get_by_role("button", name="Measure the roofs").click()
    _assert_chart_in_view(projector, projector.locator(f'{MAIN} [data-testid="stPlotlyChart"]').first, "roofline")


@pytest.mark.parametrize("button", ["Train", "Both presets"])
def test_review_classifier_chart_in_view_after_run(projector, streamlit_url, tmp_path, button):
    _open(projector, streamlit_url, "Review classifier")
    _upload_tiny_reviews(projector, tmp_path)
    projector.locator(MAIN).get_by_role("button", name=button).click()
    key = "clf_loss" if button == "Train" else "clf_both_chart"
    chart = projector.locator(f".st-key-{key} [data-testid='stPlotlyChart']")
    _assert_chart_in_view(projector, chart, "review_classifier_" + button.lower().replace(" ", "_"))


def test_why_parallel_first_section_chart_in_view_after_run(projector, streamlit_url):
    _open(projector, streamlit_url, "Why parallel")
    projector.locator(".st-key-wp_run_marbles button").click()
    chart = projector.locator(".st-key-wp_chart_marbles [data-testid='stPlotlyChart']")
    _assert_chart_in_view(projector, chart, "why_parallel")


def test_matmul_race_chart_in_view_after_run(projector, streamlit_url):
    _open(projector, streamlit_url, "Matmul race")
    sizes = projector.locator('[data-testid="stSlider"]').filter(has_text="Matrix sizes")
    for thumb, times in ((sizes.get_by_role("slider").nth(0), 2), (sizes.get_by_role("slider").nth(1), 6)):
        thumb.focus()  # 64 -> 16 and 2048 -> 32: a race of seconds
        for _ in range(times):
            thumb.press("ArrowLeft")
        wait_for_idle(projector)
    guess = projector.locator(MAIN).get_by_role("textbox", name="Your guess")  # its comparison above the chart too
    guess.fill("512")
    guess.press("Enter")
    wait_for_idle(projector)
    projector.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollTo(0, 0)")
    projector.locator(MAIN).get_by_role("button", name="Run", exact=True).click()
    _assert_chart_in_view(projector, projector.locator(".st-key-mm_time_chart [data-testid='stPlotlyChart']"),
                          "matmul_race")
