"""`python -m core matmul`: bad input exits 2 with one line; good input gives the issue's JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.cli import build_parser, main
from core.cli.matmul import config_from_args

ROOT = Path(__file__).resolve().parents[1]
ISSUE_KEYS = {"device", "n", "dtype", "median_s", "iqr_s", "samples", "gflops", "unsynced_s", "rel_error"}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "core", "matmul", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


@pytest.mark.parametrize("args, message", [
    (["--sizes", "0"], "at least 1, got 0"),
    (["--sizes", "-5"], "at least 1, got -5"),
    (["--sizes", "256,abc"], "size 'abc' is not a whole number"),
    (["--sizes", "64,1000000"], "n=1000000 float32 on cpu needs"),
    (["--devices", "cuda:99"], "is not available"),
    (["--devices", "tpu"], "unknown device 'tpu'"),
])
def test_bad_input_exits_2_with_one_line_from_a_real_process(args, message):
    proc = _run(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ") and message in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("args, message", [
    (["--sizes", "64,"], "size '' is not a whole number"),
    (["--sizes", "1.5"], "size '1.5' is not a whole number"),
    (["--dtype", "int8"], "unknown dtype 'int8'"),
    (["--threads", "0"], "at least 1"),
    (["--threads", "4096"], "logical cores"),
    (["--budget", "soon"], "not a number of seconds"),
    (["--budget", "0"], "between 0 and 600"),
    (["--tf32", "maybe"], "invalid choice"),
])
def test_more_bad_input_in_process(args, message, capsys):
    assert main(["matmul", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_json_from_a_real_process_has_the_issue_shape():
    proc = _run("--sizes", "16,32", "--budget", "0.05", "--threads", "1", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    obj = json.loads(proc.stdout)
    assert {"results", "crossover_n", "machine"} <= set(obj)
    assert [r["n"] for r in obj["results"]] == [16, 32]
    for row in obj["results"]:
        assert ISSUE_KEYS <= set(row) and row["unsynced_s"] is None and row["samples"] >= 1
    assert obj["crossover_n"] is None  # no GPU in this run
    assert obj["settings"]["threads"] == [1] and obj["settings"]["budget_s"] == 0.05
    assert "cpu" in obj["machine"] and "gpus" in obj["machine"]


def test_table_output_and_progress(capsys):
    assert main(["matmul", "--sizes", "16,32", "--budget", "0.05", "--threads", "1"]) == 0
    captured = capsys.readouterr()
    assert "cpu float32 1 thread" in captured.out and "GFLOP/s" in captured.out
    assert "no 'forgot to synchronize' figure" in captured.out
    assert "[2/2] n=32 on cpu float32 1 thread" in captured.err


def _args(*argv: str):
    return build_parser().parse_args(["matmul", *argv])


def test_flags_become_a_config():
    config = config_from_args(_args("--sizes", "512, 256", "--dtype", "float32,bfloat16", "--threads", "1",
                                    "--tf32", "both", "--budget", "2.5", "--end-to-end"))
    assert config.sizes == (256, 512) and config.dtypes == ("float32", "bfloat16") and config.threads == (1,)
    assert config.tf32 == (False, True) and config.budget_s == 2.5 and config.end_to_end
    assert config_from_args(_args("--tf32")).tf32 == (True,)
    assert config_from_args(_args()).tf32 == (False,)


def test_default_devices_add_the_gpu_when_present(fake_cuda, monkeypatch):
    assert config_from_args(_args()).devices == ("cpu", "cuda:0")
    fake_cuda.count = 0
    monkeypatch.setattr("torch.backends.mps.is_available", lambda: False)
    assert config_from_args(_args()).devices == ("cpu",)
