"""The busy-machine notice on every timed page, and the Results table's load column.

The probe is faked (core.platform.jobs.probe_load for sweeps and training, the sections' probe for
Why parallel), so each test knows whether the machine "was" busy; the real probe is tested in
tests/platform/test_machine_load.py.
"""

from __future__ import annotations

import pytest
import torch
from streamlit.testing.v1 import AppTest

from core.parallel import section
from core.platform import jobs
from core.results.load import MachineLoad
from core.store.database import open_store
from tests.result_samples import LAB, matmul_payload, train_payload, save_payload
from tests.review_fixtures import csv_bytes, toy_reviews

BUSY = MachineLoad(cores=2, others_cores=1.0, load_average=2.5, free_cores=1, busy=True, probe_s=0.2)
QUIET = MachineLoad(cores=2, others_cores=0.0, load_average=0.2, free_cores=2, busy=False, probe_s=0.2)
NOTICE = "Machine busy: figures may be noisy"


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def _warnings(at: AppTest) -> str:
    return "\n".join(str(w.value) for w in at.warning)


@pytest.mark.parametrize("load, shown", [(BUSY, True), (QUIET, False)])
def test_matmul_race_shows_the_notice_with_the_figure(app, no_gpu, monkeypatch, load, shown):
    monkeypatch.setattr(jobs, "probe_load", lambda **k: load)
    app.switch_page("pages/matmul_race.py").run()
    app.select_slider(key="mm_sizes").set_value((16, 32))
    app.select_slider(key="mm_budget").set_value(0.25)
    app.button(key="mm_run").click().run()
    assert not app.exception, app.exception
    assert (NOTICE in _warnings(app)) is shown and len(app.get("plotly_chart")) == 3
    assert app.session_state["mm_sweep"].final.load == load


def test_review_classifier_shows_the_notice_with_the_run(app, no_gpu, monkeypatch, tmp_path):
    monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(tmp_path))
    monkeypatch.setattr(jobs, "probe_load", lambda **k: BUSY)
    reviews = toy_reviews(40)
    path = tmp_path / "toy.csv"
    path.write_bytes(csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]))
    app.switch_page("pages/review_classifier.py").run()
    app.radio(key="clf_source").set_value("path").run()
    app.text_input(key="clf_path").set_value(str(path))
    for key, value in {"clf_epochs": 1, "clf_hidden": 4, "clf_lr": 0.3, "clf_batch": 16}.items():
        app.number_input(key=key).set_value(value)
    app.button(key="clf_train").click().run()
    assert not app.exception, app.exception
    assert NOTICE in _warnings(app) and "other programs used 1.0 of 2 cores" in _warnings(app)
    assert app.dataframe[0].value["machine"].tolist() == ["busy"]


def test_why_parallel_shows_the_notice_under_a_sections_chart(app, no_gpu, monkeypatch):
    monkeypatch.setattr(section, "probe_load", lambda **k: BUSY)
    app.switch_page("pages/why_parallel.py").run()
    for key, value in {"wp_budget_s": 0.1, "wp_bug_cpu_n": 16, "wp_bug_gpu_n": 16}.items():
        app.number_input(key=key).set_value(value)
    app.button(key="wp_run_timing_bug").click().run()
    assert not app.exception, app.exception
    assert NOTICE in _warnings(app) and len(app.get("plotly_chart")) == 1


def test_results_table_flags_noisy_runs(app):
    store = open_store()
    noisy = save_payload(store, "matmul", {**matmul_payload(LAB), "load": BUSY.to_json()}, {}, label="busy lab")
    calm = save_payload(store, "train", {**train_payload("cuda:0"), "load": QUIET.to_json()}, {}, machine=LAB)
    old = save_payload(store, "matmul", matmul_payload(LAB), {})  # saved before runs carried a load
    app.switch_page("pages/results.py").run()
    assert not app.exception, app.exception
    table = app.dataframe[0].value.set_index("run")
    assert table.loc[noisy, "load"] == "busy: noisy" and table.loc[calm, "load"] == "quiet"
    assert table.loc[old, "load"] == ""
