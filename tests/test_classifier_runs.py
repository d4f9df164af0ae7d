"""The page's run history: records grow report by report and survive a stop."""

from core.classifier.model import ClassifierConfig
from core.classifier.runs import DONE, RUNNING, STOPPED, RunRecord, interrupted, table_rows
from core.classifier.training import EpochReport, Evaluation


def _report(epoch, batches_done=4, seconds=1.0, acc=0.7):
    return EpochReport(epoch, batches_done, 4, 0.5, None, Evaluation(0.6, acc), seconds, epoch * seconds)


def test_record_grows_and_keeps_partial_reports_apart():
    rec = RunRecord(1, "toy", ClassifierConfig(epochs=3), "auto")
    for r in (_report(1, seconds=1.0), _report(2, batches_done=2, seconds=0.5), _report(2, seconds=3.0)):
        rec = rec.with_report(r)
    assert len(rec.reports) == 3 and [e.epoch for e in rec.epochs] == [1, 2]
    assert rec.seconds_per_epoch == 2.0  # the median of 1.0 and 3.0, as TrainResult computes it
    assert rec.kept is rec.epochs[-1] and rec.status == RUNNING and rec.label == "run 1 · auto"


def test_interrupted_runs_are_marked_stopped_and_keep_their_reports():
    running = RunRecord(2, "toy", ClassifierConfig(), "cpu", (_report(1),))
    done = RunRecord(1, "toy", ClassifierConfig(), "cpu", (_report(1),), status=DONE)
    after = interrupted([done, running])
    assert [r.status for r in after] == [DONE, STOPPED] and after[1].reports == running.reports


def test_table_rows():
    rec = RunRecord(1, "toy", ClassifierConfig(), "cpu", (_report(1, acc=0.75), _report(2, acc=0.8)), status=DONE,
                    best_epoch=1)
    (row,) = table_rows([rec])
    assert row["test accuracy"] == 0.75 and row["kept epoch"] == 1 and row["epochs done"] == 2
    assert row["baseline accuracy"] is None and row["device"] == "cpu" and row["status"] == "done"
