"""`python -m core results ...` and the shared --save option, with good and bad input."""

from __future__ import annotations

from dataclasses import replace

import argparse
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from core.cli import main
from core.cli.results import add_save_options, save_if_requested
from core.results.kinds import read_result
from core.store import database
from core.store.frames import listing_frame
from core.store.database import open_store
from core.results.files import MAX_IMPORT_BYTES
from tests.result_samples import LAB, LAPTOP, matmul_payload, train_payload, save_payload

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def saved():
    store = open_store()
    return [save_payload(store, "matmul", matmul_payload(LAB)),
            save_payload(store, "train", train_payload(), machine=LAPTOP, label="Ana")]


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_list_table_and_json(saved, capsys):
    assert main(["results", "list", "--wide"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 saved run(s) in the SQLite file")
    assert "Lab Xeon 8480C + NVIDIA H200" in out and "accuracy 75.0%" in out and "Ana" in out

    assert main(["results", "list", "--json", "--kind", "train"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in obj["runs"]] == [saved[1]]
    assert obj["runs"][0]["devices"] == ["cpu"] and obj["runs"][0]["machine"] == "Student Laptop CPU i5"

    assert main(["results", "list", "--json", "--device", "cuda:0"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)["runs"]] == [saved[0]]


def test_list_fits_100_columns_eliding_the_long_fields_and_wide_shows_them(capsys):
    store = open_store()
    long_label = "Ana's laptop in the back row, borrowed from the physics lab for the afternoon"
    run_id = save_payload(store, "train", train_payload(), machine=LAPTOP, label=long_label)
    assert main(["results", "list"]) == 0
    table = capsys.readouterr().out.splitlines()[1:]
    assert max(len(line) for line in table) <= 100, table
    row = next(line for line in table if line.lstrip().startswith(str(run_id)))
    assert "Ana's l…" in row and long_label not in row and "mini-batch: accuracy" in row
    assert main(["results", "list", "--wide"]) == 0
    wide = capsys.readouterr().out
    assert long_label in wide and re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", wide)  # the whole time, too


def test_list_when_empty(capsys):
    assert main(["results", "list"]) == 0
    assert capsys.readouterr().out.startswith("0 saved run(s)")


def test_export_import_round_trip_through_files(saved, tmp_path, capsys):
    out = tmp_path / "class.json"
    assert main(["results", "export", "-o", str(out)]) == 0
    assert "wrote 2 run(s)" in capsys.readouterr().err
    other = f"sqlite:///{tmp_path / 'other.sqlite3'}"
    assert main(["results", "import", str(out), "--db", other, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["skipped"] == 0
    assert {r.uid for r in open_store(other).list_runs()} == {r.uid for r in open_store().list_runs()}
    assert main(["results", "import", str(out), "--db", other]) == 0
    assert "imported 0 run(s) (none); 2 already saved" in capsys.readouterr().out


def test_export_csv_to_stdout(saved, capsysbinary):
    assert main(["results", "export", "--format", "csv", str(saved[0])]) == 0
    frame = pd.read_csv(io.BytesIO(capsysbinary.readouterr().out))
    assert set(frame["run_id"]) == {saved[0]} and len(frame) == 6


def test_import_a_cli_json_file_with_a_label(tmp_path, capsys):
    path = tmp_path / "laptop.json"
    path.write_text(json.dumps(matmul_payload(LAPTOP)))
    assert main(["results", "import", str(path), "--label", "Ben's laptop"]) == 0
    assert "imported 1 run(s) (#1)" in capsys.readouterr().out
    assert open_store().get(1).label == "Ben's laptop"


def test_import_from_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(train_payload()).encode())))
    assert main(["results", "import", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["imported"] == [1]


def test_delete(saved, capsys):
    assert main(["results", "delete", str(saved[0]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"deleted": [saved[0]]}
    assert [r.run_id for r in open_store().list_runs()] == [saved[1]]


@pytest.mark.parametrize("content, match", [
    (b"", "the file is empty"),
    (b"\x00\x01\x02\xff\xfe binary", "not text"),
    ("{]".encode("utf-16"), "not valid JSON"),
    (b"{not json", "not valid JSON"),
    (b'{"results": [{"device": "cpu"}]}', "matmul.results[0]: missing"),
    (b'{"hello": "world"}', "not a result file"),
])
def test_import_bad_files(tmp_path, capsys, content, match):
    path = tmp_path / "upload.json"
    path.write_bytes(content)
    assert match in _error(capsys, ["results", "import", str(path)])
    assert open_store().list_runs() == [], "nothing saved"


def test_import_oversized_file_is_refused_without_reading_it_all(tmp_path, capsys):
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(MAX_IMPORT_BYTES * 3)
    assert "over the 20 MiB limit" in _error(capsys, ["results", "import", str(path)])


def test_import_missing_file_and_folder(tmp_path, capsys):
    assert "no such file" in _error(capsys, ["results", "import", str(tmp_path / "nope.json")])
    assert "is a folder" in _error(capsys, ["results", "import", str(tmp_path)])


def test_delete_and_export_of_missing_runs(saved, capsys):
    assert "no saved run #99" in _error(capsys, ["results", "delete", str(saved[0]), "99"])
    assert len(open_store().list_runs()) == 2, "nothing deleted when one id is wrong"
    assert "no saved run #99" in _error(capsys, ["results", "export", "99"])


@pytest.mark.parametrize("argv, match", [
    (["results", "delete", "three"], "invalid int value: 'three'"),
    (["results", "delete"], "the following arguments are required"),
    (["results"], "the following arguments are required"),
    (["results", "list", "--kind", "race"], "invalid choice: 'race'"),
    (["results", "list", "--db", "mysql://u:pw@h/db"], "use postgresql://"),
])
def test_bad_arguments(capsys, argv, match):
    assert match in _error(capsys, argv)


def test_unwritable_output(saved, tmp_path, capsys):
    assert "cannot write" in _error(capsys, ["results", "export", "-o", str(tmp_path / "no" / "dir" / "x.json")])


@pytest.mark.slow
def test_one_line_error_from_a_real_process(tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(b"\x89PNG\r\n")
    proc = subprocess.run([sys.executable, "-m", "core", "results", "import", str(path)], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: the file is not text") and proc.stderr.count("\n") == 1


def _run_command(argv):
    """A stand-in for `matmul`/`train`: registers the shared options the way they will."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="256,512")
    parser.add_argument("--out", type=Path, default=Path("x.json"))
    parser.add_argument("--json", action="store_true")
    add_save_options(parser)
    return parser.parse_args(argv)


def test_save_option_saves_with_settings_and_label(capsys):
    args = _run_command(["--json", "--save", "--label", "lab GPU", "--sizes", "64"])
    sweep = replace(read_result("matmul", matmul_payload(LAB)), settings={"sizes": [64]})
    run_id = save_if_requested(args, sweep)
    assert f"saved as run #{run_id} in the SQLite file" in capsys.readouterr().err
    run = open_store().get(run_id)
    assert run.label == "lab GPU" and run.settings == {"sizes": [64]}  # the run's own settings, as a page saves them


def test_without_save_nothing_is_saved():
    assert save_if_requested(_run_command([]), read_result("train", train_payload())) is None
    assert open_store().list_runs() == []


@pytest.mark.parametrize("command", ["delete", "export"])
@pytest.mark.parametrize("run_id", ["99999999999999999999", "0"])
def test_impossible_run_ids_are_one_line(saved, capsys, command, run_id):
    assert f"no saved run #{run_id}" in _error(capsys, ["results", command, run_id])
    assert len(open_store().list_runs()) == 2


def test_export_of_a_run_of_another_kind_says_so(saved, capsys):
    matmul_id, train_id = saved
    error = _error(capsys, ["results", "export", str(matmul_id), "--kind", "train"])
    assert f"run #{matmul_id} is a matmul run, not train" in error
    assert "used cpu, not cuda:0" in _error(capsys, ["results", "export", str(train_id), "--device", "cuda:0"])
    assert main(["results", "export", str(train_id), "--kind", "train"]) == 0
    assert [r["kind"] for r in json.loads(capsys.readouterr().out)["runs"]] == ["train"]


def test_an_unreadable_stored_row_is_listed_and_can_be_deleted(saved, capsys):
    store = open_store()
    with store._transaction() as tx:
        # a row written by hand, without a summary: the table reads it in full and names it
        tx.run("UPDATE gvc_runs SET machine_json = ?, summary_json = NULL WHERE id = ?", ('{"gpus": 5}', saved[0]))
    assert main(["results", "list"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("1 saved run(s)")
    assert f"run #{saved[0]} cannot be read (run #{saved[0]}.machine.gpus: expected a list" in captured.err
    assert main(["results", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unreadable"][0]["run_id"] == saved[0]
    assert f"saved run #{saved[0]} cannot be read" in _error(capsys, ["results", "export", str(saved[0])])
    assert main(["results", "delete", str(saved[0])]) == 0
    assert [r.run_id for r in store.read_runs().runs] == [saved[1]] and not store.read_runs().unreadable


def test_import_of_a_version_1_matmul_race_file(tmp_path, capsys):
    old = tmp_path / "old.json"
    old.write_text(json.dumps(matmul_payload(LAB) | {"kind": "matmul_race", "schema_version": 1}))
    assert main(["results", "import", str(old), "--json"]) == 0
    (run_id,) = json.loads(capsys.readouterr().out)["imported"]
    assert open_store().get(run_id).payload["kind"] == "matmul"


def test_import_of_a_bad_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(train_payload("cuda:²")))
    assert "train.device: expected a device" in _error(capsys, ["results", "import", str(bad)])
    deep = tmp_path / "deep.json"
    deep.write_text(json.dumps(train_payload())[:-1] + ', "x": ' + "[" * 800 + "]" * 800 + "}")
    assert "nested" in _error(capsys, ["results", "import", str(deep)])


def test_list_reads_summaries_not_payloads(saved, capsys, monkeypatch):
    """The table of a board of many runs decodes no payload (as the Results page's listing); --json reads in full."""
    store = open_store()
    for i in range(40):
        save_payload(store, "matmul", matmul_payload(LAB), label=f"student {i}")
    assert listing_frame(store.list_runs()).equals(listing_frame(store.read_summaries().runs))  # the old table's rows
    assert main(["results", "list", "--wide"]) == 0
    before = capsys.readouterr().out
    decoded = []
    real = database._row_to_run
    monkeypatch.setattr(database, "_row_to_run", lambda row: decoded.append(row[0]) or real(row))
    assert main(["results", "list", "--wide"]) == 0
    assert capsys.readouterr().out == before and before.startswith("42 saved run(s)")
    assert decoded == []
    assert main(["results", "list", "--kind", "train"]) == 0
    assert capsys.readouterr().out.startswith("1 saved run(s)") and decoded == []
    assert main(["results", "list", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["runs"]) == 42 and len(decoded) == 42


@pytest.mark.parametrize("where, says", [("/proc/gvc-export.json", "a view of the kernel"),
                                         ("/dev/gvc.json", "a view of the kernel"), ("folder", "is a folder"),
                                         ("file/x.json", "which is a file")])
def test_export_output_is_checked_before_the_board_is_read(where, says, tmp_path, monkeypatch, capsys):
    """Issue 30: every output path checked before work starts, one line."""
    import core.cli.results as cli_results

    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    monkeypatch.setattr(cli_results, "open_store", lambda *a: pytest.fail("the board was read"))
    out = where if where.startswith("/") else str(tmp_path / where)
    assert main(["results", "export", "--output", out]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err
