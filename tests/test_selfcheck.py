"""The self-check: running a list of named checks, skipping GPU ones honestly, judging GPU results."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from core import selfcheck
from core.errors import DashboardError
from core.matmul.engine import measured_point
from core.matmul.series import Series
from core.cli import main
from core.selfcheck import (
    FAIL, PASS, SKIP, Check, CheckResult, Context, alternate, judge_gpu_sweep, run_checks, select,
)
from core.matmul.config import SweepConfig
from core.matmul.plan import plan_series
from core.matmul.report import sweep_of
from core.platform.timing import Measurement

CPU = Series("cpu", "float32", threads=2)
FP32 = Series("cuda:0", "float32", tf32=False)
TF32 = Series("cuda:0", "float32", tf32=True)
BF16 = Series("cuda:0", "bfloat16")


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def _result(series, n, seconds, rel_error, unsynced_s=None):
    m = Measurement((seconds,) * 3, 1, seconds)
    u = Measurement((unsynced_s,), 1, 0.0, synchronized=False) if unsynced_s is not None else None
    return measured_point(series, n, m, u, None, None, rel_error, series.threads, series.tf32)


def _gpu_sweep(errors=None, unsynced=1e-5, sizes=selfcheck.GPU_SIZES, skipped=()):
    errors = {"fp32": 1e-6, "tf32": 3e-4, "bf16": 3e-3, **(errors or {})}
    rows = []
    for n in sizes:
        rows.append(_result(CPU, n, n**3 / 1e11, 1e-7))
        rows.append(_result(FP32, n, 1e-4 + n**3 / 5e13, errors["fp32"], unsynced))
        rows.append(_result(TF32, n, 1e-4 + n**3 / 2e14, errors["tf32"], unsynced))
        rows.append(_result(BF16, n, 1e-4 + n**3 / 5e14, errors["bf16"], unsynced))
    return sweep_of(SweepConfig(sizes=tuple(sizes)), (CPU, FP32, TF32, BF16), rows, skipped, machine={})


def test_outcomes_pass_fail_crash_and_skip_without_a_gpu(no_gpu):
    seen = []
    checks = [
        Check("good", lambda ctx: CheckResult(True, "fine", {"x": 1})),
        Check("bad", lambda ctx: CheckResult(False, "off by 7%")),
        Check("crash", lambda ctx: 1 / 0),
        Check("gpu", lambda ctx: pytest.fail("ran a CUDA check without CUDA"), needs_cuda=True),
    ]
    report = run_checks(checks, on_outcome=seen.append)
    assert [(o.name, o.status) for o in report.outcomes] == [("good", PASS), ("bad", FAIL), ("crash", FAIL),
                                                             ("gpu", SKIP)]
    assert seen == list(report.outcomes)
    assert "ZeroDivisionError" in report.outcomes[2].detail and "needs a CUDA GPU" in report.outcomes[3].detail
    assert not report.passed and report.skipped == ["gpu"]
    obj = json.loads(json.dumps(report.to_json()))
    assert obj["kind"] == "selfcheck" and obj["passed"] is False and obj["checks"][0]["data"] == {"x": 1}
    assert "cpu" in obj["machine"]


def test_skips_alone_do_not_fail(no_gpu):
    report = run_checks([Check("gpu", lambda ctx: CheckResult(True, ""), needs_cuda=True)])
    assert report.passed and report.skipped == ["gpu"]


def test_cuda_checks_run_where_cuda_is_visible(fake_cuda):
    devices = []
    run_checks([Check("gpu", lambda ctx: devices.append(ctx.cuda) or CheckResult(True, ""), needs_cuda=True)])
    assert devices == [torch.device("cuda", 0)]


def test_the_check_list_is_named_and_selectable():
    names = [c.name for c in selfcheck.CHECKS]
    assert len(names) == len(set(names))
    assert {c.name for c in selfcheck.CHECKS if c.needs_cuda} == {"gpu-sweep", "cuda-events", "unsynced-far-below",
                                                                   "train-same-seed"}
    assert [c.name for c in select(["cuda-events", "devices"])] == ["devices", "cuda-events"]  # listed order
    with pytest.raises(DashboardError, match="unknown check 'nope'"):
        select(["nope"])


def test_cpu_checks_pass_here(no_gpu, monkeypatch):
    monkeypatch.setattr(selfcheck, "CPU_SIZES", (32, 64, 128))  # the real list takes about 5 s
    report = run_checks(select(["devices", "cpu-sweep"]))
    assert report.passed, report.outcomes
    rows = report.outcomes[1].data["rows"]
    assert [r["n"] for r in rows] == [32, 64, 128]


def test_agreement_rows_compare_like_with_like():
    rows = selfcheck.agreement_with_torch_benchmark(64, threads=1, rounds=2, budget_s=0.05)
    assert len(rows) == 2
    for r in rows:
        assert r["threads"] == 1 and r["engine_s"] > 0 and r["torch_s"] > 0
        assert r["ratio"] == pytest.approx(r["engine_s"] / r["torch_s"])


def test_gpu_sweep_judged_good():
    result = judge_gpu_sweep(_gpu_sweep(), capability_major=9)
    assert result.passed, result.detail
    assert "n=8192" in result.detail and "GFLOP/s" in result.detail and "beats" in result.detail


@pytest.mark.parametrize("errors, capability, message", [
    ({"tf32": 1e-6}, 9, "TF32 on changed nothing"),
    ({"fp32": 1e-3}, 9, "float32 (TF32 off) relative error"),
    ({"bf16": 0.2}, 9, "bfloat16 relative error"),
    ({"fp32": None}, 9, "has no relative error figure"),  # reported, not a TypeError
])
def test_gpu_sweep_judged_bad(errors, capability, message):
    result = judge_gpu_sweep(_gpu_sweep(errors), capability)
    assert not result.passed and message in result.detail


def _t4_sweep(tf32_recorded=False):
    """What a T4 runs: the CPU and float32 only (no TF32, no bfloat16)."""
    fp32 = Series("cuda:0", "float32", tf32=False)
    rows = []
    for n in selfcheck.GPU_SIZES:
        rows.append(_result(CPU, n, n**3 / 1e11, 1e-7))
        point = _result(fp32, n, 1e-4 + n**3 / 4e12, 1e-6, 1e-5)
        rows.append(dataclasses.replace(point, tf32=True) if tf32_recorded else point)
    return sweep_of(SweepConfig(sizes=selfcheck.GPU_SIZES), (CPU, fp32), rows, (), machine={})


def test_a_gpu_without_tf32_or_bfloat16_is_judged_on_float32_alone():
    result = judge_gpu_sweep(_t4_sweep(), capability_major=7)
    assert result.passed, result.detail  # was "a GPU series is missing at the largest size"
    assert judge_gpu_sweep(_gpu_sweep({"tf32": 1e-6}), capability_major=9).passed is False  # Ampere+ still asked


def test_tf32_recorded_on_a_gpu_without_it_fails():
    result = judge_gpu_sweep(_t4_sweep(tf32_recorded=True), capability_major=7)
    assert not result.passed and "has none" in result.detail


def test_the_gpu_sweep_asks_only_for_what_the_gpu_has(any_gpu):
    config = selfcheck.gpu_sweep_config(torch.device("cuda", 0))
    labels = [s.label for s in plan_series(config).series if s.is_gpu]
    if any_gpu.model.has_bf16:
        assert labels == ["cuda:0 float32 TF32 off", "cuda:0 float32 TF32 on", "cuda:0 bfloat16"]
    else:  # a T4
        assert labels == ["cuda:0 float32 TF32 off"] and config.dtypes == ("float32",) and config.tf32 == (False,)


def _consistent_sweep(config, hooks=None):
    """A sweep with plausible figures for exactly the series planned on the fake GPU."""
    series = plan_series(config).series
    errors = {"float32": 1e-6, "bfloat16": 3e-3}
    rows = []
    for n in config.sizes:
        for s in series:
            if not s.is_gpu:
                rows.append(_result(s, n, n**3 / 1e11, 1e-7))
                continue
            error = 3e-4 if s.tf32 else errors[s.dtype]
            rows.append(_result(s, n, 1e-4 + 2 * n**3 / (2e14 if s.tf32 or s.dtype == "bfloat16" else 5e13), error,
                                1e-5))
    return sweep_of(config, series, rows, (), machine={})


def test_selfcheck_json_on_each_faked_gpu_plans_what_it_has_and_passes_its_own_judge(any_gpu, monkeypatch,
                                                                                       capsys, tmp_path):
    monkeypatch.setattr(selfcheck, "run_sweep", _consistent_sweep)
    code = main(["selfcheck", "--json", "--only", "gpu-sweep,unsynced-far-below", "--out", str(tmp_path)])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["passed"], report["checks"]
    series = report["checks"][0]["data"]["sweep"]["settings"]["series"]
    has_ampere = any_gpu.model.has_bf16
    assert ("cuda:0 bfloat16" in series) is has_ampere and ("cuda:0 float32 TF32 on" in series) is has_ampere
    points = report["checks"][0]["data"]["sweep"]["results"]
    assert has_ampere or not any(p["tf32"] for p in points)  # never tf32=True on a GPU without it


def test_quick_sizes_shrink_the_gpu_checks(any_gpu, monkeypatch):
    seen = []
    monkeypatch.setattr(selfcheck, "run_sweep",
                        lambda config, hooks=None: seen.append(config) or _consistent_sweep(config))
    report = run_checks(select(["gpu-sweep"]), sizes=selfcheck.QUICK)
    assert report.passed, report.outcomes
    assert max(seen[0].sizes) == 1024 and seen[0].options.budget_s < selfcheck.GPU_BUDGET_S


def test_clock_and_events_take_turns():
    order = []
    clock, events = alternate(lambda: order.append("clock") or 1.0, lambda: order.append("events") or 2.0, 4)
    assert clock == [1.0] * 4 and events == [2.0] * 4
    assert order == ["clock", "events", "events", "clock", "clock", "events", "events", "clock"]


def test_a_gpu_sweep_that_stops_short_fails():
    result = judge_gpu_sweep(_gpu_sweep(sizes=(256, 512)), capability_major=9)
    assert not result.passed and "reached n=512, not 8192" in result.detail


def test_unsynced_far_below_the_truth():
    ctx = Context(cuda=torch.device("cuda", 0), cache={"gpu_sweep": _gpu_sweep(unsynced=1e-5)})
    assert selfcheck.check_unsynced_far_below(ctx).passed
    ctx.cache["gpu_sweep"] = _gpu_sweep(unsynced=5e-3)  # about the true time of TF32 at 8192: not "far below"
    result = selfcheck.check_unsynced_far_below(ctx)
    assert not result.passed and "cuda:0 float32 TF32 on" in result.detail


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a real CUDA device")
def test_cuda_events_check_on_a_real_gpu():
    result = selfcheck.check_cuda_events(Context(cuda=torch.device("cuda", 0)))
    assert result.passed, result.detail


def test_training_check_compares_two_runs_from_one_seed():
    # on the CPU against itself the same seed must give identical losses; on a GPU the check reads the same numbers
    result = selfcheck.check_train_same_seed(Context(cuda=torch.device("cpu")))
    assert result.passed, result.detail
    assert result.data["max_loss_difference"] == 0.0
    assert len(result.data["train_losses"][0]) == 2 == len(result.data["test_losses"][1])
    assert "train-same-seed" in [c.name for c in selfcheck.CHECKS]
