"""The scaling measurement's arithmetic, what data the workers may read, its chart, and its page."""

from __future__ import annotations

import pytest

from core.charts.classifier import scaling_chart
from core.classifier.scaling import Scaling, ScalingPoint, point_of, worker_data
from core.classifier.workbench import PATH, UPLOAD, DataChoice
from core.errors import DashboardError
from core.results.train import TrainEpoch, TrainRun
from tests.review_fixtures import toy_reviews, write_rt_folder

SCALING = Scaling((ScalingPoint(1, 2.0, 0.1, 0.78), ScalingPoint(2, 3.0, 2.0, 0.78)))


def test_points_ideal_and_shares():
    assert SCALING.ideal(1) == 2.0 and SCALING.ideal(2) == 1.0 and Scaling(()).ideal(2) is None
    two = SCALING.points[1]
    assert (two.compute_per_epoch, two.allreduce_share) == (1.0, 2 / 3)
    run = TrainRun("cpu", 10, 5, 20, (TrainEpoch(1, 0.5, 0.4, 0.9, 1.0, 0.2), TrainEpoch(2, 0.4, 0.3, 0.9, 3.0, 0.6),
                                      TrainEpoch(3, 0.3, 0.3, 0.9, 2.0, 0.4)), 0.9, 6.0, workers=2, backend="gloo")
    assert point_of(run) == ScalingPoint(2, 2.0, 0.4, 0.9)  # medians over the epochs


def test_chart_stacks_compute_and_allreduce_under_the_ideal_line():
    fig = scaling_chart(SCALING)
    compute, reduce, ideal = fig.data
    assert fig.layout.barmode == "stack" and list(compute.x) == ["1", "2"] and fig.layout.xaxis.type == "category"
    assert list(compute.y) == [1.9, 1.0] and list(reduce.y) == [0.1, 2.0] and list(reduce.text) == ["5%", "67%"]
    assert list(ideal.y) == [2.0, 1.0]
    # issue 33: the all-reduce overlaps backward (it is timed so), and the legend says what the bars are
    assert reduce.name == "gradient all-reduce in flight (backward runs beside it)"
    assert compute.name == "rest of the epoch"


def test_workers_read_only_allowed_paths(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(tmp_path / "allowed"))
    (tmp_path / "allowed").mkdir()
    (tmp_path / "secret.csv").write_text("x")
    assert worker_data(DataChoice(PATH, path=str(tmp_path / "allowed"))) == str((tmp_path / "allowed").resolve())
    with pytest.raises(DashboardError):
        worker_data(DataChoice(PATH, path=str(tmp_path / "secret.csv")))
    with pytest.raises(DashboardError, match="not an upload"):
        worker_data(DataChoice(UPLOAD))


def test_workers_data_downloads_a_builtin_set_not_cached_yet(monkeypatch):
    fetched = []
    monkeypatch.setattr("core.classifier.scaling.is_cached", lambda name: False)
    monkeypatch.setattr("core.classifier.scaling.fetch", lambda name, progress=None: fetched.append(name))
    assert worker_data(DataChoice("rt-polarity")) == "rt-polarity" and fetched == ["rt-polarity"]


def test_scaling_page_measures_the_minibatch_preset_on_its_own_page(app, tmp_path, monkeypatch):
    """One job on the page: the chosen device and epochs reach the core call, its chart and table come back."""
    monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(tmp_path))
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    (tmp_path / "reviews.csv").write_text("text,label\ngood,1\nbad,0\n")
    seen = []

    def fake(data, config, worker_counts=(1, 2), hooks=None):
        seen.append((data, config.preset, config.device, config.epochs))
        return SCALING

    monkeypatch.setattr("core.classifier.scaling.measure_scaling", fake)
    app.switch_page("pages/classifier_scaling.py").run()
    assert not app.exception
    app.radio(key="clf_source").set_value("path").run()
    app.text_input(key="clf_path").set_value(str(tmp_path / "reviews.csv"))
    app.number_input(key="cs_epochs").set_value(2)
    app.button(key="cs_measure").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert seen == [(str((tmp_path / "reviews.csv").resolve()), "minibatch", "cpu", 2)]
    table = next(d.value for d in app.dataframe if "all-reduce share" in d.value.columns)
    assert list(table["workers"]) == [1, 2]


@pytest.mark.slow
def test_page_measures_one_and_two_workers(app, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(tmp_path))
    reviews = toy_reviews(40)
    folder = write_rt_folder(tmp_path / "rt", [t for t, y in zip(reviews.texts, reviews.labels) if y == 1],
                             [t for t, y in zip(reviews.texts, reviews.labels) if y == 0])
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    app.switch_page("pages/classifier_scaling.py").run()
    app.radio(key="clf_source").set_value("path").run()
    app.text_input(key="clf_path").set_value(str(folder))
    app.number_input(key="cs_epochs").set_value(2)
    app.button(key="cs_measure").click().run(timeout=180)
    assert not app.error and not app.exception, ([e.value for e in app.error], app.exception,
                                                 [i.value for i in app.info], [w.value for w in app.warning])
    table = next(d.value for d in app.dataframe if "all-reduce share" in d.value.columns)
    # 3 significant figures, as text
    assert list(table["workers"]) == [1, 2] and all(float(s) > 0 for s in table["s / epoch"])
    assert any(c.proto.spec and "gradient all-reduce" in c.proto.spec for c in app.get("plotly_chart"))
