"""The two presets: the lecture's dense full-batch run and the mini-batch run, their guard, the both-presets view."""

from __future__ import annotations

import json

import pytest
import torch

from core.classifier import fullbatch
from core.classifier.fullbatch import HEADROOM, DenseSize, dense_size
from core.classifier.model import ClassifierConfig, preset_config
from core.classifier.preset_race import WITHOUT_GPU, preset_race
from core.classifier.training import features_for, predict, train
from core.classifier.workbench import PATH, DataChoice, Workbench
from core.cli import main
from core.errors import DashboardError
from core.platform.jobs import JobHooks
from core.platform.units import byte_size
from core.results.train import TrainRun
from tests.review_fixtures import csv_bytes, keep_cuda_on_cpu, toy_reviews

SMALL = dict(hidden=8, weighting="binary", ngrams=1, lr=3.0)  # the lecture preset on the toy set, smaller net


@pytest.fixture(scope="module")
def lecture_features():
    return features_for(toy_reviews(60), preset_config("lecture", **SMALL))


def test_the_minibatch_preset_is_todays_default_and_the_lecture_one_differs():
    assert preset_config("minibatch") == ClassifierConfig()
    lecture = preset_config("lecture", seed=3)
    assert (lecture.preset, lecture.epochs, lecture.seed, lecture.weight_decay) == ("lecture", 10, 3, 0.0)
    assert preset_config("lecture", weighting="binary").weighting == "binary" and lecture.weighting == "nb"
    assert lecture.max_features is not None  # capped, so its dense matrix fits a laptop
    with pytest.raises(DashboardError, match="preset"):
        preset_config("huge")


def test_lecture_preset_takes_ten_full_batch_updates_on_the_cpu_and_its_loss_falls(lecture_features):
    seen = []
    result = train(lecture_features, preset_config("lecture", device="cpu", **SMALL), JobHooks(on_progress=seen.append))
    losses = [e.train_loss for e in result.epochs]
    assert len(result.epochs) == 10 and result.input_mode == "dense" and not result.stopped
    assert losses[-1] < losses[0] - 0.05 and result.test_accuracy is not None and result.test_accuracy > 0.8
    assert all(e.n_batches == 1 and e.seconds > 0 for e in result.epochs)  # one update per step, timed
    rows = lecture_features.n_train + lecture_features.n_val + lecture_features.n_test
    assert result.dense_mb == pytest.approx(rows * lecture_features.vocab_size * 4 / 1e6)
    assert seen[0].message.startswith("training on cpu with ")  # its thread count first
    assert seen[1].item is None and byte_size(result.dense_mb * 1e6) in seen[1].message  # size told before it is built
    assert predict(result, ["great w1", "awful w2"]).tolist()[0] > 0.5
    out = result.run.to_json()
    assert out["preset"] == "lecture" and out["dense_matrix_mb"] == result.dense_mb
    assert TrainRun.from_json(json.loads(json.dumps(out)), "run").preset == "lecture"


def test_minibatch_preset_on_the_cpu_reports_no_dense_matrix():
    config = preset_config("minibatch", device="cpu", hidden=8, epochs=2, weighting="binary", ngrams=1, lr=0.3,
                           batch_size=16)
    result = train(features_for(toy_reviews(40), config), config)
    assert len(result.epochs) == 2 and result.input_mode == "sparse" and result.dense_mb is None
    assert result.run.to_json()["preset"] == "minibatch"


def test_the_memory_guard_refuses_the_dense_matrix_and_names_a_cap_that_fits(lecture_features, monkeypatch):
    size = dense_size(lecture_features, 8)
    free = size.total_bytes  # enough for everything, but not with the headroom kept free
    monkeypatch.setattr(fullbatch, "free_device_bytes", lambda device: free)
    built = []
    monkeypatch.setattr(fullbatch, "move_dense", lambda *a: built.append(a))
    with pytest.raises(DashboardError, match="vocabulary cap of at most") as caught:
        train(lecture_features, preset_config("lecture", device="cpu", **SMALL))
    assert built == []  # refused before anything dense was allocated
    cap = size.largest_cap(free)
    assert 1 <= cap < size.terms and f"{cap:,} terms" in str(caught.value)
    assert DenseSize(size.rows, cap, 8).total_bytes <= free * HEADROOM < DenseSize(size.rows, cap + 1, 8).total_bytes


def test_a_device_too_small_for_any_cap_is_sent_to_the_minibatch_preset(lecture_features, monkeypatch):
    monkeypatch.setattr(fullbatch, "free_device_bytes", lambda device: 1000)
    with pytest.raises(DashboardError, match="minibatch preset"):
        train(lecture_features, preset_config("lecture", device="cpu", **SMALL))


def test_old_files_without_a_preset_read_and_a_bad_preset_is_refused(lecture_features):
    out = train(lecture_features, preset_config("lecture", device="cpu", epochs=2, **SMALL)).run.to_json()
    old = {k: v for k, v in out.items() if k not in ("preset", "dense_matrix_mb")}
    assert TrainRun.from_json(old, "run").preset is None
    with pytest.raises(DashboardError, match="run.preset"):
        TrainRun.from_json({**out, "preset": "turbo"}, "run")


def test_same_seed_same_weights_on_the_cpu_and_a_fake_gpu(lecture_features, fake_cuda, monkeypatch):
    targets = keep_cuda_on_cpu(monkeypatch)
    cpu = train(lecture_features, preset_config("lecture", device="cpu", **SMALL))
    gpu = train(lecture_features, preset_config("lecture", device="cuda", **SMALL))
    assert gpu.device == "cuda:0" and targets.count("model") == 1
    assert sum(t.startswith("tensor") for t in targets) >= 6  # three matrices and three label vectors, moved once
    for (name, a), (_, b) in zip(cpu.model.state_dict().items(), gpu.model.state_dict().items()):
        assert torch.equal(a, b), name


def test_the_guard_reads_the_gpus_free_memory(lecture_features, fake_cuda, monkeypatch):
    fake_cuda.free = 10_000
    with pytest.raises(DashboardError, match="on cuda:0"):
        train(lecture_features, preset_config("lecture", device="cuda", **SMALL))


@pytest.fixture
def toy_csv(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(tmp_path))  # the workbench reads server paths only there
    reviews = toy_reviews(40)
    path = tmp_path / "toy.csv"
    path.write_bytes(csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]))
    return path


def test_cli_lecture_preset_json(toy_csv, capsys):
    assert main(["train", "--data", str(toy_csv), "--preset", "lecture", "--device", "cpu", "--hidden", "8",
                 "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["preset"] == "lecture" and len(out["epochs"]) == 10 and out["dense_matrix_mb"] > 0
    assert out["settings"]["max_features"] == 10_000 and out["settings"]["lr"] == 3.0
    assert byte_size(out["dense_matrix_mb"] * 1e6) in captured.err and "update  10" in captured.err


def test_cli_flags_override_the_preset(toy_csv, capsys):
    assert main(["train", "--data", str(toy_csv), "--preset", "lecture", "--device", "cpu", "--epochs", "3",
                 "--lr", "1", "--hidden", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["epochs"]) == 3 and out["settings"]["lr"] == 1.0 and out["settings"]["hidden"] == 4


def test_both_presets_without_a_gpu_run_the_cpu_half(toy_csv, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr("core.classifier.preset_race.preset_config", _quick_preset)
    bench = Workbench()
    bench.load(DataChoice(PATH, path=str(toy_csv)))
    results = bench.train(ClassifierConfig(seed=1), JobHooks(), both=True)
    assert [(r.config.preset, r.device) for r in results] == [("lecture", "cpu"), ("minibatch", "cpu")]
    race = bench.preset_race
    assert race is not None and not race.with_gpu and WITHOUT_GPU in race.explanation
    assert [row["preset"] for row in race.rows()] == ["lecture", "mini-batch"] and race.speedup("lecture") is None
    assert all(row["s / epoch"] > 0 for row in race.rows())  # one unit: the lecture's update is its epoch
    assert len(bench.kept_preps) == 2  # both presets' features kept for the next press


def test_both_presets_with_a_gpu_time_four_runs_and_their_speedups(toy_csv, fake_cuda, monkeypatch):
    keep_cuda_on_cpu(monkeypatch)
    monkeypatch.setattr("core.classifier.preset_race.preset_config", _quick_preset)
    bench = Workbench()
    bench.load(DataChoice(PATH, path=str(toy_csv)))
    results = bench.train(ClassifierConfig(), JobHooks(), both=True)
    assert [(r.config.preset, r.device) for r in results] == [
        ("lecture", "cpu"), ("lecture", "cuda:0"), ("minibatch", "cpu"), ("minibatch", "cuda:0")]
    race = preset_race(results, with_gpu=True)
    gpu_rows = [row for row in race.rows() if row["device"] == "cuda:0"]
    assert all(row["GPU speed-up ×"] is not None and row["GPU speed-up ×"] > 0 for row in gpu_rows)
    assert WITHOUT_GPU not in race.explanation and "chain of tiny steps" in race.explanation


def _quick_preset(preset: str, **overrides: object) -> ClassifierConfig:
    """The presets shrunk for the toy set: the same code paths in a fraction of a second."""
    small = dict(hidden=4, epochs=2, weighting="binary", ngrams=1)
    return preset_config(preset, **{**small, **overrides})
