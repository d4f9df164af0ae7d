"""The Colab notebook's export, imported on the Results page, overlaid with a sweep measured here."""

from dataclasses import replace

import pytest

from core.matmul.config import MatmulOptions, SweepConfig
from core.matmul.sweep import run_sweep
from core.store.database import open_store
from core.store.database import SQLITE_FILE
from tests.e2e.conftest import assert_no_exception, screenshot, upload, wait_for_idle
from tests.notebook_runner import EXPORT, run_notebook

pytestmark = pytest.mark.browser


def test_the_notebooks_export_imports_and_overlays_with_a_local_cpu_sweep(page, streamlit_url, e2e_home, tmp_path,
                                                                           monkeypatch):
    run_notebook(tmp_path, monkeypatch, LABEL="Colab notebook")
    store = open_store(f"sqlite:///{e2e_home / 'data' / SQLITE_FILE}")
    for run in store.list_runs():
        store.delete(run.run_id)
    local = run_sweep(SweepConfig(sizes=(64, 128, 256), threads=(1,), options=MatmulOptions(budget_s=0.2)))
    local_id = store.save(replace(local, settings={"sizes": "64..256"}), label="local CPU")

    page.goto(streamlit_url)
    wait_for_idle(page)
    page.get_by_role("link", name="Results", exact=True).wait_for()
    page.goto(f"{streamlit_url}/results")
    wait_for_idle(page)
    page.get_by_text("Import a result file").click()
    upload(page, tmp_path / EXPORT)
    page.get_by_role("button", name="Import", exact=True).click()
    page.get_by_text(f"{EXPORT.name}: imported 2 run(s).").wait_for()
    wait_for_idle(page)
    assert_no_exception(page)

    imported = {r.kind: r.run_id for r in store.list_runs() if r.label == "Colab notebook"}
    assert set(imported) == {"matmul", "train"}
    sweep = page.locator('[data-testid="stPlotlyChart"]').first
    sweep.locator(".legendtext").first.wait_for()
    legend = " ".join(sweep.locator(".legendtext").all_text_contents())  # SVG text has no innerText
    assert f"#{local_id} cpu" in legend and "· local CPU" in legend, legend
    assert f"#{imported['matmul']} cpu" in legend and "· Colab notebook" in legend, legend
    charts = page.locator('[data-testid="stPlotlyChart"]')
    charts.nth(1).wait_for()
    assert charts.count() == 2, "the sweep overlay and the training overlay"
    training = charts.nth(1)  # the notebook's one training run: one line, so Plotly draws no legend
    training.scroll_into_view_if_needed()
    training.locator(".scatterlayer .trace").first.wait_for(state="attached")
    assert training.locator(".scatterlayer .trace").count() >= 1
    screenshot(page, "results-notebook-export")
