"""The page's run history: records grow report by report and survive a stop."""

from core.classifier.model import ClassifierConfig
from dataclasses import replace

from core.classifier.runs import (
    DONE, RUNNING, STOPPED, RunRecord, interrupted, lowest_test_loss_epoch, overfitting_note, table_rows,
)
from core.results.load import MachineLoad
from core.results.train import TrainEpoch


def _report(epoch, batches_done=4, seconds=1.0, acc=0.7):
    return TrainEpoch(epoch, 0.5, 0.6, acc, seconds, batches_done=batches_done, n_batches=4, elapsed_s=epoch * seconds)


def test_record_grows_and_keeps_partial_reports_apart():
    rec = RunRecord(1, "toy", ClassifierConfig(epochs=3), "auto")
    for r in (_report(1, seconds=1.0), _report(2, batches_done=2, seconds=0.5), _report(2, seconds=3.0)):
        rec = rec.with_report(r)
    assert len(rec.reports) == 3 and [e.epoch for e in rec.epochs] == [1, 2]
    assert rec.seconds_per_epoch == 2.0  # the median of 1.0 and 3.0, as TrainResult computes it
    assert rec.kept is rec.epochs[-1] and rec.status == RUNNING and rec.label == "run 1 · auto · mini-batch"


def test_interrupted_runs_are_marked_stopped_and_keep_their_reports():
    running = RunRecord(2, "toy", ClassifierConfig(), "cpu", (_report(1),))
    done = RunRecord(1, "toy", ClassifierConfig(), "cpu", (_report(1),), status=DONE)
    after = interrupted([done, running])
    assert [r.status for r in after] == [DONE, STOPPED] and after[1].reports == running.reports


def test_table_rows():
    rec = RunRecord(1, "toy", ClassifierConfig(), "cpu", (_report(1, acc=0.75), _report(2, acc=0.8)), status=DONE,
                    best_epoch=1)
    (row,) = table_rows([rec])
    assert row["test accuracy"] == "75.0%" and row["kept epoch"] == 1 and row["epochs done"] == 2
    assert row["baseline accuracy"] == "—" and row["device"] == "cpu" and row["status"] == "done"
    assert row["machine"] == ""
    busy = MachineLoad(cores=2, others_cores=1.0, load_average=2.0, free_cores=1, busy=True)
    assert table_rows([replace(rec, load=busy)])[0]["machine"] == "busy"


def _epoch(epoch, train_loss, test_loss):
    return TrainEpoch(epoch, train_loss, test_loss, 0.7, 1.0, batches_done=4, n_batches=4, elapsed_s=float(epoch))


def test_overfitting_is_named_when_test_loss_rises_while_train_loss_falls():
    curve = [(0.60, 0.55), (0.40, 0.50), (0.20, 0.49), (0.10, 0.51), (0.04, 0.54)]  # the run, shortened
    rec = RunRecord(1, "toy", ClassifierConfig(epochs=5), "cpu", tuple(_epoch(i + 1, *c) for i, c in enumerate(curve)))
    assert rec.lowest_test_loss_epoch == 3
    note = rec.overfitting_note or ""
    assert note.startswith("Overfitting: after epoch 3 the test loss rose from 0.49 to 0.54") and "0.04" in note
    assert rec.kept is rec.epochs[-1]  # the marker never changes the kept epoch


def test_no_overfitting_sentence_while_test_loss_still_falls_or_wobbles():
    falling = [(0.6, 0.6), (0.5, 0.55), (0.4, 0.5)]
    wobble = [(0.6, 0.6), (0.5, 0.500), (0.4, 0.505)]  # within 2% of the lowest: noise
    train_rises = [(0.6, 0.6), (0.3, 0.5), (0.5, 0.6)]  # diverging, not overfitting
    for curve in (falling, wobble, train_rises):
        epochs = tuple(_epoch(i + 1, *c) for i, c in enumerate(curve))
        assert overfitting_note(epochs) is None
    assert lowest_test_loss_epoch(tuple(_epoch(i + 1, *c) for i, c in enumerate(falling))) == 3
    assert lowest_test_loss_epoch(()) is None
