"""Every page at a classroom projector's 1280 × 720: the main button, and after pressing it the progress
or the first result, inside the viewport without scrolling; a screenshot of every page for the record."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import ARTIFACTS, TOAST, TOAST_GONE_MS, assert_no_exception, upload, wait_for_idle
from tests.review_fixtures import csv_bytes, toy_reviews

pytestmark = pytest.mark.browser
WIDTH, HEIGHT = 1280, 720
PAGES = ["Start here", "Hardware check", "Matmul race", "Every device at once", "Roofline", "Review classifier",
         "Data-parallel scaling", "Why parallel", "Results", "Class board"]
HEADINGS = {"Start here": "When does a GPU beat a CPU"}  # a page whose title is not its name in the menu
VISIBLE_PX = 24  # at least this much of an element's top inside the viewport counts as seen
MAIN = '[data-testid="stMainBlockContainer"]'
# what a run shows first: a progress bar, a status line, a crossover box, a chart, metrics
PROGRESS_OR_RESULT = (f'{MAIN} [data-testid="stProgress"], {MAIN} [data-testid="stAlert"], '
                      f'{MAIN} [data-testid="stPlotlyChart"], {MAIN} [data-testid="stMetric"]')


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
    page.get_by_role("heading", name=HEADINGS.get(name, name)).first.wait_for()
    wait_for_idle(page)
    assert_no_exception(page)


def _in_view(box: dict | None) -> bool:
    return box is not None and box["y"] >= 0 and box["y"] + min(box["height"], VISIBLE_PX) <= HEIGHT


def _main_scrolled(page) -> int:
    return page.evaluate("() => document.querySelector('[data-testid=\"stMain\"]')?.scrollTop ?? 0")


def _seen_after_click(page, button, timeout_s: float = 120) -> str:
    """Click a button that is already in view and return which kind of element first showed in view."""
    assert _in_view(button.bounding_box()), f"the button is below the fold: {button.bounding_box()}"
    button.click()
    for _ in range(int(timeout_s * 10)):
        for element in page.locator(PROGRESS_OR_RESULT).all():
            try:
                if element.is_visible() and _in_view(element.bounding_box()):
                    return element.get_attribute("data-testid") or "?"
            except Exception:  # noqa: BLE001 - the element went away between the listing and the look (a finished bar)
                continue
        page.wait_for_timeout(100)
    raise AssertionError("no progress or result came into view after the click")


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    if page.locator(TOAST).count():
        page.locator(TOAST).last.wait_for(state="detached", timeout=TOAST_GONE_MS)
    page.screenshot(path=str(ARTIFACTS / f"projector_{name}.png"))  # the viewport: what the room sees


def test_every_page_at_projector_size(projector, streamlit_url):
    for name in PAGES:
        _open(projector, streamlit_url, name)
        assert _in_view(projector.get_by_role("heading", name=HEADINGS.get(name, name)).first.bounding_box())
        _shot(projector, name.lower().replace(" ", "_"))


def _sidebar_slider(page, label: str):
    return page.locator('[data-testid="stSidebar"] [data-testid="stSlider"]').filter(has_text=label)


def test_matmul_race_run_shows_progress_and_result_in_view(projector, streamlit_url):
    page = projector
    _open(page, streamlit_url, "Matmul race")
    sizes = _sidebar_slider(page, "Matrix sizes")
    for thumb, times in ((sizes.get_by_role("slider").nth(0), 2), (sizes.get_by_role("slider").nth(1), 6)):
        thumb.focus()
        for _ in range(times):
            thumb.press("ArrowLeft")
        wait_for_idle(page)
    page.locator(MAIN).get_by_role("textbox", name="Your guess").fill("512")
    page.locator(MAIN).get_by_role("textbox", name="Your guess").press("Enter")
    wait_for_idle(page)
    assert _main_scrolled(page) == 0
    seen = _seen_after_click(page, page.locator(MAIN).get_by_role("button", name="Run", exact=True))
    assert seen in ("stProgress", "stAlert", "stPlotlyChart")
    wait_for_idle(page)
    assert_no_exception(page)
    first_result = page.locator(f'{MAIN} [data-testid="stAlert"]').first  # the crossover box, under Run
    assert _in_view(first_result.bounding_box()), first_result.bounding_box()
    guess = page.get_by_text("You guessed a crossover at n = 512")
    assert guess.count() == 1 and _in_view(guess.bounding_box())  # the guess beside the measurement
    _shot(page, "matmul_race_after_run")


def test_roofline_run_shows_progress_or_result_in_view(projector, streamlit_url):
    _open(projector, streamlit_url, "Roofline")
    _seen_after_click(projector, projector.locator(MAIN).get_by_role("button", name="Measure the roofs"))
    projector.locator(f'{MAIN} [data-testid="stPlotlyChart"]').first.wait_for(timeout=180_000)
    wait_for_idle(projector)
    assert_no_exception(projector)
    _shot(projector, "roofline_after_run")


def test_review_classifier_train_shows_progress_or_result_in_view(projector, streamlit_url, tmp_path):
    reviews = toy_reviews(30)
    csv = tmp_path / "tiny_reviews.csv"
    csv.write_bytes(csv_bytes([(t, "pos" if y else "neg") for t, y in zip(reviews.texts, reviews.labels)]))
    _open(projector, streamlit_url, "Review classifier")
    projector.get_by_text("upload a file").click()
    wait_for_idle(projector)
    upload(projector, csv)
    projector.locator(MAIN).get_by_role("textbox", name="Your guess").fill("0.5 s")
    projector.locator(MAIN).get_by_role("textbox", name="Your guess").press("Enter")
    wait_for_idle(projector)
    _seen_after_click(projector, projector.locator(MAIN).get_by_role("button", name="Train"))
    projector.get_by_text("You guessed 500 ms per epoch").wait_for(timeout=120_000)
    wait_for_idle(projector)
    assert_no_exception(projector)
    assert _in_view(projector.get_by_text("You guessed 500 ms per epoch").bounding_box())
    _shot(projector, "review_classifier_after_run")


def test_why_parallel_run_shows_progress_or_result_in_view(projector, streamlit_url):
    _open(projector, streamlit_url, "Why parallel")
    _seen_after_click(projector, projector.locator(".st-key-wp_run_marbles button"))
    projector.locator(".st-key-wp_chart_marbles [data-testid='stPlotlyChart']").wait_for(timeout=120_000)
    wait_for_idle(projector)
    assert_no_exception(projector)
    _shot(projector, "why_parallel_after_run")
