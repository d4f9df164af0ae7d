"""Two students, two browser contexts, one CPU: one presses Run, the other *Run my own*, at the same moment.

(Two *Run*s with the same settings join one race: tests/pages/test_app_matmul_race.py.) *Run my own* asks
for a race of its own, so the device lock lets one sweep time while the other waits in line ("waiting for
cpu: 1 ahead"),
then runs it; both finish with their charts, the one that waited says so ("Waited N s for cpu."),
and both runs land on the Results page under the names the students gave them.
"""

import time

import pytest

from core.store.database import open_store
from core.store.database import SQLITE_FILE
from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_idle
from tests.e2e.test_browser_matmul import _press, _slider

pytestmark = pytest.mark.browser

SWEEP_TIMEOUT_MS = 180_000  # two ~3 s sweeps one after the other, on a busy shared machine
SEE_WAITING_S = 30.0


def _open_matmul_race(context, url: str, name: str):
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(url)
    wait_for_idle(page)
    page.get_by_role("link", name="Matmul race", exact=True).click()
    page.get_by_role("heading", name="Matmul race").wait_for()
    wait_for_idle(page)
    sizes = _slider(page, "Matrix sizes")
    _press(page, sizes.get_by_role("slider").nth(1), "ArrowLeft", 3)  # 64..2048 -> 64..256
    _press(page, _slider(page, "Time budget").get_by_role("slider").first, "ArrowLeft", 1)  # 1 s -> 0.5 s
    label = page.get_by_label("Name for the Results page (optional)", exact=True)
    label.fill(name)
    label.press("Enter")
    wait_for_idle(page)
    assert_no_exception(page)
    return page


def test_two_students_press_run_together_one_waits_both_finish(browser, streamlit_url, e2e_home):
    store = open_store(f"sqlite:///{e2e_home / 'data' / SQLITE_FILE}")
    before = {r.run_id for r in store.list_runs()}
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in range(2)]
    try:
        pages = [_open_matmul_race(c, streamlit_url, name) for c, name in zip(contexts, ("Student A", "Student B"))]
        runs = [pages[0].get_by_role("button", name="Run", exact=True),
                pages[1].get_by_role("button", name="Run my own", exact=True)]
        for run in runs:  # a few milliseconds apart; each sweep takes about 3 s
            run.click(no_wait_after=True)

        deadline = time.monotonic() + SEE_WAITING_S
        waiting = None
        while waiting is None and time.monotonic() < deadline:
            for i, page in enumerate(pages):
                if page.get_by_text("waiting for cpu: 1 ahead").count():
                    waiting = i
                    break
            time.sleep(0.05)
        assert waiting is not None, "neither student was shown the line"
        line = pages[waiting].get_by_text("waiting for cpu: 1 ahead").first
        note, named_by = line.inner_text(), time.monotonic() + 10.0
        while "now running" not in note and time.monotonic() < named_by:  # the holder's record lands a poll later
            time.sleep(0.1)
            note = line.inner_text()
        assert "now running: matmul sweep" in note, note
        assert pages[waiting].get_by_role("button", name="Cancel").count() == 1
        screenshot(pages[waiting], "classroom-waiting")

        for page in pages:
            page.locator('[data-testid="stPlotlyChart"]').first.wait_for(timeout=SWEEP_TIMEOUT_MS)
            wait_for_idle(page, SWEEP_TIMEOUT_MS)
            assert_no_exception(page)
            assert page.locator(".js-plotly-plot .scatterlayer .trace").count() >= 1
        waited = [page.get_by_text("Waited ", exact=False).count() > 0 for page in pages]
        assert waited == [i == waiting for i in range(2)], "exactly the student who was shown the line waited"
        caption = pages[waiting].get_by_text("Waited ").first.inner_text()
        assert caption.endswith(" s for cpu."), caption
        assert "after waiting" in pages[waiting].locator('[data-testid="stProgress"]').inner_text()
        assert pages[waiting].get_by_text("waiting for cpu").count() == 0, "the line note is gone once it ran"
        pages[waiting].get_by_text("Waited ").first.scroll_into_view_if_needed()
        screenshot(pages[waiting], "classroom-waited")
        for i, page in enumerate(pages):
            page.locator('[data-testid="stPlotlyChart"]').first.scroll_into_view_if_needed()
            screenshot(page, f"classroom-student-{'AB'[i]}")

        new = [r for r in store.list_runs() if r.run_id not in before]
        assert sorted(r.label for r in new) == ["Student A", "Student B"], "both finished sweeps were saved"
        for page in pages:
            assert page.get_by_text("page can overlay it with other machines").count() == 1

        results = pages[0]
        results.get_by_role("link", name="Results", exact=True).click()
        results.get_by_role("heading", name="Results").wait_for()
        wait_for_idle(results)
        assert_no_exception(results)
        legend = results.locator('[data-testid="stPlotlyChart"]').first.locator(".legendtext")
        legend.first.wait_for()
        names = legend.all_text_contents()
        for run in new:
            assert any(n.startswith(f"#{run.run_id} cpu") and n.endswith(f"· {run.label}") for n in names), names
        results.locator('[data-testid="stPlotlyChart"]').first.scroll_into_view_if_needed()
        screenshot(results, "classroom-results")
    finally:
        for context in contexts:
            context.close()
