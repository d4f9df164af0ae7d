"""AppTests of the Review classifier page: train one epoch on a fixture, bad input, history, own review."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.review_fixtures import csv_bytes, keep_cuda_on_cpu, toy_reviews

PAGE = "pages/review_classifier.py"
APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.fixture(autouse=True)
def data_roots(tmp_path, monkeypatch):
    """The page reads server paths only under GPU_VS_CPU_DATA_ROOTS: let it read this test's folder."""
    monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(tmp_path))


@pytest.fixture
def toy_csv(tmp_path):
    reviews = toy_reviews(40)
    path = tmp_path / "toy.csv"
    path.write_bytes(csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]))
    return path


def _open(app: AppTest) -> AppTest:
    app.switch_page(PAGE).run()
    assert not app.exception
    return app


def _train_on(app: AppTest, path, epochs: int = 1) -> AppTest:
    app.radio(key="clf_source").set_value("path").run()
    app.text_input(key="clf_path").set_value(str(path))
    app.number_input(key="clf_epochs").set_value(epochs)
    app.number_input(key="clf_hidden").set_value(4)
    app.number_input(key="clf_lr").set_value(0.3)
    app.number_input(key="clf_batch").set_value(16)
    app.button(key="clf_train").click().run()
    assert not app.exception, app.exception
    return app


def _charts(app: AppTest) -> list:
    return app.get("plotly_chart")


def test_page_without_gpu_offers_cpu_and_says_what_a_gpu_adds(app, no_gpu):
    _open(app)
    assert app.selectbox(key="clf_device").options == ["cpu"]
    text = " ".join([c.value for c in app.caption] + [link.proto.label for link in app.get("page_link")])
    assert "No GPU here" in text and "race" in text and "Runtime > Change runtime type > GPU" not in text
    race = app.button(key="clf_race")
    assert race.disabled and "needs a GPU" in race.help and "*Race CPU vs GPU* is off: it needs a GPU" in text
    assert not app.error and not _charts(app)


def test_page_with_fake_gpu_offers_it(app, fake_cuda):
    _open(app)
    assert app.selectbox(key="clf_device").options == ["auto", "cuda:0", "cpu"]


def test_race_without_gpu_is_disabled(app, no_gpu):
    _open(app)
    assert app.button(key="clf_race").disabled


def test_race_cpu_then_gpu_with_the_same_seed(app, fake_cuda, monkeypatch, toy_csv):
    sent = keep_cuda_on_cpu(monkeypatch)  # the fake GPU's tensors stay on the CPU
    _open(app)
    app.radio(key="clf_source").set_value("path").run()
    app.text_input(key="clf_path").set_value(str(toy_csv))
    app.number_input(key="clf_epochs").set_value(2)
    app.button(key="clf_race").click().run()
    assert not app.exception and not app.error
    runs = app.session_state["clf_bench"].runs
    assert [r.device for r in runs] == ["cpu", "cuda:0"] and all(r.status == "done" for r in runs)
    assert "model" in sent and fake_cuda.events.count("sync") > 0
    assert runs[0].config.seed == runs[1].config.seed
    assert [e.train_loss for e in runs[0].epochs] == pytest.approx([e.train_loss for e in runs[1].epochs])
    race = json.loads(app.get("plotly_chart")[-1].proto.spec)  # the overlay, by wall time
    # preset named
    assert [t["name"] for t in race["data"]] == ["run 1 · cpu · mini-batch", "run 2 · cuda:0 · mini-batch"]


def test_train_one_epoch_on_a_fixture(app, no_gpu, toy_csv):
    _train_on(_open(app), toy_csv)
    assert not app.error
    runs = app.session_state["clf_bench"].runs
    assert len(runs) == 1 and runs[0].status == "done" and len(runs[0].epochs) == 1 and runs[0].device == "cpu"
    labels = {m.label: m.value for m in app.metric}
    assert labels["Epochs done"] == "1 / 1" and labels["Test accuracy (kept epoch)"].endswith("%")
    assert labels["Baseline accuracy"].endswith("%")
    assert len(_charts(app)) == 3  # loss curves, accuracy, run overlay
    assert app.dataframe  # the run history table

    # a second run reuses the loaded data and appears in the overlay and the table
    app.number_input(key="clf_seed").set_value(1)
    app.button(key="clf_train").click().run()
    assert not app.exception and len(app.session_state["clf_bench"].runs) == 2
    assert len(app.dataframe[0].value) == 2

    # try your own review with the latest model
    app.text_area(key="clf_review").set_value("great w1 w2")
    app.button(key="clf_predict").click().run()
    assert not app.exception
    assert any(m.label.startswith("p(positive)") for m in app.metric)


def test_bad_input_shows_an_error_and_keeps_earlier_runs(app, no_gpu, toy_csv, tmp_path):
    _train_on(_open(app), toy_csv)
    bad = tmp_path / "bad.csv"
    bad.write_bytes(csv_bytes([("good", "1")] * 5))
    _train_on(app, bad)
    assert any("only positive reviews" in e.value for e in app.error)
    assert len(app.session_state["clf_bench"].runs) == 1 and len(_charts(app)) == 3
    _train_on(app, tmp_path / "missing.csv")
    assert any("not available here" in e.value for e in app.error)


def test_a_server_path_outside_the_data_roots_is_refused_without_reading_it(app, no_gpu, tmp_path, monkeypatch):
    secret = tmp_path / "elsewhere" / "creds.csv"
    secret.parent.mkdir()
    secret.write_text("DB_PASSWORD=hunter2,x\n1,2\n")
    monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(tmp_path / "allowed"))
    _train_on(_open(app), secret)
    refused = [e.value for e in app.error]
    assert refused and "not available here" in refused[0] and "hunter2" not in refused[0]
    assert "python -m core data add" in refused[0] and "Upload the file" in refused[0]  # what to do offline
    assert not app.get("progress"), "no empty progress bar left under the refusal (issue 34)"
    _train_on(app, tmp_path / "elsewhere" / "nothing.csv")
    assert [e.value for e in app.error] == refused, "missing and forbidden paths get the same message"


def test_vectorizer_settings_reach_the_run(app, no_gpu, toy_csv):
    _open(app)
    app.selectbox(key="clf_weighting").set_value("tfidf")
    app.radio(key="clf_ngrams").set_value(1)
    app.number_input(key="clf_maxf").set_value(20)
    app.number_input(key="clf_nb_logit").set_value(0.5)
    _train_on(app, toy_csv)
    assert not app.error
    config = app.session_state["clf_bench"].runs[0].config
    assert (config.weighting, config.ngrams, config.max_features, config.epochs) == ("tfidf", 1, 20, 1)
    assert config.nb_logit == 0.5
    assert app.session_state["clf_bench"].prep[0].vocab_size == 20


def test_an_interrupted_run_is_marked_stopped(app, no_gpu, toy_csv):
    from core.classifier.model import ClassifierConfig
    from core.classifier.runs import RunRecord

    _open(app)
    app.session_state["clf_bench"].runs = [RunRecord(1, "toy", ClassifierConfig(), "cpu")]  # as a Stop leaves it
    app.run()
    assert not app.exception and app.session_state["clf_bench"].runs[0].status == "stopped"


def test_builtin_data_not_cached_offers_a_download(app, no_gpu):
    _open(app)
    assert app.radio(key="clf_source").value == "rt-polarity"
    assert app.button(key="clf_download").label.startswith("Download rt-polarity")


def test_download_reads_the_reviews_through_core_and_trains_nothing(app, no_gpu, monkeypatch):
    """The widget module downloads nothing itself: the page's Download reads the set through the workbench."""
    from core.classifier.workbench import DataChoice

    loaded = []
    monkeypatch.setattr(DataChoice, "load", lambda self, progress=None: loaded.append(self.source) or toy_reviews(20))
    _open(app)
    app.button(key="clf_download").click().run()
    assert not app.exception and not app.error and loaded == ["rt-polarity"]
    assert any("rt-polarity downloaded, verified and read" in s.value for s in app.success)
    assert app.session_state["clf_bench"].reviews is not None and not app.session_state["clf_bench"].runs


def test_a_finished_run_is_saved_for_the_results_page(app, no_gpu, toy_csv):
    from core.store.database import open_store

    _open(app).text_input(key="clf_label").set_value("Ana's laptop")
    _train_on(app, toy_csv, epochs=2)
    runs = open_store().list_runs(kind="train")
    assert len(runs) == 1 and runs[0].label == "Ana's laptop"
    assert [e["epoch"] for e in runs[0].payload["epochs"]] == [1, 2]
    assert runs[0].payload["device"] == "cpu"
    app.switch_page("pages/results.py").run()
    assert not app.exception


def _both_presets(app: AppTest, path) -> AppTest:
    _open(app)
    app.radio(key="clf_source").set_value("path").run()
    app.text_input(key="clf_path").set_value(str(path))
    app.button(key="clf_both").click().run(timeout=120)
    assert not app.exception, app.exception
    return app


def test_both_presets_without_a_gpu_show_the_cpu_half_and_what_a_gpu_would(app, no_gpu, toy_csv):
    from core.classifier.preset_race import EXPLANATION, WITHOUT_GPU

    _both_presets(app, toy_csv)
    assert "Both presets, side by side" in [s.value for s in app.subheader]
    [table] = [d for d in app.dataframe if list(d.value.columns)[:3] == ["preset", "device", "s / epoch"]]
    assert table.value[["preset", "device"]].values.tolist() == [["lecture", "cpu"], ["mini-batch", "cpu"]]
    assert all(float(s) > 0 for s in table.value["s / epoch"]), "3 significant figures, as text"
    chart = next(c for c in app.get("plotly_chart") if "mini-batch: many small updates per epoch" in c.proto.spec)
    assert '"type":"linear"' in chart.proto.spec.replace(" ", "") and "per update" not in chart.proto.spec
    texts = [m.value for m in app.markdown]
    assert any(EXPLANATION in t and WITHOUT_GPU in t for t in texts)
    assert [r.config.preset for r in app.session_state["clf_bench"].runs] == ["lecture", "minibatch"]
    # the chain-of-steps section (the sidebar links Hardware check)
    assert any(p.proto.page.endswith("why_parallel") for p in app.main.get("page_link"))


def test_both_presets_with_a_gpu_race_four_runs(app, fake_cuda, monkeypatch, toy_csv):
    keep_cuda_on_cpu(monkeypatch)
    _both_presets(app, toy_csv)
    [table] = [d for d in app.dataframe if list(d.value.columns)[:3] == ["preset", "device", "s / epoch"]]
    assert table.value[["preset", "device"]].values.tolist() == [["lecture", "cpu"], ["lecture", "cuda:0"],
                                                                 ["mini-batch", "cpu"], ["mini-batch", "cuda:0"]]
    assert (table.value["GPU speed-up ×"] != "").sum() == 2  # one per preset, on its GPU row; blank on the others


def test_the_lecture_preset_trains_from_its_own_settings(app, no_gpu, toy_csv):
    _open(app)
    app.radio(key="clf_preset").set_value("lecture").run()
    assert app.number_input(key="clf_epochs_lecture").value == 10
    assert app.number_input(key="clf_lr_lecture").value == 3.0
    assert not [n for n in app.number_input if n.key == "clf_batch"]  # its batch is every training review
    app.radio(key="clf_source").set_value("path").run()
    app.text_input(key="clf_path").set_value(str(toy_csv))
    app.button(key="clf_train").click().run(timeout=60)
    assert not app.exception, app.exception
    [run] = app.session_state["clf_bench"].runs
    assert run.config.preset == "lecture" and len(run.epochs) == 10 and run.label.endswith("lecture")


def test_two_students_share_one_feature_set(no_gpu, toy_csv):
    """Two browser sessions, same reviews and settings: the second trains on the first one's matrices."""
    first = _train_on(_open(AppTest.from_file(APP, default_timeout=120)), toy_csv)
    second = _train_on(_open(AppTest.from_file(APP, default_timeout=120)), toy_csv)
    a, b = (s.session_state["clf_bench"] for s in (first, second))
    assert a is not b and a.shared_features is b.shared_features and a.shared_reviews is b.shared_reviews
    assert a.prep is not None and b.prep is not None and a.prep[0] is b.prep[0]
    assert [len(s.runs) for s in (a, b)] == [1, 1] and b.runs[0].status == "done"


def test_runs_wait_for_the_upload(app, no_gpu):
    """A click before the uploaded file reaches the server would find none: Train, Race and Both wait for it."""
    _open(app)
    app.radio(key="clf_source").set_value("upload").run()
    for key in ("clf_train", "clf_race", "clf_both"):
        assert app.button(key=key).disabled and "Waiting for a file to be uploaded" in app.button(key=key).help
    assert "*Train* and *Both presets* wait for a file to be uploaded." in [c.value for c in app.caption]
    reviews = toy_reviews(20)
    data = csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)])
    app.get("file_uploader")[0].set_value([("tiny.csv", data, "text/csv")]).run()
    assert not app.button(key="clf_train").disabled and not app.button(key="clf_both").disabled
    assert not [c for c in app.caption if "wait for a file" in c.value]
    assert app.button(key="clf_race").disabled  # no GPU here: the race stays off for its own reason
    app.button(key="clf_train").click().run()
    assert not app.exception and app.session_state["clf_bench"].runs[-1].status == "done"


@pytest.mark.slow  # spawns a Python process that imports scikit-learn
def test_a_large_feature_build_runs_as_quiet_work_and_the_run_still_trains(app, no_gpu, toy_csv, monkeypatch):
    """The page's builds go through the server's quiet work (a child process, stopped while timed jobs run); the
    timed training run that follows is the page's as before."""
    from core.classifier import training

    quiet: list[str] = []
    real = training.run_quietly
    monkeypatch.setattr(training, "QUIET_BUILD_CHARS", 1)  # the toy reviews count as large
    monkeypatch.setattr(training, "run_quietly", lambda fn, *a, what, **k: quiet.append(what) or real(fn, *a, what=what,
                                                                                                        **k))
    _train_on(_open(app), toy_csv)
    assert not app.error and quiet == ["building the features"]
    bench = app.session_state["clf_bench"]
    assert bench.quiet and bench.runs[0].status == "done" and bench.runs[0].baseline is not None
    assert {m.label for m in app.metric} >= {"Baseline accuracy", "Epochs done"}
