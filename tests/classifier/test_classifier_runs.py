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


def test_the_note_says_what_the_kept_epoch_is_and_what_accuracy_did():
    """Issue 34: "lowest test loss: epoch 1" beside "kept epoch (10)" read as a mistake; the accuracy held."""
    losses = [(0.68, 0.471), (0.52, 0.494), (0.31, 0.525), (0.19, 0.547), (0.12, 0.574), (0.09, 0.579),
              (0.06, 0.585), (0.05, 0.590), (0.045, 0.595), (0.039, 0.600)]  # rt-polarity's default run
    accuracy = [0.780, 0.783, 0.788, 0.788, 0.788, 0.788, 0.788, 0.789, 0.788, 0.787]
    epochs = tuple(TrainEpoch(i + 1, tr, te, a, 0.5, batches_done=4, n_batches=4, elapsed_s=float(i))
                   for i, ((tr, te), a) in enumerate(zip(losses, accuracy)))
    done = RunRecord(1, "rt-polarity", ClassifierConfig(), "cpu", epochs, status=DONE, best_epoch=10)
    note = " ".join((done.overfitting_note or "").split())
    assert "after epoch 1 the test loss rose from 0.47 to 0.60" in note
    assert "test accuracy held (78.0% at epoch 1, 78.7% at epoch 10)" in note
    assert ("keeps epoch 10 (the last; the mean of the weights after epochs 5–10; plus naive Bayes's log-odds)"
            in note) and "never kept" in note
    assert "keeps" not in (replace(done, status=RUNNING).overfitting_note or "")  # no kept epoch while running
    fell = tuple(replace(e, test_accuracy=0.70) if e.epoch == 10 else e for e in epochs)
    assert "test accuracy fell (78.0% at epoch 1, 70.0% at epoch 10)." in (overfitting_note(fell) or "")
    validated = replace(done, config=ClassifierConfig(val_fraction=0.1, average_from=0, nb_logit=0.0), best_epoch=3)
    assert "keeps epoch 3 (the lowest validation loss)" in (validated.overfitting_note or "")


def test_the_table_says_the_thread_count_and_keeps_seconds_unrounded_for_the_formatter():
    rec = RunRecord(1, "toy", ClassifierConfig(), "cpu", (_report(1, seconds=1.16349),), status=DONE, threads=2)
    (row,) = table_rows([rec])
    assert row["CPU threads"] == 2 and row["s / epoch"] == 1.16349  # readable() shows 1.16
