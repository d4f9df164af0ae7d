"""`python -m core matmul`: bad input exits 2 with one line; good input gives the issue's JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.cli import build_parser, main
from core.cli.matmul import config_from_args
from core.store.database import open_store
from tests.lock_helpers import hold_cpu_for

ROOT = Path(__file__).resolve().parents[2]
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
@pytest.mark.slow
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


@pytest.mark.slow
def test_json_from_a_real_process_has_the_issue_shape():
    proc = _run("--sizes", "16,32", "--budget", "0.05", "--threads", "1", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    obj = json.loads(proc.stdout)
    assert {"results", "crossovers", "machine"} <= set(obj) and obj["schema_version"] == 3
    assert [r["n"] for r in obj["results"]] == [16, 32]
    for row in obj["results"]:
        assert ISSUE_KEYS <= set(row) and row["unsynced_s"] is None and row["samples"] >= 1
    assert obj["crossovers"] == []  # one series: nothing to compare
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
    assert config.tf32 == (False, True) and config.options.budget_s == 2.5 and config.options.end_to_end
    assert config_from_args(_args("--tf32")).tf32 == (True,)
    assert config_from_args(_args()).tf32 == (False,)


def test_default_devices_add_the_gpu_when_present(fake_cuda, monkeypatch):
    assert config_from_args(_args()).devices == ("cpu", "cuda:0")
    fake_cuda.count = 0
    monkeypatch.setattr("torch.backends.mps.is_available", lambda: False)
    assert config_from_args(_args()).devices == ("cpu",)


# ---------------------------------------------------------------- the classroom: line, cap, --save (issue 5)


TINY = ["matmul", "--sizes", "16,32", "--budget", "0.05", "--threads", "1"]


def test_save_with_a_label_stores_the_printed_json(capsys):
    assert main([*TINY, "--json", "--quiet", "--save", "--label", "lab box"]) == 0
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    assert captured.err.startswith("saved as run #1 in the SQLite file")
    [run] = open_store().list_runs()
    assert run.kind == "matmul" and run.label == "lab box" and run.payload == printed
    assert run.settings == printed["settings"] and run.settings["sizes"] == [16, 32]  # the run's own, as a page saves
    assert "save" not in run.settings and "label" not in run.settings


def test_without_save_nothing_is_stored(capsys):
    assert main([*TINY, "--quiet"]) == 0
    assert "saved" not in capsys.readouterr().err and not open_store().list_runs()


def test_a_busy_cpu_prints_the_waiting_line_then_runs(capsys):
    holder = hold_cpu_for(1.0, "a student's sweep")
    assert main([*TINY, "--quiet"]) == 0
    holder.join(10)
    err = capsys.readouterr().err.splitlines()
    assert all(line.startswith("  ") for line in err[1:]), err  # one message, wrapped at 100 columns
    line = " ".join(part.strip() for part in err)
    assert line.startswith("waiting for cpu: 1 ahead") and "now running: a student's sweep" in line
    assert line.endswith("(Ctrl+C to leave the line)") and all(len(part) <= 100 for part in err)


def test_the_per_job_cap_stops_the_sweep_and_says_why(monkeypatch, capsys):
    monkeypatch.setenv("GPU_VS_CPU_MAX_JOB_S", "0.2")
    args = ["matmul", "--sizes", "16,32,64,128", "--budget", "0.25", "--threads", "1", "--json", "--quiet"]
    assert main([*args, "--save"]) == 0
    captured = capsys.readouterr()
    obj = json.loads(captured.out)
    assert obj["stopped"] and 1 <= len(obj["results"]) < 4
    assert "stopped: this job held cpu for more than 0.2 s, the limit per job" in captured.err
    [run] = open_store().list_runs()
    assert run.payload["stopped"], "asked to save: the incomplete sweep is saved, marked stopped"


def test_save_when_every_size_was_skipped_saves_nothing_and_says_so(monkeypatch, capsys):
    from core.matmul import guards
    from core.matmul.guards import DoesNotFit

    def no_memory(need):
        raise DoesNotFit(f"n={need.n} needs more than is free; choose a smaller size")

    monkeypatch.setattr("core.cli.matmul.check_sizes_fit", lambda plan: None)  # memory went after the check
    monkeypatch.setattr(guards, "check_memory", no_memory)
    assert main([*TINY, "--save"]) == 0
    captured = capsys.readouterr()
    assert "skipped n=16 on cpu float32 1 thread: n=16 needs more than is free" in captured.out
    assert "nothing was measured, so nothing was saved" in captured.err and not open_store().list_runs()


@pytest.mark.parametrize("args, message", [
    (["--sizes", ""], "size '' is not a whole number"),
    (["--sizes", "1e3"], "size '1e3' is not a whole number"),
    (["--sizes", "0x10"], "size '0x10' is not a whole number"),
    (["--sizes", "16,-1"], "at least 1, got -1"),
    (["--sizes", "99999999999999999999"], "choose a smaller size"),
    (["--budget", "nan"], "between 0 and 600 s, got nan"),
    (["--budget", "-1"], "between 0 and 600 s, got -1"),
    (["--budget", "inf"], "between 0 and 600 s, got inf"),
    (["--devices", ""], "unknown device ''"),
    (["--devices", "cpu,gpu"], "unknown device 'gpu'; choose one of"),
    (["--devices", "cuda"], "device 'cuda' is not available"),
    (["--devices", "mps"], "device 'mps' is not available"),
    (["--dtype", ""], "unknown dtype ''"),
    (["--threads", "two"], "thread count 'two' is not a whole number"),
    (["--threads", "-1"], "at least 1"),
    (["--save", "--label"], "expected one argument"),
])
def test_even_more_bad_input_gets_one_clear_line(args, message, capsys, monkeypatch):
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    monkeypatch.setattr("torch.backends.mps.is_available", lambda: False)
    assert main(["matmul", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert not open_store().list_runs()


def test_a_size_far_beyond_memory_names_its_need_readably(capsys):
    assert main(["matmul", "--sizes", "99999999999999999999"]) == 2
    err = capsys.readouterr().err
    assert "needs 1.64e+29 TiB" in err and "choose a smaller size" in err, err


# ---------------------------------------------------------------- verdicts (issue 20)


def test_the_default_race_is_one_thread_against_all_cores_or_cpu_against_gpu(fake_cuda, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert config_from_args(_args()).threads == (None,)  # with a GPU: the free cores against it
    fake_cuda.count = 0
    monkeypatch.setattr("torch.backends.mps.is_available", lambda: False)
    assert config_from_args(_args()).threads == (1, 2)


def _fake_race(monkeypatch, others_cores):
    """1 thread n^3 ns, 2 threads 0.4 ms + n^3/2 ns (2 threads win from n ~ 93), +-10 % noise."""
    import dataclasses
    from core.matmul import sweep
    from tests.matmul.test_sweep import fake_result, per_series

    def one(series, n, options):
        seconds = n**3 / 1e9 if series.threads == 1 else 4e-4 + n**3 / 2e9
        return dataclasses.replace(fake_result(series, n, seconds), others_cores=others_cores)

    monkeypatch.setattr(sweep, "time_interleaved", per_series(one))
    monkeypatch.setattr(sweep, "probe_seconds", lambda s, n, seed=0, repeats=1: one(s, n, None).median_s)  # the card
    monkeypatch.setattr("os.cpu_count", lambda: 2)


def test_json_has_verdicts_and_the_crossover_interval(monkeypatch, capsys):
    _fake_race(monkeypatch, others_cores=0.0)
    assert main(["matmul", "--sizes", "64,128,256,512", "--threads", "1,2", "--json", "--quiet"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert [(v["n"], v["a"], v["call"]) for v in obj["verdicts"]] == [
        (64, "cpu float32 1 thread", "faster"), (128, "cpu float32 2 threads", "faster"),
        (256, "cpu float32 2 threads", "faster"), (512, "cpu float32 2 threads", "faster")]
    (c,) = obj["crossovers"]
    assert c == {"challenger": "cpu float32 2 threads", "baseline": "cpu float32 1 thread", "time": "median_s",
                 "call": "found", "n_low": 64, "n_high": 128, "n": c["n"]} and 64 <= c["n"] <= 128


def test_table_says_cannot_tell_on_a_busy_machine(monkeypatch, capsys):
    _fake_race(monkeypatch, others_cores=1.0)
    assert main(["matmul", "--sizes", "64,128,256,512", "--threads", "1,2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "comparison: cannot tell on a machine this busy" in out and "beats" not in out
    assert out.count(" unclear ") >= 4 and "busy" in out


def test_ctrl_c_keeps_the_sizes_measured_like_stop(monkeypatch, capsys):
    """Issue 30: Ctrl+C on `matmul --json --save` lost the finished sizes (no JSON, nothing saved)."""
    import signal

    import core.matmul.sweep as sweep

    real = sweep.time_interleaved
    calls = []

    def then_ctrl_c(*args, **kwargs):
        points = real(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            signal.raise_signal(signal.SIGINT)  # the user's Ctrl+C, after the first size
        return points

    monkeypatch.setattr(sweep, "time_interleaved", then_ctrl_c)
    before = signal.getsignal(signal.SIGINT)
    assert main(["matmul", "--sizes", "16,32,64", "--devices", "cpu", "--threads", "1", "--json", "--save"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert [r["n"] for r in out["results"]] == [16] and out["stopped"] is True
    assert "stopped by the user" in captured.err and "press it again to abort" in captured.err
    assert [len(r.result.results) for r in open_store().list_runs(kind="matmul")] == [1]
    assert signal.getsignal(signal.SIGINT) is before, "the handler is put back"


def test_a_second_ctrl_c_interrupts_at_once(monkeypatch, capsys):
    import signal

    import core.matmul.sweep as sweep

    real = sweep.time_interleaved

    def twice(*args, **kwargs):
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "time_interleaved", twice)
    assert main(["matmul", "--sizes", "16,32", "--devices", "cpu", "--threads", "1", "--json", "--save"]) == 130
    assert "interrupted" in capsys.readouterr().err and not open_store().list_runs()


def test_a_saved_cannot_tell_names_the_earlier_clear_run_of_this_machine(monkeypatch, capsys):
    """Issue 31: the CLI says what the page says under a "cannot tell": the newest clear run, labelled earlier."""
    from core.platform import jobs
    from core.results.load import MachineLoad

    argv = ["matmul", "--sizes", "64,128,256,512", "--threads", "1,2", "--quiet", "--save"]
    monkeypatch.setattr(jobs, "probe_load", lambda **k: MachineLoad(cores=2, others_cores=0.0, free_cores=2,
                                                                    busy=False))  # quiet as it starts
    _fake_race(monkeypatch, others_cores=0.0)
    assert main(argv) == 0
    assert "earlier" not in capsys.readouterr().out
    _fake_race(monkeypatch, others_cores=1.0)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "comparison: cannot tell on a machine this busy" in out
    earlier = " ".join(out[out.index("earlier, on this machine with these settings: measured "):].split())
    assert "on a quiet machine, less than a minute ago: cpu float32 2 threads beats cpu float32 1 thread" in earlier
    assert "(run #1 on Results)" in earlier and len(open_store().list_runs()) == 2


def test_for_class_runs_the_longer_race_saves_it_and_pins_it(capsys):
    """`--for-class`: the instructor's measurement without a browser (the command line is the instructor)."""
    from core.matmul.shared_race import CLASS_BUDGET_FACTOR

    assert main([*TINY, "--json", "--quiet", "--for-class", "--label", "lab server"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["settings"]["budget_s"] == 0.05 * CLASS_BUDGET_FACTOR
    store = open_store()
    [run] = store.list_runs()
    assert run.label == "lab server" and store.pinned_reference() == run.run_id
    assert f"pinned #{run.run_id} as the room's reference" in captured.err
    assert main(["results", "unpin"]) == 0 and store.pinned_reference() is None
    assert main(["results", "pin", str(run.run_id)]) == 0 and store.pinned_reference() == run.run_id


def test_for_class_is_a_measurement_not_a_guess(capsys):
    assert main([*TINY, "--for-class", "--guess", "500"]) == 2
    assert "drop --ranks, --distributed and --guess" in capsys.readouterr().err and not open_store().list_runs()


def test_a_saved_guess_is_judged_against_the_pinned_reference(capsys):
    """`--guess ... --save` prints the race page's line about the room's reference when one is pinned, else none."""
    from core.matmul.shared_race import CLASS_BUDGET_FACTOR

    assert main([*TINY, "--quiet", "--guess", "500", "--save"]) == 0
    assert "room's reference" not in capsys.readouterr().out, "nothing pinned: no line"
    assert main([*TINY, "--quiet", "--for-class"]) == 0
    pinned = open_store().pinned_reference()
    capsys.readouterr()
    assert main([*TINY, "--quiet", "--guess", "500", "--save"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # wrapped at 100 columns
    assert (f"Against the room's reference (run #{pinned}, measured " in out
            and f"by the instructor, {CLASS_BUDGET_FACTOR}× your budget per size): cannot tell: " in out
            and "your guess n ≈ 500 can be neither confirmed nor refuted." in out and "Note:" not in out)
