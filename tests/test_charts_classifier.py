"""The classifier's figures are built from the reports they are given, and nothing else."""

import pytest

from core.charts.classifier import accuracy_curve, loss_curves, overlay
from core.classifier.model import ClassifierConfig
from core.classifier.runs import RunRecord
from core.classifier.training import EpochReport, Evaluation


def _report(epoch, batches_done=4, loss=0.5, seconds=1.0, elapsed=None):
    return EpochReport(epoch, batches_done, 4, loss, None, Evaluation(loss + 0.1, 0.7 + epoch / 100), seconds,
                       elapsed if elapsed is not None else epoch * seconds)


def test_loss_curves_with_baseline_line_and_fixed_range():
    reports = [_report(1, loss=0.6), _report(2, batches_done=2, loss=0.5), _report(2, loss=0.4)]
    fig = loss_curves(reports, baseline_loss=0.45, epochs=5)
    train, test = fig.data
    assert list(train.x) == [1.0, 1.5, 2.0] and list(train.y) == [0.6, 0.5, 0.4]
    assert list(test.y) == pytest.approx([0.7, 0.6, 0.5])
    assert fig.layout.shapes[0].y0 == 0.45 and tuple(fig.layout.xaxis.range) == (0, 5.2)


def test_loss_curves_without_baseline():
    assert loss_curves([]).layout.shapes == ()


def test_accuracy_curve_marks_kept_epoch():
    fig = accuracy_curve([_report(1), _report(2)], baseline_accuracy=0.75, best_epoch=2)
    assert list(fig.data[0].y) == pytest.approx([0.71, 0.72])
    assert {s.x0 for s in fig.layout.shapes if s.x0 is not None} >= {2}


def test_overlay_by_epoch_and_by_wall_time():
    cpu = RunRecord(1, "toy", ClassifierConfig(), "cpu", (_report(1, seconds=2.0), _report(2, seconds=2.0)))
    gpu = RunRecord(2, "toy", ClassifierConfig(), "cuda:0", (_report(1, seconds=0.1), _report(2, seconds=0.1)))
    by_epoch = overlay([cpu, gpu], by="epoch", metric="train_loss")
    assert [list(t.x) for t in by_epoch.data] == [[1.0, 2.0], [1.0, 2.0]]
    race = overlay([cpu, gpu], by="seconds", metric="test_accuracy")
    assert [list(t.x) for t in race.data] == [[2.0, 4.0], [0.1, 0.2]] and race.data[1].name == "run 2 · cuda:0"
    with pytest.raises(ValueError):
        overlay([cpu], by="minutes")
    with pytest.raises(ValueError):
        overlay([cpu], metric="f1")
