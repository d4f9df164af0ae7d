"""The Review classifier in a real headless Chromium: upload a tiny CSV, train, see the loss chart."""

import re

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, upload, wait_for_idle
from tests.review_fixtures import csv_bytes, toy_reviews

pytestmark = pytest.mark.browser


def test_upload_train_and_see_the_loss_chart(page, streamlit_url, tmp_path):
    reviews = toy_reviews(30)
    csv = tmp_path / "tiny_reviews.csv"
    csv.write_bytes(csv_bytes([(t, "pos" if y else "neg") for t, y in zip(reviews.texts, reviews.labels)]))

    # Through the app's navigation: a direct /review_classifier as the server's first request would run the
    # page in Streamlit's legacy pages/ mode (app.py's st.navigation never runs), see the report to the lead.
    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_role("link", name="Review classifier", exact=True).click()
    page.get_by_role("heading", name="Review classifier").wait_for()
    wait_for_idle(page)
    assert_no_exception(page)

    page.get_by_text("upload a file").click()
    wait_for_idle(page)
    upload(page, csv)

    page.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Train").click()
    page.get_by_text("Run history").wait_for(timeout=120_000)
    wait_for_idle(page)
    assert_no_exception(page)
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0
    assert page.locator(".js-plotly-plot").count() >= 3  # loss curves, accuracy, run overlay
    assert page.get_by_text("train loss").count() >= 1 and page.get_by_text("test loss").count() >= 1
    # the metric's label, not the run table's "epochs done" column (the grid may render its header as text)
    assert page.get_by_test_id("stMetricLabel").filter(has_text="Epochs done").count() == 1
    screenshot(page, "review_classifier")
    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.first.evaluate("e => e.scrollIntoView({block: 'center'})")  # the whole loss chart, below the header
    screenshot(page, "review_classifier_charts")
    page.get_by_text("Run history").scroll_into_view_if_needed()
    screenshot(page, "review_classifier_history")


def test_stop_keeps_the_epochs_done(page, streamlit_url, tmp_path):
    reviews = toy_reviews(3000)  # 500 epochs of these take minutes: Stop must end the run long before
    csv = tmp_path / "longer_reviews.csv"
    csv.write_bytes(csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]))
    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_role("link", name="Review classifier", exact=True).click()
    page.get_by_role("heading", name="Review classifier").wait_for()
    wait_for_idle(page)
    page.get_by_text("upload a file").click()
    wait_for_idle(page)
    upload(page, csv)
    page.get_by_text("Vectorizer and model settings").click()
    epochs = page.get_by_label("Epochs")
    epochs.fill("500")
    epochs.press("Enter")
    wait_for_idle(page)

    page.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Train").click()
    page.get_by_text(re.compile(r"epoch \d+/500")).wait_for(timeout=60_000)  # the live status line
    page.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Stop").click()  # not the header's Stop
    page.get_by_text("Run history").wait_for(timeout=60_000)
    wait_for_idle(page)
    assert_no_exception(page)
    done = page.locator('[data-testid="stMetric"]', has_text="Epochs done").inner_text()
    finished = int(done.split("Epochs done")[1].split("/")[0])
    assert 1 <= finished < 500 and "stopped" in done
    screenshot(page, "review_classifier_stopped")


def test_lecture_preset_trains_and_both_presets_compare(page, streamlit_url, tmp_path):
    reviews = toy_reviews(30)
    csv = tmp_path / "lecture_reviews.csv"
    csv.write_bytes(csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]))
    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_role("link", name="Review classifier", exact=True).click()
    page.get_by_role("heading", name="Review classifier").wait_for()
    wait_for_idle(page)
    page.get_by_text("upload a file").click()
    wait_for_idle(page)
    upload(page, csv)
    page.get_by_text("the lecture (dense matrix, full-batch steps)").click()
    wait_for_idle(page)

    page.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Train").click()
    page.get_by_text("Run history").wait_for(timeout=120_000)
    wait_for_idle(page)
    assert_no_exception(page)
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0
    done = page.locator('[data-testid="stMetric"]', has_text="Epochs done").inner_text()
    assert "10 / 10" in done and "done" in done
    screenshot(page, "review_classifier_lecture")

    page.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Both presets").click()
    page.get_by_text("Both presets, side by side").wait_for(timeout=120_000)
    wait_for_idle(page)
    assert_no_exception(page)
    assert page.get_by_text("Why the two presets race so differently").count() == 1
    page.get_by_text("Both presets, side by side").scroll_into_view_if_needed()
    screenshot(page, "review_classifier_both_presets")


def test_scaling_page_measures_one_and_two_workers(page, streamlit_url, e2e_home):
    """The Data-parallel scaling page starts real torchrun workers from the page and draws compute + all-reduce bars."""
    from tests.review_fixtures import write_rt_folder

    reviews = toy_reviews(40)
    folder = write_rt_folder(e2e_home / "cache" / "datasets" / "toy_rt",  # under the server's default data root
                             [t for t, y in zip(reviews.texts, reviews.labels) if y == 1],
                             [t for t, y in zip(reviews.texts, reviews.labels) if y == 0])
    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_role("link", name="Data-parallel scaling", exact=True).click()
    page.get_by_role("heading", name="Data-parallel scaling").wait_for()
    wait_for_idle(page)
    page.get_by_text("a folder or file on this server").click()
    wait_for_idle(page)
    path = page.get_by_role("textbox", name="Path", exact=True)
    path.fill(str(folder))
    path.press("Enter")
    wait_for_idle(page)
    page.get_by_role("button", name="Measure 1 and 2 workers").click()
    page.locator('[data-testid="stPlotlyChart"]').first.wait_for(timeout=180_000)
    wait_for_idle(page, 180_000)
    assert_no_exception(page)
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0
    assert page.get_by_text("gradient all-reduce").count() >= 1  # the stacked bar's legend
    page.locator('[data-testid="stPlotlyChart"]').last.evaluate("e => e.scrollIntoView({block: 'center'})")
    screenshot(page, "review_classifier_scaling")
