"""Issue 34, "Done when": every page, opened and after its main button, shows no number with more than three
significant figures (in its sentences, its charts, and the cells of its tables as the grid draws them, each read
with its column's unit), and no result field's name (rules and the detector: tests/text_audit.py).

Each page runs in AppTest on the CPU with small inputs: the Matmul race at n = 16 and 32, the Roofline quick,
every Why parallel section tiny, the Review classifier on the real rt-polarity data where it is present (else the
tests' toy reviews), Results and the Class board seeded with sample runs (tests/result_samples.py). The two pages
whose work runs in other processes (Every device at once: torchrun; Race on your laptop: the student's browser)
get a run such work returns, as their own AppTests do.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.conftest import RT_POLARITY
from tests.result_samples import LAB, LAPTOP, matmul_payload, save_payload, train_payload
from tests.review_fixtures import csv_bytes, toy_reviews
from tests.text_audit import figure_text, header_unit, leaked_fields, offenders, page_text, shown_cells, too_precise

Scenario = Callable[[AppTest, pytest.MonkeyPatch, Path], Iterator[AppTest]]  # the page after each step


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def _open(app: AppTest, page: str) -> AppTest:
    app.switch_page(f"pages/{page}.py").run()
    assert not app.exception, app.exception
    return app


def _pages_opened(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    """Every page before anything is pressed (the Results and Class board pages empty)."""
    for page in ("home", "hardware", "matmul_race", "every_device", "laptop_race", "roofline",
                                     "review_classifier", "classifier_scaling", "why_parallel", "results",
                 "class_board"):
        yield _open(app, page)


def _hardware_with_a_gpu(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    from tests.conftest import GPU_MODELS, FakeCuda, install_fake_cuda

    install_fake_cuda(monkeypatch, FakeCuda(model=GPU_MODELS["H100"]))
    yield _open(app, "hardware")


def _matmul_race(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    _open(app, "matmul_race")
    app.select_slider(key="mm_sizes").set_value((16, 32))
    app.select_slider(key="mm_budget").set_value(0.25)
    app.multiselect(key="mm_threads").set_value([1, 2])
    app.text_input(key="mm_guess").set_value("24")
    app.button(key="mm_run").click().run()
    yield app


def _roofline(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    _open(app, "roofline")
    app.select_slider(key="rl_budget").set_value(0.05)
    app.button(key="rl_run").click().run()
    yield app


def _every_device(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    from tests.pages.test_app_every_device import _run

    monkeypatch.setattr("core.matmul.rank_launch.run_ranks", lambda config, ranks, hooks: _run(1.2345))
    _open(app, "every_device")
    app.button(key="mm_ranks_go").click().run()
    yield app


def _laptop_race(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    from tests.browser.test_browser_race import payload

    _open(app, "laptop_race")
    app.text_input(key="lap_guess").set_value("200")
    app.session_state["lap_race"] = {"result": payload()}
    app.run()
    yield app


def _reviews(tmp_path: Path, monkeypatch) -> Path:
    """The real rt-polarity folder where it is present, else the tests' toy reviews as a CSV."""
    if (RT_POLARITY / "rt-polarity.pos").exists():
        monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(RT_POLARITY.parent))
        return RT_POLARITY
    monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(tmp_path))
    reviews, path = toy_reviews(40), tmp_path / "toy.csv"
    path.write_bytes(csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]))
    return path


def _review_classifier(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    data = _reviews(tmp_path, monkeypatch)
    _open(app, "review_classifier")
    app.radio(key="clf_source").set_value("path").run()
    app.text_input(key="clf_path").set_value(str(data))
    app.number_input(key="clf_epochs").set_value(2)
    app.number_input(key="clf_hidden").set_value(8)
    app.text_input(key="clf_guess").set_value("3")
    app.button(key="clf_train").click().run()
    yield app
    app.text_area(key="clf_review").set_value("a gripping, funny and moving film")
    app.button(key="clf_predict").click().run()
    yield app


def _both_presets(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(tmp_path))
    reviews, path = toy_reviews(40), tmp_path / "toy.csv"
    path.write_bytes(csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]))
    _open(app, "review_classifier")
    app.radio(key="clf_source").set_value("path").run()
    app.text_input(key="clf_path").set_value(str(path))
    app.button(key="clf_both").click().run()
    yield app


def _scaling(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    from core.classifier.scaling import Scaling, ScalingPoint

    monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(tmp_path))
    (tmp_path / "reviews.csv").write_text("text,label\ngood,1\nbad,0\n")
    measured = Scaling((ScalingPoint(1, 2.34567, 0.123456, 0.781234), ScalingPoint(2, 1.87654, 0.654321, 0.779876)))
    monkeypatch.setattr("core.classifier.scaling.measure_scaling", lambda data, config, hooks=None: measured)
    _open(app, "classifier_scaling")
    app.radio(key="clf_source").set_value("path").run()
    app.text_input(key="clf_path").set_value(str(tmp_path / "reviews.csv"))
    app.button(key="cs_measure").click().run()
    yield app


def _why_parallel(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    from core.parallel import registry
    from tests.pages.test_app_why_parallel import TINY

    _open(app, "why_parallel")
    for key, value in TINY.items():
        app.number_input(key=key).set_value(value)
    app.run()
    for section in registry.SECTIONS:
        app.button(key=f"wp_run_{section.key}").click().run()
    yield app


def _seed_the_store() -> None:
    """Runs of every kind, as a class would have saved them: numbers with every digit a measurement has."""
    from core.browser.judge import Inbox
    from core.store.database import open_store
    from tests.browser.test_browser_race import payload
    from tests.pages.test_app_every_device import _run
    from tests.roofline.test_roofline import _synthetic_run

    store = open_store()
    save_payload(store, "matmul", matmul_payload(LAPTOP), {"sizes": "256,1024,4096"}, label="Ana")
    save_payload(store, "matmul", matmul_payload(LAB), {"sizes": "256,1024,4096"}, machine=LAB, label="lab")
    save_payload(store, "train", train_payload("cuda:0", seconds=4.56789), {"epochs": 3}, machine=LAB)
    save_payload(store, "train", train_payload("cpu", seconds=12.3456), {"epochs": 3}, machine=LAPTOP)
    save_payload(store, "roofline", _synthetic_run().to_json(), {}, label="lab GPU")
    save_payload(store, "cluster", _run(1.2345).to_json(), {}, label="lab node")
    save_payload(store, "browser", Inbox().take(payload(), guess=None, settings={}).to_json(), {}, label="Ben")


def _results(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    _seed_the_store()
    _open(app, "results")
    compare = next(w for w in app.multiselect if w.label == "Runs to compare")
    compare.set_value(list(range(1, 8))).run()  # every kind's chart, not only the newest runs'
    assert len(next(w for w in app.multiselect if w.label == "Runs to compare").value) == 7
    yield app


def _class_board(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    _seed_the_store()
    yield _open(app, "class_board")


def _class_board_with_a_reference(app, monkeypatch, tmp_path) -> Iterator[AppTest]:
    """The room's reference pinned, its noise table and each guess judged against it (their tables' cells)."""
    from core.store.access import INSTRUCTOR
    from core.store.database import open_store
    from tests.store.test_class_reference import _guessed
    from tests.store.test_import_forgeries import honest

    store = open_store()
    for name, text in (("Ana", "100"), ("Ben", "1000"), ("Cy", "50"), ("Dee", "no crossover")):
        save_payload(store, "matmul", _guessed(text), label=name)
    store.pin_reference(save_payload(store, "matmul", honest(), label="room"), INSTRUCTOR)
    yield _open(app, "class_board")


SCENARIOS: dict[str, Scenario] = {
    "every page opened": _pages_opened,
    "Hardware check with a GPU": _hardware_with_a_gpu,
    "Matmul race, tiny": _matmul_race,
    "Roofline, quick": _roofline,
    "Every device at once": _every_device,
    "Race on your laptop": _laptop_race,
    "Review classifier, Train": _review_classifier,
    "Review classifier, Both presets": _both_presets,
    "Data-parallel scaling": _scaling,
    "Why parallel, every section": _why_parallel,
    "Results, seeded": _results,
    "Class board, seeded": _class_board,
    "Class board, a reference pinned": _class_board_with_a_reference,
}


def test_the_detector_catches_what_the_issue_reported_and_spares_counts_dates_and_versions():
    assert too_precise("Starting one product costs 8.46e+03 µs with 2 threads") == ["8.46e+03"]
    assert too_precise("measured 83.31 GFLOP/s against 83.08 in theory") == ["83.31", "83.08"]
    assert too_precise("1.163 s per epoch; 0.00682; 37.24 / 46.85 / 56.45 ms") == ["1.163", "0.00682", "37.24",
                                                                                   "46.85", "56.45"]
    assert too_precise("104903 terms beside 18,550 reviews/s and 40000 GFLOP/s") == ["104903", "18,550", "40000"]
    assert too_precise("accuracy 100.0%, 1234 ms, 1.5e+04, 125.7 GiB, 2345x") == ["2345", "100.0", "1234", "1.5e+04",
                                                                                    "125.7"]
    assert too_precise("0.0034× as fast; 0.00682 s") == ["0.0034", "0.00682"]
    assert too_precise("8.46 ms, 127,000 reviews/s, 0.125 and 0.488, 1e-06, 78.2%, 12 s, 0.00238 GFLOP/s") == []
    assert too_precise("16  cpu float32 1 thread  0.00262  0.000928  1.01e-07  2,600", in_table=True) == []
    assert too_precise("16  cpu float32 1 thread  0.00262  83.31", in_table=True) == ["83.31"]
    assert too_precise("n = 131,072 and 1024 to 2048, 104,903 terms, run #12345, pid 17271, port 8501, "
                       "2026-12-01T05:00:00Z at 09:12:44, torch 2.13.0+cpu, Python 3.11, CUDA 12.8, float32 on "
                       "an A100-80GB, colab-2026.ipynb") == []


def test_a_hover_is_read_as_plotly_draws_small_and_large_values():
    spec = json.dumps({"data": [{"hovertemplate": "median %{y:.3g} ms<br>n = %{x:,}<extra></extra>"},
                                {"hovertemplate": "%{y:,.3~r} GFLOP/s, %{customdata:.4f} loss"}], "layout": {}})
    hovers = [text for kind, text in figure_text(spec) if kind == "plotly_chart hover"]
    assert [too_precise(text) for text in hovers] == [["1.23e+04"], ["1.2346"]]  # d3's '.3g' of 12,345.678


def test_a_table_cell_is_read_as_the_grid_draws_it_with_its_columns_unit():
    """What st.dataframe draws: a float without a format to four decimals (full precision for a person), a
    column_config format as printf applies it, a whole number in a column headed with a unit as a figure;
    st.table every float to four decimals. Text as it is (0.00262 reads 0.0026: four decimals, not figures)."""
    import pandas as pd

    frame = pd.DataFrame({"median ms": [1.23456789, 0.00262], "calls per sample": [4322, 12], "run": [7, 8],
                          "peak GFLOP/s": ["83.31", "83.3"], "wake µs": [2019, 205], "ratio": [0.5, 1.0]})
    config = {"run": {"type_config": {"type": "number", "format": "#%d"}},
              "ratio": {"type_config": {"type": "number", "format": "%.4f"}}}
    cells = list(shown_cells(frame, config))
    assert cells == ["1.2346 ms", "0.0026 ms", "4322", "12", "#7", "#8", "83.31 GFLOP/s", "83.3 GFLOP/s",
                     "2019 µs", "205 µs", "0.5000", "1.0000"]
    bad = offenders(("dataframe cell", c) for c in cells)
    assert [b.split(" in ")[0] for b in bad] == ["digits ['1.2346']", "digits ['83.31']", "digits ['2019']",
                                                "digits ['0.5000']", "digits ['1.0000']"]
    assert list(shown_cells(pd.DataFrame({"value": [1.5]}), {}, static=True)) == ["1.5000"]  # st.table: 5 figures
    assert header_unit("dense matrix MiB") == "MiB" and header_unit("s / epoch") == "s / epoch"
    assert header_unit("samples") == header_unit("n") == header_unit("95 % low") == ""


def test_the_detector_names_result_fields_from_the_result_types():
    assert leaked_fields("bandwidth_gbs, launch_s, wake_s, peak_gflops and median_s") == [
        "bandwidth_gbs", "launch_s", "median_s", "peak_gflops", "wake_s"]
    assert leaked_fields("gflops") == ["gflops"] and leaked_fields("GFLOP/s, memory bandwidth, the median") == []
    assert leaked_fields("`python -m core results list`, a_cpu = torch.randn, sm_90") == []


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_page_reads_in_three_figures_and_words(name, app, no_gpu, monkeypatch, tmp_path):
    bad: list[str] = []
    for shot in SCENARIOS[name](app, monkeypatch, tmp_path):  # a generator: the page read at each step
        assert not shot.exception and not shot.error, (shot.exception, [e.value for e in shot.error])  # it ran
        texts = page_text(shot)
        assert len(texts) > 3, "the collector found the page's words"
        bad += offenders(texts)
    assert not bad, "\n".join(dict.fromkeys(bad))
