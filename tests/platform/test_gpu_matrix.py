"""What a first run on a real GPU would meet, played on the fake matrix (T4, A100 40/80 GB, H100)."""

from __future__ import annotations

import pytest
import torch

from core import notebook
from core.matmul import out_of_memory
from core.matmul.config import SweepConfig
from core.matmul.plan import plan_series
from core.platform import device_lock, jobs
from tests.conftest import GIB, GPU_MODELS, FakeCuda, GpuModel, install_fake_cuda

CUDA = torch.device("cuda", 0)


def test_the_sweep_planner_plans_tf32_and_bfloat16_only_where_the_gpu_has_them(any_gpu):
    plan = plan_series(SweepConfig(devices=("cpu", "cuda"), dtypes=("float32", "bfloat16"), tf32=(False, True),
                                   threads=(1,)))
    gpu = [s.label for s in plan.series if s.is_gpu]
    if any_gpu.model.has_tf32:
        assert gpu == ["cuda:0 float32 TF32 off", "cuda:0 float32 TF32 on", "cuda:0 bfloat16"]
    else:  # a T4: TF32 on would repeat TF32 off under a false name, bfloat16 is emulated
        assert gpu == ["cuda:0 float32 TF32 off"]
        assert any("bfloat16 is not supported on cuda:0" in n for n in plan.notes)


def test_tf32_alone_on_a_t4_times_plain_float32_and_says_so(gpu_model):
    gpu_model("T4")
    plan = plan_series(SweepConfig(devices=("cuda",), tf32=(True,)))
    assert [(s.label, s.tf32) for s in plan.series] == [("cuda:0 float32 TF32 off", False)]
    assert any(n.startswith("TF32 on: cuda:0 has no TF32 tensor cores") for n in plan.notes)  # not silently (issue 33)


@pytest.mark.parametrize("name", list(GPU_MODELS))
def test_the_tf32_choice_is_offered_only_where_it_changes_something(gpu_model, name):
    from core.matmul.plan import tf32_unavailable

    model = gpu_model(name).model
    reason = tf32_unavailable(["cuda:0", "cpu"])
    assert (reason is None) == model.has_tf32
    assert reason is None or "cuda:0 has no TF32 tensor cores" in reason
    assert "no CUDA GPU is among the devices" in tf32_unavailable(["cpu"])


def test_the_notebook_plan_on_each_gpu(any_gpu):
    """Every series the plan asks for is one the sweep times on this GPU, every bfloat16 series has its partner on
    the other device, and its largest size fits the budget by the GPU's float32 peak at half its rate (issue 33)."""
    from core.results.machine import Gpu
    from core.roofline import theory

    props = any_gpu.props
    gpu = Gpu(index=0, name=props.name, compute_capability=f"{props.major}.{props.minor}")  # the device check's
    for quick in (False, True):
        plan = notebook.plan_for(has_gpu=True, quick=quick, gpu=gpu)
        series = plan_series(plan.sweep).series
        assert {s.tf32 for s in series if s.is_gpu and s.dtype == "float32"} == set(plan.sweep.tf32)
        assert {s.is_gpu for s in series if s.dtype == "bfloat16"} in (set(), {True, False})
        assert all(any(s.dtype == d and s.is_gpu for s in series) for d in plan.sweep.dtypes)
        peak = theory.cuda_peak(0, "float32").gflops
        assert peak is not None and 2 * 2 * max(plan.sweep.sizes) ** 3 / (peak * 1e9 / 2) <= plan.sweep.options.budget_s
        assert plan.quick is quick


def test_cublas_allocation_failures_are_out_of_memory():
    for text in ("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
                 "CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"):
        assert out_of_memory.is_out_of_memory(RuntimeError(text))
    assert not out_of_memory.is_out_of_memory(RuntimeError("CUBLAS_STATUS_EXECUTION_FAILED"))


def test_cublas_not_initialized_after_a_sticky_error_names_the_dead_context(gpu_model, monkeypatch):
    """Issue 33: after a device-side assert cuBLAS cannot create its handle either; read as out of memory, every
    later size said "choose a smaller size" while the context was dead."""
    from core.platform.devices import DeadContext

    fake = gpu_model("T4")
    monkeypatch.setattr(out_of_memory, "release_device_memory", lambda device: None)
    text = "CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"

    def fails() -> None:
        raise RuntimeError(text)
    torch.cuda.synchronize(CUDA)  # the process computes on the GPU: it has a context there
    with pytest.raises(out_of_memory.RanOutOfMemory):  # a full GPU: out of memory, as before
        out_of_memory.releasing_on_oom(fails, [CUDA], "n=8192 float32")
    fake.raise_later()
    with pytest.raises(RuntimeError, match="device-side assert"):
        torch.cuda.synchronize(CUDA)
    with pytest.raises(DeadContext, match=r"cuda:0 was broken by an earlier error \(CUDA error: device-side assert"
                                          r" triggered\).*not a lack of memory. Restart"):
        out_of_memory.releasing_on_oom(fails, [CUDA], "n=8192 float32")


def test_a_cublas_allocation_failure_skips_the_size(gpu_model, monkeypatch):
    gpu_model("T4")
    released = []
    monkeypatch.setattr(out_of_memory, "release_device_memory", released.append)

    def fails() -> None:
        raise RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")

    with pytest.raises(out_of_memory.RanOutOfMemory, match="n=8192 float32 on cuda:0 ran out of memory"):
        out_of_memory.releasing_on_oom(fails, [CUDA], "n=8192 float32")
    assert released == [CUDA]


def test_a_job_empties_the_gpu_cache_before_it_lets_the_gpu_go(gpu_model, monkeypatch):
    gpu_model("A100-80GB", count=2)
    order = []
    real_hold = device_lock.hold_devices

    class Watched:
        def __init__(self, cm):
            self.cm = cm

        def __enter__(self):
            return self.cm.__enter__()

        def __exit__(self, *exc):
            order.append("unlock")
            return self.cm.__exit__(*exc)

    monkeypatch.setattr(jobs, "hold_devices", lambda *a, **k: Watched(real_hold(*a, **k)))
    monkeypatch.setattr(jobs, "release_device_memory", lambda d: order.append(f"empty {d}"))
    with jobs.run_job(["cpu", "cuda:1"], label="test"):
        order.append("work")
    assert order == ["work", "empty cuda:1", "unlock"]


# The data sheets' dense peaks in TFLOP/s (T4 datasheet; A100 and H100 whitepapers): the table must give them
DATASHEET_TFLOPS = {
    "T4": {"float32": 8.1, "float16": 65, "float64": 0.25},
    "A100-40GB": {"float32": 19.5, "tf32": 156, "bfloat16": 312, "float16": 312, "float64": 19.5},
    "A100-80GB": {"float32": 19.5, "tf32": 156, "bfloat16": 312, "float16": 312, "float64": 19.5},
    "H100": {"float32": 67, "tf32": 495, "bfloat16": 989, "float16": 989, "float64": 67},
}


def test_theoretical_peaks_follow_the_architecture(any_gpu):
    from core.roofline import theory

    name = next(k for k, m in GPU_MODELS.items() if m == any_gpu.model)
    for key, tflops in DATASHEET_TFLOPS[name].items():
        dtype, tf32 = ("float32", True) if key == "tf32" else (key, False)
        peak = theory.cuda_peak(0, dtype, tf32=tf32)
        assert peak.gflops is not None, peak.note
        # H100's tensor figures are quoted at 1830 MHz, below the 1980 MHz boost clock torch reports
        high = 1.09 if name == "H100" and key not in ("float32", "float64") else 1.02
        assert tflops * 0.98 <= peak.gflops / 1e3 <= tflops * high, (key, peak)
    if not any_gpu.model.has_bf16:  # a T4: no bfloat16 or TF32 line rather than an invented one
        for dtype, tf32 in (("bfloat16", False), ("float32", True)):
            peak = theory.cuda_peak(0, dtype, tf32=tf32)
            assert peak.gflops is None and "unknown" in peak.note


CONSUMER = {  # GeForce whitepaper tables (dense, float32 accumulate) beside a datacenter card of the same chip
    GpuModel("NVIDIA GeForce RTX 3090", 8, 6, 24 * GIB, 82, 1_695_000, has_bf16=True, has_tf32=True):
        {"float32": 35.6, "tf32": 35.6, "bfloat16": 71, "float16": 71},
    GpuModel("NVIDIA GeForce RTX 4090", 8, 9, 24 * GIB, 128, 2_520_000, has_bf16=True, has_tf32=True):
        {"float32": 82.6, "tf32": 82.6, "bfloat16": 165.2, "float16": 165.2},
    GpuModel("NVIDIA A10", 8, 6, 24 * GIB, 72, 1_695_000, has_bf16=True, has_tf32=True):
        {"float32": 31.2, "tf32": 62.5, "bfloat16": 125, "float16": 125},
}


@pytest.mark.parametrize("model", list(CONSUMER), ids=lambda m: m.name)
def test_a_geforce_card_runs_tf32_and_bfloat16_at_half_the_datacenter_rate(model, monkeypatch):
    """Issue 33: the RTX 30/40 tensor lines were the A10's / L4's rate, twice what a GeForce card does."""
    from core.roofline import theory

    install_fake_cuda(monkeypatch, FakeCuda(model=model))
    for key, tflops in CONSUMER[model].items():
        dtype, tf32 = ("float32", True) if key == "tf32" else (key, False)
        peak = theory.cuda_peak(0, dtype, tf32=tf32)
        assert peak.gflops is not None and tflops * 0.97 <= peak.gflops / 1e3 <= tflops * 1.03, (key, peak)
        assert ("GeForce" in peak.note) == ("GeForce" in model.name and key != "float32"), peak.note


def test_run_records_create_no_cuda_context_on_any_gpu(gpu_model):
    from core.platform.hardware import inspect_machine

    fake = gpu_model("A100-80GB", count=8)
    info = inspect_machine()  # what every sweep, roofline and saved run records
    assert fake.contexts == set() and [g.total_memory_bytes for g in info.gpus] == [80 * 2**30] * 8
    assert all(g.free_memory_bytes is None for g in info.gpus)
    asked = inspect_machine(free_memory=True)  # the Hardware page, `core devices`, the self-check: through NVML
    assert fake.contexts == set() and [g.free_memory_bytes for g in asked.gpus] == [fake.free] * 8  # (issue 33)


# ---------------------------------------------------------------- a diverging run (issue 24, item 1)


@pytest.mark.parametrize("preset", ["minibatch", "lecture"])
def test_the_highest_learning_rate_a_user_may_pick_gives_the_diverged_message(preset):
    from core.classifier.model import MAX_LR, preset_config
    from core.classifier.training import features_for, train
    from core.errors import DashboardError
    from tests.review_fixtures import toy_reviews

    # on the CPU the sigmoid saturates long before any NaN: the loss sat at ~48 and the run "finished"
    config = preset_config(preset, epochs=6, device="cpu", hidden=8, weighting="binary", ngrams=1, lr=MAX_LR)
    with pytest.raises(DashboardError, match="training diverged at learning rate 100"):
        train(features_for(toy_reviews(60), config), config)


def test_on_a_gpu_a_diverging_run_never_fires_the_sticky_device_assert(gpu_model, monkeypatch):
    """CUDA's BCELoss checks its input with a device-side assert: NaN fails it at the next synchronize, for good."""
    from core.classifier.model import ClassifierConfig
    from core.classifier.training import features_for, train
    from core.errors import DashboardError
    from tests.review_fixtures import keep_cuda_on_cpu, toy_reviews

    fake = gpu_model("T4")
    keep_cuda_on_cpu(monkeypatch)
    real_bce = torch.nn.functional.binary_cross_entropy

    def cuda_bce(p, target, *args, **kwargs):
        if torch.isnan(p.detach()).any() or ((p < 0) | (p > 1)).any():
            fake.raise_later()  # the kernel's assert: nothing raises here, the next synchronize does
            return real_bce(p.detach().nan_to_num(0.5).clamp(0, 1), target, *args, **kwargs)
        return real_bce(p, target, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "binary_cross_entropy", cuda_bce)
    monkeypatch.setattr("core.classifier.model.MAX_LR", 1e40)
    config = ClassifierConfig(hidden=8, lr=1e30, batch_size=4, epochs=3, weighting="binary", ngrams=1, device="cuda")
    with pytest.raises(DashboardError, match="training diverged"):
        train(features_for(toy_reviews(60), ClassifierConfig(**{**config.to_dict(), "device": "cpu"})), config)
    assert fake.sticky_error is None and fake.pending_error is None
