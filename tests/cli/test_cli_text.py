"""Issue 34, "Done when": every CLI command's human output (its tables, prose and progress lines, stdout and
stderr, and its --help) has no number with more than three significant figures, no result field's name and no
line over 100 columns (the rules and the detector: tests/text_audit.py; the width alone: test_cli_width.py).

`--json` output is for programs and keeps every digit; it is not read here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from core.cli import SUBCOMMANDS, main
from core.cli.output import TABLE_WIDTH
from tests.result_samples import LAPTOP, matmul_payload, train_payload
from tests.review_fixtures import csv_bytes, toy_reviews
from tests.text_audit import offenders


def _run(capsys, argv: list[str], status: int = 0) -> list[tuple[str, str]]:
    """The command's output lines, each named by the command; a table's header and rows (from the line above
    its dashes to the next blank line) named '<command> table': a column keeps one unit for all its rows."""
    assert main(argv) == status, argv
    captured = capsys.readouterr()
    lines, command, table = (captured.out + captured.err).splitlines(), " ".join(argv[:2]), set()
    for i, line in enumerate(lines):
        if re.fullmatch(r"-{2,}(?: +-+)*", line.strip()):
            table |= {i - 1, i}
        elif i - 1 in table and line.strip():
            table.add(i)
    return [(f"{command} table" if i in table else command, line) for i, line in enumerate(lines)]


def _check(lines: list[tuple[str, str]], *, wide: bool = False) -> None:
    """No figure in too many digits, no field name; with `wide` False (all but `--wide`), no line over 100."""
    assert lines, "the command printed something"
    bad = offenders(lines)
    bad += [f"{len(line)} columns in {cmd}: {line!r}" for cmd, line in lines if len(line) > TABLE_WIDTH and not wide]
    assert not bad, "\n".join(dict.fromkeys(bad))


@pytest.mark.parametrize("command", [[], *([name] for name in SUBCOMMANDS), ["data", "add"], ["results", "list"]])
def test_every_help_reads_in_words_and_fits(capsys, command):
    with pytest.raises(SystemExit) as leaving:
        main([*command, "--help"])
    assert leaving.value.code == 0
    captured = capsys.readouterr()
    _check([(" ".join(command) or "--help", line) for line in (captured.out + captured.err).splitlines()])


def test_devices_data_colab_kit_and_a_quick_selfcheck(capsys, tmp_path):
    lines = _run(capsys, ["devices"]) + _run(capsys, ["data", "list"])
    lines += _run(capsys, ["colab-kit", "--out", str(tmp_path / "kit")])
    lines += _run(capsys, ["selfcheck", "--only", "devices,cuda-events", "--out", str(tmp_path / "report.json")])
    _check(lines)


def test_results_import_list_export_and_delete(capsys, tmp_path):
    from tests.roofline.test_roofline import _synthetic_run

    files = {"matmul.json": matmul_payload(), "laptop.json": matmul_payload(LAPTOP),
             "train.json": train_payload(seconds=12.3456), "roofline.json": _synthetic_run().to_json()}
    lines = []
    for name, payload in files.items():
        (tmp_path / name).write_text(json.dumps(payload))
        lines += _run(capsys, ["results", "import", str(tmp_path / name), "--label", name.removesuffix(".json")])
    lines += _run(capsys, ["results", "list"])
    lines += _run(capsys, ["results", "export", "--output", str(tmp_path / "all.json")])
    lines += _run(capsys, ["results", "delete", "1"])
    _check(lines)
    _check(_run(capsys, ["results", "list", "--wide"]), wide=True)  # asked for: every cell whole, however wide


@pytest.mark.slow
def test_matmul_with_a_guess(capsys):
    _check(_run(capsys, ["matmul", "--sizes", "16,32", "--budget", "0.05", "--devices", "cpu", "--threads", "1,2",
                         "--guess", "24"]))


@pytest.mark.slow
def test_matmul_on_two_ranks(capsys):
    _check(_run(capsys, ["matmul", "--sizes", "16,32", "--budget", "0.05", "--devices", "cpu", "--ranks", "2"]))


@pytest.mark.slow
def test_roofline(capsys):
    _check(_run(capsys, ["roofline", "--budget", "0.02", "--devices", "cpu"]))


@pytest.mark.slow
def test_train_with_a_guess_and_predictions(capsys, tmp_path: Path):
    reviews = toy_reviews(40)
    data = tmp_path / "toy.csv"
    data.write_bytes(csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]))
    mine = tmp_path / "mine.txt"
    mine.write_text("a gripping, funny and moving film\nawful w3\n")
    _check(_run(capsys, ["train", "--data", str(data), "--epochs", "2", "--hidden", "4", "--batch-size", "16",
                         "--ngrams", "1", "--device", "cpu", "--guess", "3", "--predict", str(mine)]))


@pytest.mark.slow
def test_why_parallel_every_section(capsys):
    _check(_run(capsys, ["why-parallel", "--budget", "0.1", "--small-n", "16", "--large-n", "64", "--processes", "2",
                         "--steps", "20", "--bug-cpu-n", "64"]))
