"""The classifier's figures are built from the reports they are given, and nothing else."""

import pytest

from core.charts.classifier import accuracy_curve, loss_curves, lowest_test_loss, overlay
from core.classifier.model import ClassifierConfig
from core.classifier.runs import RunRecord
from core.results.train import TrainEpoch
from tests.chart_checks import assert_annotations_inside, assert_legend_below


def _report(epoch, batches_done=4, loss=0.5, seconds=1.0, elapsed=None, test_loss=None):
    return TrainEpoch(epoch, loss, loss + 0.1 if test_loss is None else test_loss, 0.7 + epoch / 100, seconds,
                      batches_done=batches_done, n_batches=4,
                      elapsed_s=elapsed if elapsed is not None else epoch * seconds)


def test_loss_curves_with_baseline_line_and_fixed_range():
    reports = [_report(1, loss=0.6), _report(2, batches_done=2, loss=0.5), _report(2, loss=0.4)]
    fig = loss_curves(reports, baseline_loss=0.45, epochs=5)
    train, test, lowest = fig.data
    assert list(train.x) == [1.0, 1.5, 2.0] and list(train.y) == [0.6, 0.5, 0.4]
    assert list(test.y) == pytest.approx([0.7, 0.6, 0.5])
    assert fig.layout.shapes[0].y0 == 0.45 and tuple(fig.layout.xaxis.range) == (0, 5.2)
    assert fig.layout.yaxis.range[0] == 0 and fig.layout.yaxis.range[1] > 0.7
    assert lowest.name == "lowest test loss: epoch 2"
    assert_legend_below(fig)
    assert_annotations_inside(fig)


def test_the_lowest_test_loss_is_marked_where_test_loss_turns_up():
    reports = [_report(1, loss=0.6, test_loss=0.55), _report(2, loss=0.3, test_loss=0.49),
               _report(3, batches_done=2, loss=0.1, test_loss=0.40),  # mid-epoch: not a whole epoch's figure
               _report(3, loss=0.1, test_loss=0.51), _report(4, loss=0.04, test_loss=0.54)]
    assert lowest_test_loss(reports).epoch == 2 and lowest_test_loss([]) is None
    fig = loss_curves(reports, baseline_loss=0.5, kept_epoch=3)
    star = next(t for t in fig.data if t.name.startswith("lowest test loss"))
    assert (star.x, star.y) == ((2.0,), (0.49,)) and star.name == "lowest test loss: epoch 2"
    assert "kept epoch (3)" in [t.name for t in fig.data]  # named in the legend, not as text by its line
    assert [a.text for a in fig.layout.annotations] == ["LogisticRegression test loss 0.5"]
    baseline = fig.layout.annotations[0]
    assert (baseline.xref, baseline.x, baseline.xanchor, baseline.yanchor) == ("paper", 0, "left", "bottom")
    assert_annotations_inside(fig)


def test_loss_curves_without_baseline():
    assert loss_curves([]).layout.shapes == ()


def test_accuracy_curve_marks_kept_epoch():
    fig = accuracy_curve([_report(1), _report(2)], baseline_accuracy=0.75, best_epoch=2)
    assert list(fig.data[0].y) == pytest.approx([0.71, 0.72])
    assert {s.x0 for s in fig.layout.shapes if s.x0 is not None} >= {2}
    assert "kept epoch (2)" in [t.name for t in fig.data]
    assert [a.text for a in fig.layout.annotations] == ["LogisticRegression 75.0%"]  # the only text in the plot
    assert fig.layout.yaxis.tickformat == ".0%"
    assert_legend_below(fig)
    assert_annotations_inside(fig)


def test_overlay_by_epoch_and_by_wall_time():
    cpu = RunRecord(1, "toy", ClassifierConfig(), "cpu", (_report(1, seconds=2.0), _report(2, seconds=2.0)))
    gpu = RunRecord(2, "toy", ClassifierConfig(), "cuda:0", (_report(1, seconds=0.1), _report(2, seconds=0.1)))
    by_epoch = overlay([cpu, gpu], by="epoch", metric="train_loss")
    assert [list(t.x) for t in by_epoch.data] == [[1.0, 2.0], [1.0, 2.0]]
    race = overlay([cpu, gpu], by="seconds", metric="test_accuracy")
    assert [list(t.x) for t in race.data] == [[2.0, 4.0], [0.1, 0.2]]
    assert race.data[1].name == "run 2 · cuda:0 · mini-batch"
    assert_legend_below(race)
    with pytest.raises(ValueError):
        overlay([cpu], by="minutes")
    with pytest.raises(ValueError):
        overlay([cpu], metric="f1")


def test_both_presets_bars_are_linear_in_one_unit():
    """0.11 s against 0.345 s read about 3x apart (a log axis drew them ~20x), labels in the axis' unit."""
    from core.charts.classifier import preset_race_chart
    from core.classifier.preset_race import PresetRace, PresetTiming

    race = PresetRace((PresetTiming("lecture", "cpu", 0.345, 10, 0.7, 80.0),
                       PresetTiming("minibatch", "cpu", 0.11, 10, 0.78, None)), with_gpu=False)
    fig = preset_race_chart(race)
    assert fig.layout.yaxis.type == "linear" and fig.layout.yaxis.range[0] == 0
    unit = fig.layout.yaxis.title.text.rsplit("(", 1)[1].rstrip(")")
    assert fig.layout.yaxis.title.text.startswith("time per epoch")
    (bars,) = fig.data
    assert [t.endswith(f" {unit}") for t in bars.text] == [True, True]
    assert max(bars.y) / min(bars.y) == pytest.approx(0.345 / 0.11)
    assert not any("update" in x and "per update" in x for x in bars.x)  # one unit: per epoch
