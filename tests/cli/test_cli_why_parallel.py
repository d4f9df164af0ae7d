"""`python -m core why-parallel`: the page's sections from the command line."""

import json

import pytest
import torch

from core.cli import main
from tests.lock_helpers import hold_cpu_for


def test_location_json_without_gpu(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert main(["why-parallel", "--section", "location", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["gpu"] is None and list(obj["sections"]) == ["location"]
    assert obj["sections"]["location"]["result"] == {"gpu": None, "error": None, "error_type": None,
                                                     "fixed_device": None}


def test_timing_bug_table_and_progress(capsys):
    assert main(["why-parallel", "--section", "timing-bug", "--budget", "0.1"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("4. The timing bug") and "CPU, n = 1024: without synchronize" in out
    assert "n = 1024 on cpu: 1 of 1 steps done" in err


def test_timing_bug_json_keeps_raw_times(capsys):
    assert main(["why-parallel", "--section", "timing-bug", "--budget", "0.1", "--json"]) == 0
    point = json.loads(capsys.readouterr().out)["sections"]["timing_bug"]["result"]["points"][0]
    assert point["device"] == "cpu" and point["size"] == 1024
    assert len(point["synced"]["times_s"]) >= 1 and point["unsynced"]["synchronized"] is False


def test_unknown_section_exits_2(capsys):
    assert main(["why-parallel", "--section", "nope"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_a_bad_budget_is_one_line(capsys):
    assert main(["why-parallel", "--section", "chain", "--budget", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: argument --budget: time budget must be between 0.05 and 600 s per section, got 0")
    assert err.count("\n") == 1


def test_a_busy_cpu_prints_the_waiting_line_then_runs(capsys):
    holder = hold_cpu_for(1.0, "a student's sweep")
    assert main(["why-parallel", "--section", "timing-bug", "--budget", "0.1"]) == 0
    holder.join(10)
    out, err = capsys.readouterr()
    waiting = [line for line in err.splitlines() if line.startswith("waiting for cpu")]
    assert len(waiting) == 1 and "1 ahead" in waiting[0] and "now running: a student's sweep" in waiting[0]
    assert out.startswith("4. The timing bug")


def test_the_per_job_cap_stops_a_section_with_one_line(monkeypatch, capsys):
    monkeypatch.setenv("GPU_VS_CPU_MAX_JOB_S", "0.2")
    assert main(["why-parallel", "--section", "marbles", "--budget", "2"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("error: this job held cpu for more than 0.2 s, the limit per job")


@pytest.mark.parametrize("budget", ["inf", "nan", "1e9", "0.01"])
def test_a_budget_out_of_range_is_refused_like_matmul_does(budget, capsys):
    assert main(["why-parallel", "--section", "chain", "--budget", budget]) == 2
    err = capsys.readouterr().err
    assert "time budget must be between" in err and "Traceback" not in err


@pytest.mark.slow
def test_every_page_setting_is_a_flag_within_the_pages_bounds(capsys):
    assert main(["why-parallel", "--section", "processes", "--large-n", "32", "--processes", "2", "--budget", "0.1",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["sections"]["processes"]["result"]
    assert result["n"] == 32 and [s["workers"] for s in result["steps"]] == [1, 2]


def test_more_processes_than_the_page_allows_is_one_line(capsys):
    assert main(["why-parallel", "--section", "processes", "--processes", "99"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: argument --processes: most worker processes must be between 1 and 16")
    assert err.count("\n") == 1


def test_a_refusal_prints_torch_s_message_below_its_summary_without_backticks(monkeypatch, capsys):
    """The summary says "its message is below": the CLI prints it there, and code without Markdown's backticks."""
    import dataclasses

    from core.parallel import location, registry

    refused = location.LocationResult("cuda:0", "Expected all tensors to be on the same device", "RuntimeError",
                                      "cuda:0")
    fake = dataclasses.replace(location.SECTION, run=lambda config, hooks: refused)
    monkeypatch.setattr(registry, "SECTIONS", tuple(fake if s.key == "location" else s for s in registry.SECTIONS))
    assert main(["why-parallel", "--section", "location"]) == 0
    out = capsys.readouterr().out
    assert "PyTorch refused a_cpu @ a_gpu with a RuntimeError; its message is below." in out and "`" not in out
    summary_at, message_at = out.index("its message is below"), out.index("Expected all tensors")
    assert summary_at < message_at
