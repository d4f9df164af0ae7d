"""The Review classifier's workbench: what is cached on what, the CPU-vs-GPU race, runs recorded as they go."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from core.classifier import workbench
from core.classifier.model import ClassifierConfig
from core.classifier.workbench import PATH, UPLOAD, DataChoice, Upload, Workbench, features_key, run_configs
from core.errors import DashboardError
from core.platform.jobs import JobHooks
from tests.review_fixtures import csv_bytes, keep_cuda_on_cpu, toy_reviews

FAST = ClassifierConfig(hidden=4, lr=0.3, batch_size=16, epochs=2, weighting="binary", ngrams=1, device="cpu")


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


def test_every_split_and_vectorizer_setting_is_in_the_features_key_and_no_training_setting():
    base = features_key(FAST)
    for change in ({"test_size": 0.3}, {"val_fraction": 0.1}, {"seed": 1}, {"weighting": "tfidf"}, {"ngrams": 2},
                   {"max_features": 10}):
        assert features_key(replace(FAST, **change)) != base, change
    for change in ({"lr": 0.1}, {"epochs": 5}, {"hidden": 8}, {"device": "auto"}, {"batch_size": 8}):
        assert features_key(replace(FAST, **change)) == base, change


def test_reviews_are_read_once_per_choice(toy_csv, monkeypatch):
    reads = []
    real = DataChoice.load
    monkeypatch.setattr(DataChoice, "load", lambda self, progress=None: reads.append(self.key) or real(self, progress))
    bench = Workbench()
    choice = DataChoice(PATH, path=str(toy_csv))
    first = bench.load(choice)
    assert bench.load(DataChoice(PATH, path=str(toy_csv))) is first and len(reads) == 1
    upload = DataChoice(UPLOAD, uploads=(Upload("toy.csv", toy_csv.read_bytes(), "id-1"),))
    assert not bench.needs_loading(choice) and bench.needs_loading(upload)
    assert bench.load(upload).n == first.n and len(reads) == 2
    again = DataChoice(UPLOAD, uploads=(Upload("toy.csv", toy_csv.read_bytes(), "id-2"),))  # uploaded again
    assert bench.needs_loading(again)


def test_features_are_rebuilt_only_when_their_settings_change(toy_csv, monkeypatch):
    built = []
    real = workbench.prepare
    monkeypatch.setattr(workbench, "prepare", lambda *a: built.append(1) or real(*a))
    bench = Workbench()
    bench.load(DataChoice(PATH, path=str(toy_csv)))
    bench.prepared(FAST)
    bench.prepared(replace(FAST, lr=0.1, epochs=3))
    assert len(built) == 1
    bench.prepared(replace(FAST, test_size=0.3))  # the page's old key missed this one
    assert len(built) == 2 and bench.prep is not None and bench.prep[0].n_test > 0


def test_train_records_every_report_names_the_run_and_hands_finished_runs_over(toy_csv):
    bench, seen, done = Workbench(), [], []
    bench.load(DataChoice(PATH, path=str(toy_csv)))
    results = bench.train(FAST, JobHooks(on_progress=seen.append), on_done=done.append)
    [record] = bench.runs
    assert record.status == "done" and len(record.epochs) == 2 and record.device == "cpu"
    building = [s for s in seen if s.message.startswith(("document-term matrix", "LogisticRegression"))]
    assert [s.done for s in building] == [0, 1, 2, 3] and all(s.total == 4 for s in building)  # the DTM's steps
    seen = seen[len(building):]
    assert seen[0].item is None and seen[0].message.endswith("terms: training on cpu…")
    assert seen[1].message.startswith("run 1 · cpu · mini-batch, training on cpu with ")  # its thread count
    counts = [s for s in seen if "batches done" in s.message]  # the first epoch's batches, before its loss
    assert counts and all(s.message.startswith("run 1 · cpu · mini-batch, epoch 1 of 2: ") for s in counts)
    figures = [s for s in seen if s.item is not None]
    assert [s.message.split(":")[0] for s in figures] == ["run 1 · cpu · mini-batch, epoch 1/2",
                                                          "run 1 · cpu · mini-batch, epoch 2/2"]
    assert bench.status == seen[-1].message and bench.model == ("run 1 · cpu · mini-batch", results[0])
    assert done == [replace(results[0].run, baseline_accuracy=record.baseline.accuracy)]  # as saved


def test_a_stopped_run_is_kept_in_the_history_but_not_handed_over(toy_csv):
    bench, done = Workbench(), []
    bench.load(DataChoice(PATH, path=str(toy_csv)))
    bench.prepared(FAST)  # the features are built; Stop is pressed once training has begun
    [result] = bench.train(FAST, JobHooks(should_stop=lambda: True), on_done=done.append)
    assert result.stopped and bench.runs[0].status == "stopped" and done == []


def test_race_is_the_same_config_on_the_cpu_then_the_first_gpu(fake_cuda, monkeypatch, toy_csv):
    keep_cuda_on_cpu(monkeypatch)
    configs = run_configs(replace(FAST, device="auto"), race=True)
    assert [c.device for c in configs] == ["cpu", "cuda:0"] and configs[0].seed == configs[1].seed
    bench = Workbench()
    bench.load(DataChoice(PATH, path=str(toy_csv)))
    bench.train(FAST, JobHooks(), race=True)
    assert [r.device for r in bench.runs] == ["cpu", "cuda:0"]
    assert [e.train_loss for e in bench.runs[0].epochs] == pytest.approx([e.train_loss for e in bench.runs[1].epochs])


def test_a_race_without_a_gpu_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert run_configs(FAST, race=False) == [FAST]
    with pytest.raises(DashboardError, match="a race needs a GPU"):
        run_configs(FAST, race=True)
