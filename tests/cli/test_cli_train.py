"""`python -m core train`: the JSON the issue names, predictions, and one-line exit-2 errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from core.cli import main
from tests.review_fixtures import csv_bytes, labelled_rows, toy_reviews

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
QUICK = ["--epochs", "2", "--hidden", "4", "--batch-size", "16", "--lr", "0.3", "--ngrams", "1"]
JSON_KEYS = {"device", "n_train", "n_test", "vocab_size", "epochs", "test_accuracy", "train_seconds",
             "baseline_accuracy", "predictions"}


@pytest.fixture
def toy_csv(tmp_path):
    reviews = toy_reviews(40)
    rows = [(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]
    path = tmp_path / "toy.csv"
    path.write_bytes(csv_bytes(rows))
    return path


def test_train_json(toy_csv, tmp_path, capsys):
    predict = tmp_path / "mine.txt"
    predict.write_text("great w1 w2\n\nawful w3\n")
    assert main(["train", "--data", str(toy_csv), *QUICK, "--device", "cpu", "--predict", str(predict), "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert JSON_KEYS <= set(out)
    assert set(out) - JSON_KEYS == {"kind", "schema_version", "stopped", "settings", "load", "preset",
                                    "dense_matrix_mb"}
    assert out["preset"] == "minibatch" and out["dense_matrix_mb"] is None
    assert out["kind"] == "train" and out["schema_version"] == 2
    assert out["stopped"] is False and out["settings"]["device"] == "cpu"
    assert out["device"] == "cpu" and (out["n_train"], out["n_test"]) == (64, 16)
    assert [e["epoch"] for e in out["epochs"]] == [1, 2]
    # the old keys, and only more: when the run ended, its figures' seconds since the start
    assert set(out["epochs"][0]) == {"epoch", "train_loss", "test_loss", "test_accuracy", "seconds", "elapsed_s"}
    assert 0.5 <= out["test_accuracy"] <= 1 and 0 <= out["baseline_accuracy"] <= 1 and out["train_seconds"] > 0
    assert [p["text"] for p in out["predictions"]] == ["great w1 w2", "awful w3"]
    assert out["predictions"][0]["p_positive"] > out["predictions"][1]["p_positive"]
    assert "epoch   1" in captured.err  # progress goes to stderr so stdout stays one JSON object


def test_train_human_output_with_tfidf(toy_csv, capsys):
    assert main(["train", "--data", str(toy_csv), *QUICK, "--tfidf"]) == 0
    out = capsys.readouterr().out
    assert "epoch   2" in out and "test accuracy" in out and "LogisticRegression on the same split" in out


def _write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


BAD = {
    "missing path": (lambda t: ["--data", str(t / "nope.csv")], "nor an existing file or folder"),
    "empty file": (lambda t: ["--data", _write(t, "e.csv", b"")], "is empty"),
    "binary file": (lambda t: ["--data", _write(t, "b.csv", bytes(range(256)) * 4)], "not a text file"),
    "wrong columns": (lambda t: ["--data", _write(t, "w.csv", csv_bytes(labelled_rows(), header=("a", "b")))],
                      "no text column"),
    "single class": (lambda t: ["--data", _write(t, "s.csv", csv_bytes([(f"good {i}", "1") for i in range(9)]))],
                     "only positive"),
    "empty texts": (lambda t: ["--data", _write(t, "x.csv", csv_bytes([("", "1"), ("", "0")] * 4))],
                    "only empty texts"),
    "zero lr": (lambda t: ["--data", "x", "--lr", "0"], "learning rate 0.0 is out of range"),
    "negative lr": (lambda t: ["--data", "x", "--lr", "-0.1"], "learning rate"),
    "zero epochs": (lambda t: ["--data", "x", "--epochs", "0"], "epochs 0"),
    "zero batch": (lambda t: ["--data", "x", "--batch-size", "0"], "batch size 0"),
    "zero hidden": (lambda t: ["--data", "x", "--hidden", "0"], "hidden size 0"),
    "unknown device": (lambda t: ["--data", "x", "--device", "tpu"], "unknown device 'tpu'"),
    "absent gpu": (lambda t: ["--data", "x", "--device", "cuda"], "not available"),
    "ngrams 3": (lambda t: ["--data", "x", "--ngrams", "3"], "invalid choice"),
    "not a number": (lambda t: ["--data", "x", "--epochs", "ten"], "invalid int value"),
    "missing predict file": (lambda t: ["--data", "x", "--predict", str(t / "none.txt")], "--predict file"),
    "unknown data set name": (lambda t: ["--data", "sst2"], "neither a built-in data set (rt-polarity, imdb)"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_exits_2_with_one_line(case, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    make_args, message = BAD[case]
    assert main(["train", *make_args(tmp_path)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], captured.err
    assert captured.out == ""


@pytest.mark.slow
def test_module_entry_point_exits_2(tmp_path):
    """The real `python -m core train` process: exit status 2 and one line on stderr, no traceback."""
    proc = subprocess.run([sys.executable, "-m", "core", "train", "--data", str(tmp_path / "nope")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_train_save_lands_in_the_store(toy_csv, capsys):
    from core.store.database import open_store

    assert main(["train", "--data", str(toy_csv), *QUICK, "--device", "cpu", "--json", "--save", "--label", "lab"]) == 0
    captured = capsys.readouterr()
    assert "saved as run #" in captured.err
    runs = open_store().list_runs(kind="train")
    assert len(runs) == 1 and runs[0].label == "lab"
    assert runs[0].payload["epochs"] == json.loads(captured.out)["epochs"]


def test_feature_building_obeys_the_time_cap(toy_csv, monkeypatch, capsys):
    monkeypatch.setenv("GPU_VS_CPU_MAX_JOB_S", "1e-9")
    assert main(["train", "--data", str(toy_csv), *QUICK, "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "the limit per job" in err and err.count("\n") == 1


def test_a_run_stopped_by_the_time_cap_before_its_first_epoch_still_reports(toy_csv, monkeypatch, capsys):
    from dataclasses import replace

    from core.cli import train as train_command

    real_train = train_command.train  # the features are built in time; the training run gets a tiny cap
    monkeypatch.setattr(train_command, "train",
                        lambda features, config, hooks: real_train(features, config, replace(hooks, max_job_s=1e-9)))
    assert main(["train", "--data", str(toy_csv), *QUICK, "--device", "cpu"]) == 0
    assert "stopped before the first epoch ended" in capsys.readouterr().out
    assert main(["train", "--data", str(toy_csv), *QUICK, "--device", "cpu", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stopped"] is True and out["epochs"] == [] and out["test_accuracy"] is None


def test_predict_from_a_device_or_a_huge_file_is_refused(capsys, tmp_path, monkeypatch):
    assert main(["train", "--data", "nowhere-at-all", "--predict", "/dev/zero"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    monkeypatch.setattr("core.cli.train.MAX_PREDICT_BYTES", 10)
    big = tmp_path / "many.txt"
    big.write_text("a fine film\n" * 5)
    assert main(["train", "--data", "nowhere-at-all", "--predict", str(big)]) == 2
    assert "larger than" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["train", "--data", "rt-polarity"], ["matmul", "--sizes", "16"]])
def test_a_label_without_save_is_refused_before_anything_runs(command, capsys):
    assert main([*command, "--label", "lab GPU"]) == 2
    err = capsys.readouterr().err
    assert "add --save" in err and "Traceback" not in err


@pytest.mark.parametrize("flags", [["--lr", "inf"], ["--lr", "1e30"], ["--hidden", "10000000"], ["--epochs", "1000000"],
                                   ["--seed", "-1"], ["--nb-logit", "-0.5"], ["--nb-logit", "nan"]])
def test_settings_out_of_range_exit_2_before_any_data_is_read(flags, capsys):
    assert main(["train", "--data", "nowhere-at-all", *flags]) == 2
    err = capsys.readouterr().err
    assert "out of range" in err and err.count("\n") == 1 and "Traceback" not in err


def test_nb_logit_flag_sets_the_naive_bayes_weight_and_defaults_to_the_config():
    from core.cli import build_parser
    from core.cli.train import config_from_args
    from core.classifier.model import ClassifierConfig

    parse = build_parser("train").parse_args
    assert config_from_args(parse(["train", "--nb-logit", "0"])).nb_logit == 0.0
    assert config_from_args(parse(["train"])).nb_logit == ClassifierConfig().nb_logit == 0.3
    assert config_from_args(parse(["train", "--preset", "lecture"])).nb_logit == 0.0, "the lecture's network alone"
