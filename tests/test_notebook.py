"""core.notebook, what the Colab notebook runs, and the notebook file itself (no kernel needed)."""

from __future__ import annotations

import json
import re
import sys
from types import ModuleType, SimpleNamespace

import pytest

from core import notebook as nb
from core.errors import DashboardError
from core.platform.jobs import Progress
from core.results.files import EXPORT_FORMAT, read_import
from core.results.load import MachineLoad
from core.selfcheck import FAIL, PASS, SKIP, Outcome, Report
from core.store.database import open_store
from tests.notebook_runner import NOTEBOOK, ROOT, with_settings
from core.results.machine import Gpu, read_machine
from tests.result_samples import LAB, LAPTOP, matmul_payload, train_payload
from tests.review_fixtures import write_rt_folder

MAX_CELL_LINES = 15


@pytest.fixture
def fake_colab(monkeypatch):
    """A stand-in `google.colab` whose files.download records what it was handed."""
    downloads: list[str] = []
    google, colab = ModuleType("google"), ModuleType("google.colab")
    colab.files = SimpleNamespace(download=downloads.append)  # type: ignore[attr-defined]
    google.colab = colab  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    return downloads


def test_outside_colab_there_is_no_colab_module_and_a_download_says_where_the_file_is(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", None)  # import fails, as on a machine without Colab
    assert nb.colab_module() is None
    assert nb.offer_download(tmp_path / "x.json") == f"saved x.json in {tmp_path}: download it from there"


def test_in_colab_the_export_is_handed_to_the_browser(tmp_path, fake_colab):
    assert nb.colab_module() is sys.modules["google.colab"]
    message = nb.offer_download(tmp_path / "x.json")
    assert fake_colab == [str(tmp_path / "x.json")]
    assert "downloading" in message


def test_only_core_notebook_touches_google_colab():
    users = [p.relative_to(ROOT).as_posix() for p in [*ROOT.glob("core/**/*.py"), *ROOT.glob("pages/**/*.py"), NOTEBOOK]
             if "google.colab" in p.read_text()]
    assert users == ["core/notebook.py"]


def test_device_table_lists_the_cpu_and_each_gpu_with_its_memory():
    info = {**LAB, "gpus": [{"index": 0, "name": "Tesla T4", "total_memory_bytes": 15 * 2**30,
                             "free_memory_bytes": 14 * 2**30, "compute_capability": "7.5"}],
            "cpu": {"name": "Intel Xeon", "logical_cores": 2, "torch_threads": 2,
                    "ram_total_bytes": 12 * 2**30, "ram_available_bytes": 10 * 2**30}}
    table = nb.device_table(read_machine(info, "machine"))
    assert table["device"].tolist() == ["cpu", "cuda:0"]
    assert table.loc[1, "memory"] == "14 GiB free of 15 GiB"
    assert table.loc[0, "details"] == "2 cores, torch uses 2 threads"
    assert nb.DeviceCheck(read_machine(info, "machine"), table).has_gpu
    assert not nb.DeviceCheck(read_machine(LAPTOP, "machine"), table).has_gpu


@pytest.mark.slow
def test_check_devices_reads_the_clis_json_and_a_failure_says_what_to_do(tmp_path):
    check = nb.check_devices()
    assert check.table.loc[0, "device"] == "cpu" and check.info.torch_version
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'No module named core' >&2\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(DashboardError, match="run the install cell again"):
        nb.check_devices(str(broken))


def test_gpu_plan_races_to_the_lectures_size_and_beyond_with_tf32_and_bfloat16_where_the_gpu_has_them():
    """Issue 33: on a T4 the plan's n = 16384 was always skipped by the 2 s budget, its TF32-on series timed TF32
    off, and its CPU bfloat16 series raced no GPU partner."""
    a100 = nb.plan_for(has_gpu=True, gpu=Gpu(index=0, name="NVIDIA A100-SXM4-40GB", compute_capability="8.0"))
    assert a100.has_gpu and a100.devices == ("cpu", "cuda")
    assert nb.LECTURE_N in a100.sweep.sizes and max(a100.sweep.sizes) == nb.BEYOND_N
    assert a100.sweep.tf32 == (False, True) and a100.sweep.dtypes == ("float32", "bfloat16")
    assert "train-same-seed" in a100.checks and a100.epochs == 10
    for gpu in (Gpu(index=0, name="Tesla T4", compute_capability="7.5"), None, Gpu(index=0)):
        t4 = nb.plan_for(has_gpu=True, gpu=gpu)
        assert max(t4.sweep.sizes) == nb.LECTURE_N and t4.sweep.tf32 == (False,) and t4.sweep.dtypes == ("float32",)
        assert t4.epochs == 10 and t4.sweep.options.budget_s == nb.GPU_BUDGET_S


def test_cpu_plans_stay_small_and_still_list_the_gpu_checks_so_they_report_skipped():
    cpu, quick = nb.plan_for(has_gpu=False), nb.plan_for(has_gpu=False, quick=True)
    assert not cpu.has_gpu and cpu.devices == ("cpu",) and max(cpu.sweep.sizes) <= 1024
    assert max(quick.sweep.sizes) <= 256 and quick.epochs <= 2 and quick.sweep.threads == (1,)
    assert "cpu-sweep" in cpu.checks and "cpu-sweep" not in quick.checks
    assert {"gpu-sweep", "cuda-events", "train-same-seed"} <= set(quick.checks)
    assert nb.plan_for(has_gpu=True, quick=True).devices == ("cpu", "cuda")


def _report(*statuses: str) -> Report:
    outcomes = tuple(Outcome(f"check-{i}", s, "detail", 0.1) for i, s in enumerate(statuses))
    return Report(outcomes, read_machine(LAPTOP, "machine"), 1.0, "2026-01-01T00:00:00Z")


def test_verdict_is_one_line_naming_failures_and_skips():
    assert nb.verdict(_report(PASS, PASS)) == "selfcheck: timings here can be trusted: 2 passed, 0 failed"
    line = nb.verdict(_report(PASS, FAIL, SKIP))
    assert line.startswith("selfcheck: do not trust these timings yet: 1 passed, 1 failed, 1 skipped")
    assert line.endswith("failed: check-1") and "\n" not in line


def test_verdict_never_trusts_timings_after_checking_no_timing_nor_on_a_busy_machine():
    """Quick mode on a CPU-only machine: only `devices` ran (it times nothing) and the GPU checks were skipped."""
    only_devices = Report((Outcome("devices", PASS, "CPU ...", 0.1, timed=False),
                           *(Outcome(f"gpu-{i}", SKIP, "needs CUDA", 0.0) for i in range(4))),
                          LAPTOP, 1.0, "2026-01-01T00:00:00Z")
    line = nb.verdict(only_devices)
    assert "can be trusted" not in line and "no timing was checked" in line
    assert "1 passed, 0 failed, 4 skipped" in line
    busy = MachineLoad(cores=2, others_cores=1.0, load_average=2.5, free_cores=1, busy=True, probe_s=0.2)
    on_busy = Report((Outcome("cpu-sweep", PASS, "5 sizes", 3.0, load=busy),), LAPTOP, 3.0, "2026-01-01T00:00:00Z")
    line = nb.verdict(on_busy)
    assert "can be trusted" not in line and "busy" in line and busy.notice in line
    quiet = MachineLoad(cores=2, others_cores=0.05, load_average=0.1, free_cores=2, busy=False, probe_s=0.2)
    on_quiet = Report((Outcome("cpu-sweep", PASS, "5 sizes", 3.0, load=quiet),), LAPTOP, 3.0, "2026-01-01T00:00:00Z")
    assert nb.verdict(on_quiet) == "selfcheck: timings here can be trusted: 1 passed, 0 failed"


def test_printing_hooks_print_progress_and_each_change_of_the_waiting_line():
    said: list[str] = []
    hooks = nb.printing_hooks(said.append)
    assert hooks.on_progress is not None and hooks.on_wait is not None
    hooks.on_progress(Progress(1, 3, "timing n=64"))
    status = SimpleNamespace(device="cpu", ahead=2, message="waiting for cpu: 2 ahead")
    hooks.on_wait(status)  # type: ignore[arg-type]
    hooks.on_wait(status)  # type: ignore[arg-type]
    assert said == ["timing n=64", "waiting for cpu: 2 ahead"]


def test_classifier_race_trains_each_device_from_the_same_seed(tmp_path):
    data = write_rt_folder(tmp_path / "reviews")
    plan = nb.plan_for(has_gpu=False, quick=True)
    race = nb.classifier_race(str(data), plan, seed=3)
    assert [r.device for r in race.runs] == ["cpu"] and race.runs[0].config.seed == 3
    assert len(race.runs[0].epochs) == plan.epochs
    summary = race.summary()
    assert summary["device"].tolist() == ["cpu"] and summary["preset"].tolist() == ["mini-batch"]
    shown = [str(v) for row in summary.values.tolist() for v in row]
    assert not {"None", "nan"} & set(shown)
    assert all(len(re.sub(r"\D", "", v).lstrip("0")) <= 3 for v in shown if "." in v)  # 3 figures
    assert nb.run_name(race.runs[0]) == "cpu · mini-batch"
    assert race.payloads()[0]["kind"] == "train"


def test_rerunning_a_step_replaces_its_run_and_the_export_reads_back(tmp_path):
    runs = nb.NotebookRuns(tmp_path / "out", label="Ana, Colab T4")
    with pytest.raises(DashboardError, match="no runs to save yet"):
        runs.export()
    runs.keep("matmul", "matmul", [matmul_payload(LAB)])
    runs.keep("classifier", "train", [train_payload("cpu"), train_payload("cuda:0")])
    runs.keep("matmul", "matmul", [matmul_payload(LAB, sizes=(256, 512))])  # the cell run again
    assert len(nb.NotebookRuns(tmp_path / "out").store.list_runs()) == 3, "kept on disk, one sweep"
    export = runs.export()
    assert json.loads(export.read_text())["format"] == EXPORT_FORMAT
    records = read_import(export.read_bytes())
    assert sorted(r.kind for r in records) == ["matmul", "train", "train"]
    assert {r.label for r in records} == {"Ana, Colab T4"}
    sweep = next(r for r in records if r.kind == "matmul")
    assert [p.n for p in sweep.result.results if p.device == "cpu"] == [256, 512]


def test_saving_to_the_board_twice_adds_nothing_the_second_time(tmp_path):
    runs = nb.NotebookRuns(tmp_path / "out")
    runs.keep("matmul", "matmul", [matmul_payload(LAB)])
    board = f"sqlite:///{tmp_path / 'board.sqlite3'}"
    first = runs.to_board(board, runs.export())
    second = runs.to_board(board, runs.export())
    assert len(first.run_ids) == 1 and (second.run_ids, second.skipped) == ((), 1)
    assert len(open_store(board).list_runs()) == 1


def test_selfcheck_report_is_kept_whole(tmp_path):
    runs = nb.NotebookRuns(tmp_path)
    path = runs.keep_report(_report(PASS, SKIP))
    assert json.loads(path.read_text())["checks"][1]["status"] == SKIP


# ---------------------------------------------------------------- the notebook file


def _cells() -> list[dict]:
    return json.loads(NOTEBOOK.read_text())["cells"]


def test_notebook_has_short_code_cells_each_after_a_sentence_and_no_outputs():
    cells = _cells()
    for before, cell in zip(cells, cells[1:]):
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            assert len(source.splitlines()) <= MAX_CELL_LINES, source
            assert before["cell_type"] == "markdown", f"no sentence before: {source[:60]}"
            assert cell["outputs"] == [] and cell["execution_count"] is None


def test_notebook_follows_the_lectures_order():
    code = "\n".join("".join(c["source"]) for c in _cells() if c["cell_type"] == "code")
    steps = ["pip", "check_devices", "selfcheck", "matmul_race", "classifier_race", "export"]
    positions = [code.index(step) for step in steps]
    assert positions == sorted(positions)


def test_settings_are_colab_form_fields_the_tests_can_fill_in():
    source = "".join(next(c for c in _cells() if "# @param" in "".join(c["source"]))["source"])
    filled = with_settings(source, {"SOURCE": "https://example.org/x.git", "QUICK": True})
    assert 'SOURCE = \'https://example.org/x.git\'  # @param {type:"string"}' in filled
    assert "QUICK = True  # @param" in filled
    with pytest.raises(AssertionError, match="no form field NOPE"):
        with_settings(source, {"NOPE": 1})


def test_the_no_gpu_advice_everywhere_points_to_the_colab_buttons_the_kit_and_the_readme_section():
    """The buttons and `colab-kit` give the notebook and the wheel: no repository address needed (issue 34)."""
    from core.cli import HELP
    from core.platform.devices import GET_A_GPU

    assert "Download for Colab" in GET_A_GPU and "python -m core colab-kit --out DIR" in GET_A_GPU
    assert "colab-kit" in HELP and "No GPU? Use Colab" in GET_A_GPU
    assert "## No GPU? Use Colab" in (ROOT / "README.md").read_text()
