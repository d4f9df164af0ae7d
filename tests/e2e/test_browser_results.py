"""The Results page in a real headless Chromium, with runs from two machines saved, and a file imported."""

import json
import time

import pytest

from core.store.database import open_store
from core.store.database import SQLITE_FILE
from tests.e2e.conftest import assert_no_exception, screenshot, upload, wait_for_idle
from tests.result_samples import LAB, LAPTOP, matmul_payload, train_payload, save_payload

pytestmark = pytest.mark.browser


@pytest.fixture
def seeded(e2e_home):
    """Runs in the server's own store (its GPU_VS_CPU_DATA_DIR), written before the page opens.

    Other browser tests of the session save sweeps there too, and ids are never reused, so the
    runs are named by the ids their saves return.
    """
    store = open_store(f"sqlite:///{e2e_home / 'data' / SQLITE_FILE}")
    for run in store.list_runs():
        store.delete(run.run_id)
    ids = (
        save_payload(store, "matmul", matmul_payload(LAPTOP, sizes=(256, 512, 1024, 2048)), {"sizes": "256..2048"},
                     label="Ana"),
        save_payload(store, "matmul", matmul_payload(LAB, sizes=(256, 512, 1024, 2048, 4096)), {"sizes": "256..4096"}),
        save_payload(store, "train", train_payload("cuda:0"), {"epochs": 3}, machine=LAB),
    )
    return store, ids


def test_results_page_draws_saved_runs_and_imports_a_file(page, streamlit_url, seeded, tmp_path):
    store, (laptop, lab, _) = seeded
    # The root first: until app.py's st.navigation has run once, Streamlit serves a direct page URL
    # in its old pages/-folder mode (no app.py, a sidebar listing files). Then the page by its URL.
    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_role("link", name="Results", exact=True).wait_for()
    page.goto(f"{streamlit_url}/results")
    wait_for_idle(page)
    page.get_by_role("heading", name="Results").wait_for()
    hardware = page.get_by_role("link", name="Hardware check", exact=True)
    assert hardware.count() == 1, "the app's navigation, not the files'"
    assert_no_exception(page)

    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.nth(1).wait_for()  # both drawn before counting: a bare count() raced the rendering under load
    assert charts.count() == 2, "the sweep overlay and the training overlay"
    sweep = charts.first
    sweep.locator(".main-svg").first.wait_for()
    legend = sweep.locator(".legendtext").all_text_contents()  # SVG text has no innerText
    assert "lecture (n = 10,000)" in legend
    assert f"#{lab} cuda:0 (NVIDIA H200) float32" in legend
    assert f"#{laptop} cpu (Student Laptop CPU i5) float32 · Ana" in legend
    assert sweep.get_by_text("lecture: CPU ≈ 23,000 ms (23 s)").count() == 1  # in the axis's unit
    screenshot(page, "results")
    sweep.evaluate("e => e.scrollIntoView({block: 'center'})")
    screenshot(page, "results_time")
    charts.nth(1).evaluate("e => e.scrollIntoView({block: 'center'})")
    screenshot(page, "results_training")
    page.get_by_text("GFLOP/s", exact=True).first.click()  # the lecture's stars follow the chart's unit
    sweep.get_by_text("lecture: CPU ≈ 87 GFLOP/s").wait_for()
    wait_for_idle(page)
    assert sweep.get_by_text("≈ 23 s").count() == 0
    sweep.evaluate("e => e.scrollIntoView({block: 'center'})")
    screenshot(page, "results_gflops")

    page.get_by_text("Import a result file").click()  # the expander is closed once runs exist
    laptop = tmp_path / "bens-laptop.json"
    laptop.write_text(json.dumps(matmul_payload(LAPTOP, sizes=(128, 256))))
    upload(page, laptop)
    page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("bens-laptop.json: imported 1 run(s).").wait_for()
    wait_for_idle(page)
    assert_no_exception(page)
    assert len(store.list_runs()) == 4

    bad = tmp_path / "broken.json"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    upload(page, bad)
    page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("broken.json: the file is not text").wait_for()
    wait_for_idle(page)
    assert_no_exception(page)
    assert len(store.list_runs()) == 4
    screenshot(page, "results-after-import")


HOSTILE = ('<a href="https://example.invalid/login" target="_blank">x</a>'
           '<span style="font-size:80px;color:red">BIG</span>')


def test_an_imported_html_label_is_shown_as_text_not_markup(page, streamlit_url, seeded, tmp_path):
    store, _ = seeded
    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_role("link", name="Results", exact=True).wait_for()
    page.goto(f"{streamlit_url}/results")
    wait_for_idle(page)
    page.get_by_text("Import a result file").click()
    evil = tmp_path / "**evil** [click](https:example.invalid).json"
    evil.write_text(json.dumps(matmul_payload(LAPTOP, sizes=(128, 256))))
    upload(page, evil)
    page.get_by_label("Label for the imported runs (optional)").fill(HOSTILE)
    page.get_by_label("Label for the imported runs (optional)").press("Enter")
    wait_for_idle(page)
    page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text("imported 1 run(s).").wait_for()
    wait_for_idle(page)
    assert_no_exception(page)
    assert any(r.label == HOSTILE for r in store.list_runs()), "stored as typed"

    sweep = page.locator('[data-testid="stPlotlyChart"]').first
    sweep.locator(".legendtext").first.wait_for()
    legend = " ".join(sweep.locator(".legendtext").all_text_contents())
    assert '<a href="https://example.invalid/login"' in legend and "BIG</span>" in legend, legend  # shown literally
    assert page.locator('a[href*="example.invalid"]').count() == 0, "no link made from the label or file name"
    assert page.locator('[style*="80px"]').count() == 0, "no styled span made from the label"
    assert page.locator("strong", has_text="evil").count() == 0, "the file name's Markdown is not rendered"
    assert page.get_by_text("**evil** [click](https:example.invalid).json: imported 1 run(s).").count() == 1
    screenshot(page, "results-html-label")


def test_import_waits_for_a_slow_upload(page, streamlit_url, seeded, tmp_path):
    """On a busy classroom network the upload lags the file's name: Import stays disabled until it lands."""
    store, _ = seeded
    page.goto(f"{streamlit_url}/results")
    wait_for_idle(page)
    page.get_by_text("Import a result file").click()
    slow = tmp_path / "slow-laptop.json"
    slow.write_text(json.dumps(matmul_payload(LAPTOP, sizes=(128, 256))))

    def late(route):
        time.sleep(2.0)  # the upload request is held back; the page shows the file's chip meanwhile
        route.continue_()

    page.route("**/_stcore/upload_file/**", late)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(slow))
    page.get_by_test_id("stFileChipIconSpinner").wait_for()  # still uploading
    button = page.get_by_role("button", name="Import", exact=True)
    assert button.is_disabled()
    button.click()  # Playwright's click waits for the button to become enabled, as a user's second click would
    page.get_by_text("slow-laptop.json: imported 1 run(s).").wait_for()
    assert len(store.list_runs()) == 4


def test_a_reload_keeps_the_sessions_owner_token(page, streamlit_url, seeded, tmp_path):
    """Issue 30 item 11, in a real browser: the token is kept in a cookie of the site, and the session a reload
    starts saves with the same owner (so it may still delete the runs saved before the reload)."""
    from core.store.access import owner_hash

    store, _ = seeded
    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_role("link", name="Results", exact=True).wait_for()
    for name in ("before-reload.json", "after-reload.json"):
        if name == "after-reload.json":
            page.reload()
        page.goto(f"{streamlit_url}/results")
        wait_for_idle(page)
        page.get_by_text("Import a result file").click()
        path = tmp_path / name
        path.write_text(json.dumps(matmul_payload(LAPTOP, sizes=(128, 256 if name.startswith("b") else 512))))
        upload(page, path)
        page.get_by_role("button", name="Import", exact=True).click()
        page.get_by_text(f"{name}: imported 1 run(s).").wait_for()
        wait_for_idle(page)
    kept = [c for c in page.context.cookies() if c["name"] == "gvc_owner"]
    assert len(kept) == 1 and kept[0]["sameSite"] == "Strict"
    owners = {r.provenance.file: r.owner for r in store.list_runs() if r.imported}
    assert owners["before-reload.json"] == owners["after-reload.json"] == owner_hash(kept[0]["value"])
