"""`python -m core roofline`: the issue's JSON on CPU with GPU fields null, tables, saving, one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.cli import SUBCOMMANDS, main
from core.cli.roofline import config_from_args
from core.cli import build_parser
from core.store.database import open_store
from tests.lock_helpers import hold_cpu_for

ROOT = Path(__file__).resolve().parents[2]
FAST = ["roofline", "--devices", "cpu", "--budget", "0.05"]
DEVICE_KEYS = {"device", "dtype", "peak_gflops", "theoretical_gflops", "bandwidth_gbs", "launch_s", "h2d_gbs",
               "d2h_gbs"}
POINT_KEYS = {"device", "dtype", "n", "gflops", "intensity"}


@pytest.mark.slow
def test_json_from_a_real_process_has_the_issue_shape():
    proc = subprocess.run([sys.executable, "-m", "core", *FAST, "--json", "--quiet"], capture_output=True, text=True,
                          cwd=ROOT, timeout=180)
    assert proc.returncode == 0, proc.stderr
    obj = json.loads(proc.stdout)
    assert {"devices", "points", "predicted_crossover_n", "measured_crossover"} <= set(obj)
    assert obj["schema_version"] == 2 and obj["measured_crossover"]["time"] == "median_s"
    assert obj["devices"] and all(DEVICE_KEYS <= set(d) for d in obj["devices"])
    assert all(d["h2d_gbs"] is None and d["d2h_gbs"] is None for d in obj["devices"])  # no GPU here
    assert all(d["peak_gflops"] > 0 and d["bandwidth_gbs"] > 0 and d["launch_s"] > 0 for d in obj["devices"])
    assert obj["points"] and all(POINT_KEYS <= set(p) for p in obj["points"])
    assert all(p["intensity"] == pytest.approx(2 * p["n"] / 12) for p in obj["points"])
    assert all(isinstance(d["noisy"], list) and isinstance(d["notes"], list) for d in obj["devices"])
    for key in ("predicted_crossover_n", "predicted_crossover_low", "predicted_crossover_high"):
        assert obj[key] is None or (isinstance(obj[key], int) and obj[key] >= 1)


def test_tables_progress_and_the_plain_words(capsys):
    assert main(FAST) == 0
    out, err = capsys.readouterr()
    assert "peak GFLOP/s" in out and "ridge flop/B" in out and "model ms" in out
    assert "theoretical peak of cpu float32" in out and "a guess" in out
    assert "measuring the roofs (round 1 of 3)" in err and "noisy" in out


@pytest.mark.parametrize("args, message", [
    (["--budget", "abc"], "budget 'abc' is not a number"),
    (["--budget", "0"], "between 0 and 60"),
    (["--dtype", "int8"], "unknown dtype 'int8'"),
    (["--devices", "tpu"], "unknown device 'tpu'"),
    (["--label", "x"], "add --save"),
])
def test_bad_input_exits_2_with_one_line(args, message, capsys):
    assert main(["roofline", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


def test_default_devices_add_the_gpu_when_present(fake_cuda):
    args = build_parser("roofline").parse_args(["roofline"])
    assert config_from_args(args).devices == ("cpu", "cuda:0")
    assert "roofline" in SUBCOMMANDS


def test_save_with_a_label_stores_the_printed_json(capsys):
    assert main([*FAST, "--json", "--quiet", "--save", "--label", "lab box"]) == 0
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    (run,) = open_store().list_runs(kind="roofline")
    assert run.label == "lab box" and run.result.to_json()["points"] == printed["points"]
    assert "saved as run #" in captured.err


def test_a_busy_cpu_prints_the_waiting_line_then_runs(capsys):
    holder = hold_cpu_for(1.0, "a student's sweep")
    assert main([*FAST, "--quiet"]) == 0
    holder.join()
    assert "waiting for cpu" in capsys.readouterr().err
