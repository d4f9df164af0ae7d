"""`python -m core selfcheck`: exit status, the table, the JSON report file."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from core import selfcheck
from core.cli import main
from core.results.load import MachineLoad
from core.selfcheck import Check, CheckResult

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gpu_checks_are_skipped_not_passed_from_a_real_process(tmp_path):
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "core", "selfcheck", "--only", "devices,cuda-events",
                           "--out", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert statuses["devices"] == "pass"
    if not torch.cuda.is_available():
        assert statuses["cuda-events"] == "skip" and report["skipped"] == ["cuda-events"]
        assert "skipped (they need a CUDA GPU): cuda-events" in proc.stdout
    assert f"report written to {out}" in proc.stdout


@pytest.mark.slow
def test_unknown_check_exits_2_with_one_line():
    proc = subprocess.run([sys.executable, "-m", "core", "selfcheck", "--only", "nope"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "unknown check 'nope'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_json_report_goes_to_the_data_folder_by_default(capsys, isolated_dirs):
    assert main(["selfcheck", "--only", "devices", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["passed"] is True and [c["name"] for c in obj["checks"]] == ["devices"]
    (written,) = (isolated_dirs / "data" / "selfcheck").glob("selfcheck-*.json")
    assert json.loads(written.read_text())["checks"] == obj["checks"]


def test_a_failed_check_exits_1(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(selfcheck, "CHECKS", [Check("always-wrong", lambda ctx: CheckResult(False, "2 + 2 = 5"))])
    assert main(["selfcheck", "--out", str(tmp_path / "r.json")]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "2 + 2 = 5" in out and "SOME CHECKS FAILED" in out


def test_out_may_name_a_folder_and_an_unwritable_out_fails_before_the_checks(tmp_path, capsys, monkeypatch):
    assert main(["selfcheck", "--only", "devices", "--out", str(tmp_path)]) == 0
    (written,) = tmp_path.glob("selfcheck-*.json")
    assert json.loads(written.read_text())["checks"][0]["name"] == "devices"
    ran = []
    monkeypatch.setattr(selfcheck, "CHECKS", [Check("counted", lambda ctx: ran.append(1) or CheckResult(True, ""))])
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert main(["selfcheck", "--out", str(blocker / "report.json")]) == 2
    err = capsys.readouterr().err
    assert "cannot write the report" in err and "Traceback" not in err and ran == []


def test_a_busy_machine_is_called_busy_not_all_passed(monkeypatch, tmp_path, capsys):
    """The race's rule (machine_load) decides: a check that passed on a busy machine says so, JSON included."""
    busy = MachineLoad(cores=2, others_cores=1.4, load_average=3.0, free_cores=1, busy=True, probe_s=0.2)
    monkeypatch.setattr(selfcheck, "CHECKS", [Check("timed", lambda ctx: CheckResult(True, "fine", load=busy))])
    assert main(["selfcheck", "--out", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "all checks that ran passed" not in out and "can be trusted" not in out
    assert "the machine was busy" in out and "Machine busy: figures may be noisy" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["busy"] is True and report["checks"][0]["load"]["busy"] is True


def test_the_table_keeps_to_100_columns_and_shows_a_long_detail_in_full_below(monkeypatch, tmp_path, capsys):
    long = "a detail of many words " * 12
    monkeypatch.setattr(selfcheck, "CHECKS", [Check("wordy", lambda ctx: CheckResult(True, long.strip()))])
    assert main(["selfcheck", "--out", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert " ".join(out.split()).count(" ".join(long.split())) == 1
