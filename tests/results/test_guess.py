"""Predict, then measure: the guess as typed, as saved, and the sentence that sets it beside the measurement."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from core.classifier.guess import compare_guess as compare_train
from core.cli import main
from core.errors import DashboardError
from core.matmul.guess import compare_guess as compare_matmul
from core.results.kinds import read_result
from core.results.guess import CROSSOVER_N, EPOCH_S, NO_CROSSOVER, SPEEDUP, parse_matmul_guess, parse_train_guess
from core.results.load import MachineLoad
from core.results.crossover import Crossover
from core.results.matmul import MatmulSweep
from core.results.train import TrainRun
from tests.result_samples import matmul_payload, train_payload


@pytest.mark.parametrize("typed, what, value", [
    ("700", CROSSOVER_N, 700), (" n = 1,024 ", CROSSOVER_N, 1024), ("2k", CROSSOVER_N, 2000),
    ("No crossover", NO_CROSSOVER, None), ("never", NO_CROSSOVER, None),
])
def test_matmul_guess_reads_sizes_and_no_crossover(typed, what, value):
    g = parse_matmul_guess(typed)
    assert g is not None and (g.what, g.value) == (what, value) and g.text == typed.strip()


@pytest.mark.parametrize("typed, what, value", [
    ("0.5", EPOCH_S, 0.5), ("0,5 s", EPOCH_S, 0.5), ("300 ms", EPOCH_S, 0.3), ("2 s per epoch", EPOCH_S, 2.0),
    ("20x", SPEEDUP, 20.0), ("7.5 ×", SPEEDUP, 7.5), ("3 times faster", SPEEDUP, 3.0),
])
def test_train_guess_reads_seconds_and_speedups(typed, what, value):
    g = parse_train_guess(typed)
    assert g is not None and g.what == what and g.value == pytest.approx(value)


def test_an_empty_box_is_no_guess():
    assert parse_matmul_guess("  ") is None and parse_train_guess(None) is None


@pytest.mark.parametrize("parse, typed, hint", [
    (parse_matmul_guess, "soon", "no crossover"), (parse_matmul_guess, "0", "between 1"),
    (parse_matmul_guess, "5000000", "between 1"), (parse_train_guess, "fast", "20x"),
    (parse_train_guess, "0 s", "20x"), (parse_train_guess, "-3x", "20x"),
])
def test_an_unreadable_guess_says_what_to_type(parse, typed, hint):
    with pytest.raises(DashboardError, match=hint):
        parse(typed)


def _sweep(**crossover) -> MatmulSweep:
    sweep = read_result("matmul", matmul_payload())
    assert isinstance(sweep, MatmulSweep)
    if not crossover:
        return sweep  # an older file: crossover_n 300 alone
    c = Crossover(challenger="cuda:0 float32", baseline="cpu float32", time="median_s", **crossover)
    return replace(sweep, crossovers=(c,))


def test_the_guess_is_saved_in_the_sweep_and_older_files_read_without_it():
    sweep = replace(_sweep(), guess=parse_matmul_guess("512"))
    data = json.loads(json.dumps(sweep.to_json()))
    assert data["guess"] == {"what": "crossover_n", "value": 512.0, "text": "512"}
    assert read_result("matmul", data).guess == sweep.guess
    old = read_result("matmul", matmul_payload())  # a file from before the field
    assert old.guess is None and "guess" not in old.to_json()


@pytest.mark.parametrize("typed, crossover, words", [
    ("400", dict(n_low=256, n_high=1024, call="found"), "inside it: right"),
    ("4000", dict(n_low=256, n_high=1024, call="found"), "too large by about 3.9×"),
    ("200", dict(n_low=256, n_high=1024, call="found"), "close, but your guess is too small by about 1.3×"),
    ("no crossover", dict(n_low=256, n_high=1024, call="found"), "so there is one"),
    ("no crossover", dict(call="none"), "no crossover in this range: right"),
    ("300", dict(call="none"), "none was measured"),
    ("300", dict(n_high=1024, call="unclear"), "neither confirmed nor refuted"),
    ("100", dict(n_high=64, call="found"), "at or below n = 64"),
])
def test_the_matmul_sentence_sets_the_guess_beside_the_interval(typed, crossover, words):
    sentence = compare_matmul(replace(_sweep(**crossover), guess=parse_matmul_guess(typed)))
    assert sentence is not None and sentence.startswith("You guessed") and words in sentence


def test_a_sweep_older_than_the_verdicts_compares_with_its_interpolated_crossover():
    sweep = replace(_sweep(), guess=parse_matmul_guess("600"))  # crossover_n 300, no interval
    assert "n ≈ 300" in compare_matmul(sweep) and "(2× apart)" in compare_matmul(sweep)
    assert compare_matmul(_sweep()) is None


def _run(device: str, seconds: float, busy: bool = False) -> TrainRun:
    run = read_result("train", train_payload(device, seconds=seconds))
    load = MachineLoad(cores=2, free_cores=1, busy=busy) if busy else None
    return replace(run, load=load)


def test_the_train_sentence_compares_seconds_per_epoch():
    assert "right" in compare_train([_run("cpu", 4.0)], parse_train_guess("4.2 s"))
    sentence = compare_train([_run("cpu", 4.0, busy=True)], parse_train_guess("0.5"))
    assert "500 ms per epoch" in sentence and "4 s per epoch on cpu on a busy machine" in sentence
    assert "too low by about 8×" in sentence


def test_the_train_sentence_compares_a_speedup_only_with_a_race():
    race = [_run("cpu", 4.0), _run("cuda:0", 0.5)]
    assert "measured 8× " in compare_train(race, parse_train_guess("10x"))
    assert "close" in compare_train(race, parse_train_guess("10x"))
    alone = compare_train([_run("cpu", 4.0)], parse_train_guess("10x"))
    assert "one device only" in alone and "Race CPU vs GPU" in alone
    assert compare_train([_run("cpu", 4.0)]) is None


def test_cli_matmul_saves_the_guess_and_prints_the_sentence(capsys):
    assert main(["matmul", "--sizes", "16,32", "--budget", "0.02", "--threads", "1", "--quiet",
                 "--guess", "no crossover", "--json", "--save", "--label", "Ana"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["guess"]["what"] == NO_CROSSOVER
    assert "You guessed no crossover" in captured.err
    from core.store.database import open_store

    saved = open_store().list_runs(kind="matmul")
    assert saved[0].label == "Ana" and saved[0].result.guess.what == NO_CROSSOVER


@pytest.mark.parametrize("command", [["matmul", "--guess", "soon"], ["train", "--data", "x.csv", "--guess", "quick"]])
def test_cli_refuses_an_unreadable_guess_in_one_line_before_running(command, capsys):
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "guess" in err


def test_cli_train_saves_the_guess_and_prints_the_sentence(tmp_path, capsys):
    from tests.review_fixtures import csv_bytes, toy_reviews

    reviews = toy_reviews(40)
    data = tmp_path / "toy.csv"
    data.write_bytes(csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]))
    assert main(["train", "--data", str(data), "--epochs", "2", "--hidden", "4", "--batch-size", "16",
                 "--device", "cpu", "--guess", "0.2 s"]) == 0
    out = capsys.readouterr().out
    assert "You guessed 200 ms per epoch; measured " in out and "per epoch on cpu" in out


@pytest.mark.parametrize("typed, value", [
    ("1.000.000", 1_000_000), ("1,000,000", 1_000_000), ("2.048", 2.048), ("1,000.5", 1000.5), ("1.000,5", 1000.5),
    ("12,5", 12.5), ("0012", 12),
])
def test_one_grammar_reads_numbers_with_their_separators_in_place(typed, value):
    g = parse_matmul_guess(typed) if float(value).is_integer() else parse_train_guess(typed)
    assert g is not None and g.value == pytest.approx(value)


@pytest.mark.parametrize("typed", ["1,2,3", "1.2.3", "1,00,0", "1..2", "1.,2", "1,000,00", "1.000.00", "1,000.000,5",
                                   "1.000,000.5", "٧٠٠", "７００", "1.2.3 s", "1,2,3 ms", "1.2.3x", "1,2,3k"])
@pytest.mark.parametrize("parse", [parse_matmul_guess, parse_train_guess])
def test_a_number_with_misplaced_separators_is_one_line_not_a_traceback(parse, typed):
    """Issue 30: '1.000.000' and '1,2,3' on the race page, '1.2.3 s' on the classifier page were a ValueError."""
    with pytest.raises(DashboardError) as err:
        parse(typed)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("argv", [["matmul", "--sizes", "64", "--devices", "cpu", "--guess", "1,2,3"],
                                  ["train", "--guess", "1.2.3 s"]])
def test_the_cli_refuses_a_bad_guess_in_one_line(argv, capsys):
    from core.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err and "Traceback" not in err
