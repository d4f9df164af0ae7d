"""The timing engine: clock/sync order on a (fake) GPU, warm-up, repetition, guards, accuracy."""

from __future__ import annotations

import math

import pytest
import torch

from core.platform import clock, precision

from core.matmul import engine as matmul
from core.matmul import guards, out_of_memory
from core.errors import DashboardError
from core.matmul.config import MatmulOptions
from core.matmul.engine import Operands, measure_product, relative_error, tf32_matmul, time_matmul
from core.matmul.guards import DoesNotFit, check_memory, memory_need
from core.matmul.out_of_memory import RanOutOfMemory
from core.matmul.series import Series, supported_dtypes
from core.platform.units import GIB

CUDA = torch.device("cuda", 0)
CPU = torch.device("cpu")
LAUNCH_S = 1e-6  # host time to queue one fake kernel


class FakeGpu:
    """An asynchronous device: a call only queues work, a synchronize waits for all of it.

    The clock advances by LAUNCH_S per call and by the queued work at each synchronize, so
    reading it without a sync sees only the launches, exactly the classic bug.
    """

    def __init__(self, fake_cuda, monkeypatch) -> None:
        self.t = 0.0
        self.pending = 0.0
        self.events = fake_cuda.events
        monkeypatch.setattr(clock, "read_clock", self.read)
        monkeypatch.setattr(torch.cuda, "synchronize", self.sync)

    def read(self) -> float:
        self.events.append("clock")
        return self.t

    def sync(self, device=None) -> None:
        self.events.append("sync")
        self.t += self.pending
        self.pending = 0.0

    def kernel(self, costs):
        it = iter(costs)

        def call():
            self.events.append("call")
            self.t += LAUNCH_S
            self.pending += next(it)

        return call


@pytest.fixture
def gpu(fake_cuda, monkeypatch) -> FakeGpu:
    return FakeGpu(fake_cuda, monkeypatch)


def _split_at_first_unsynced_read(events: list[str]) -> int:
    """Index where the unsynced measurement starts: the first clock read not right after a sync."""
    return next(i for i, e in enumerate(events) if e == "clock" and events[i - 1] != "sync")


def test_cuda_path_syncs_before_every_clock_read_of_the_true_figure(gpu):
    truth, unsynced = measure_product(gpu.kernel([0.5] + [0.02] * 10_000), CUDA, budget_s=1.0, unsynced=True)
    events = gpu.events
    split = _split_at_first_unsynced_read(events)
    reads = [i for i, e in enumerate(events[:split]) if e == "clock"]
    assert len(reads) >= 2 * truth.samples
    for i in reads:
        assert events[i - 1] == "sync", f"clock read at {i} not preceded by a sync: {events[max(0, i - 3):i + 1]}"
    assert truth.synchronized and truth.median_s == pytest.approx(0.02 + LAUNCH_S)


def test_unsynced_figure_is_the_bug_beside_the_truth(gpu):
    truth, unsynced = measure_product(gpu.kernel([0.5] + [0.02] * 10_000), CUDA, budget_s=1.0, unsynced=True)
    assert unsynced is not None and not unsynced.synchronized
    assert unsynced.calls_per_block == truth.calls_per_block  # same number of calls per reading
    assert unsynced.median_s == pytest.approx(LAUNCH_S)  # only the launches: "the GPU is free"
    assert unsynced.median_s < truth.median_s / 1000
    events = gpu.events
    start = _split_at_first_unsynced_read(events)
    stop = next(i for i in range(start + 1, len(events)) if events[i] == "clock")
    assert "sync" not in events[start:stop] and events[stop - 1] == "call"  # read right after queuing
    assert events[-1] == "sync"  # drained afterwards, outside the timed region


def test_unsynced_figure_uses_the_true_block_size_not_a_million_calls(gpu):
    # a slow kernel: the unsynced probe would be 1 us and ask for 10,000 calls per block
    truth, unsynced = measure_product(gpu.kernel([2.0] * 100), CUDA, budget_s=5.0, unsynced=True)
    assert truth.calls_per_block == 1 and unsynced.calls_per_block == 1
    assert gpu.events.count("call") < 20


def test_warm_up_is_excluded(gpu):
    truth, _ = measure_product(gpu.kernel([1.0] + [0.02] * 10_000), CUDA, budget_s=2.0, unsynced=False)
    assert truth.first_call_s == pytest.approx(1.0 + LAUNCH_S)
    assert max(truth.times_s) == pytest.approx(0.02 + LAUNCH_S)


def test_small_products_are_batched_and_huge_ones_timed_once(gpu):
    small, _ = measure_product(gpu.kernel([1e-4] * 100_000), CUDA, budget_s=0.5, unsynced=False)
    assert small.calls_per_block == 100 and small.samples >= 5
    huge, _ = measure_product(gpu.kernel([30.0, 13.0, 13.0]), CUDA, budget_s=5.0, unsynced=False)
    assert huge.calls_per_block == 1 and huge.samples == 1 and huge.median_s == pytest.approx(13.0 + LAUNCH_S)


def test_cpu_has_no_unsynced_figure_and_no_copies():
    r = time_matmul(Series("cpu", "float32", threads=1), 32, MatmulOptions(budget_s=0.05, end_to_end=True))
    assert r.unsynced_s is None
    assert r.h2d_s == 0.0 and r.d2h_s == 0.0 and r.end_to_end_s == r.median_s
    assert r.threads == 1 and r.tf32 is None


def test_real_cpu_result_is_consistent():
    r = time_matmul(Series("cpu", "float32", threads=1), 64, MatmulOptions(budget_s=0.1))
    assert r.samples >= 1 and 0 < r.median_s < 0.1
    assert r.gflops == pytest.approx(2 * 64**3 / r.median_s / 1e9)
    assert r.min_s <= r.median_s <= r.max_s and len(r.times_s) == r.samples
    assert r.rel_error is not None and r.rel_error < 1e-5
    row = r.to_json()
    for key in ("device", "n", "dtype", "median_s", "iqr_s", "samples", "gflops", "unsynced_s", "rel_error"):
        assert key in row
    assert row["device"] == "cpu" and row["n"] == 64 and row["unsynced_s"] is None


def test_reduced_precision_shows_in_the_error():
    opts = MatmulOptions(budget_s=0.05)
    errors = {dt: time_matmul(Series("cpu", dt, threads=1), 128, opts).rel_error
              for dt in ("float64", "float32", "bfloat16")}
    assert errors["float64"] < 1e-12 < errors["float32"] < 1e-5 < errors["bfloat16"] < 0.05


def test_inputs_are_standard_normal_made_on_the_device():
    ops = matmul.make_operands(CPU, torch.float32, 256, seed=1, end_to_end=False)
    assert ops.a.device.type == "cpu" and ops.host is None
    assert abs(ops.a.mean().item()) < 0.02 and abs(ops.a.std().item() - 1) < 0.02
    assert not torch.equal(ops.a, ops.b)
    again = matmul.make_operands(CPU, torch.float32, 256, seed=1, end_to_end=False)
    assert torch.equal(ops.a, again.a)  # same seed, same matrices


def test_relative_error_catches_a_wrong_product():
    ops = matmul.make_operands(CPU, torch.float64, 64, seed=0, end_to_end=False)
    matmul.product(ops)()
    assert relative_error(ops) < 1e-12
    ops.c.zero_()
    assert relative_error(ops) == pytest.approx(1.0)


def test_copies_are_timed_separately():
    a_h, b_h = torch.randn(64, 64), torch.randn(64, 64)
    ops = Operands(torch.empty(64, 64), torch.empty(64, 64), torch.randn(64, 64), (a_h, b_h, torch.empty(64, 64)))
    copy_in, copy_out = matmul.measure_copies(ops, CPU, budget_s=0.05)
    assert torch.equal(ops.a, a_h) and torch.equal(ops.host[2], ops.c)
    assert copy_in.samples >= 1 and copy_out.samples >= 1 and copy_in.median_s > 0 and copy_out.median_s > 0


def test_memory_refusal_names_needed_and_free(monkeypatch):
    monkeypatch.setattr(guards, "free_device_bytes", lambda device: 1 * GIB)
    monkeypatch.setattr(matmul, "make_operands", lambda *a, **k: pytest.fail("allocated before the memory check"))
    with pytest.raises(DoesNotFit) as err:
        time_matmul(Series("cpu", "float32"), 16384)
    message = str(err.value)
    assert "n=16384 float32 on cpu needs" in message and "inputs 2 GiB" in message
    assert "only 1 GiB is free" in message


def test_memory_need_counts_operands_workspace_and_host_copies(fake_cuda):
    need = memory_need(CUDA, "float32", 8192, end_to_end=True)
    assert need.inputs_bytes == 2 * 8192**2 * 4 and need.output_bytes == 8192**2 * 4
    assert need.workspace_bytes >= guards.WORKSPACE_MIN_BYTES
    assert need.host_bytes >= 3 * 8192**2 * 4  # host copies for end to end
    assert need.device_bytes == need.inputs_bytes + need.output_bytes + need.workspace_bytes


def test_gpu_size_refused_when_the_host_cannot_hold_the_copies(fake_cuda, monkeypatch):
    monkeypatch.setattr(guards, "free_device_bytes", lambda d: 60 * GIB if d.type == "cuda" else 1 * GIB)
    check_memory(memory_need(CUDA, "float32", 16384, end_to_end=False))
    with pytest.raises(DoesNotFit, match="turn off end to end"):
        check_memory(memory_need(CUDA, "float32", 16384, end_to_end=True))


def test_out_of_memory_is_caught_and_memory_released(monkeypatch):
    released = []

    def explode(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(matmul, "make_operands", explode)
    monkeypatch.setattr(out_of_memory, "release_device_memory", released.append)
    with pytest.raises(RanOutOfMemory, match="n=512 float32 on cpu ran out of memory .*Tried to allocate"):
        time_matmul(Series("cpu", "float32"), 512)
    assert released == [CPU]


def test_cpu_allocator_failure_counts_as_out_of_memory():
    assert out_of_memory.is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to ..."))
    assert not out_of_memory.is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))


def test_other_errors_are_not_swallowed(monkeypatch):
    monkeypatch.setattr(matmul, "make_operands", lambda *a, **k: (_ for _ in ()).throw(ValueError("bug")))
    with pytest.raises(ValueError, match="bug"):
        time_matmul(Series("cpu", "float32"), 64)


def test_tf32_is_set_and_restored():
    before = precision.tf32_enabled()
    with tf32_matmul(not before) as in_effect:
        assert in_effect is (not before) and precision.tf32_enabled() is (not before)
    assert precision.tf32_enabled() is before
    with tf32_matmul(None) as in_effect:
        assert in_effect is None


def test_tf32_is_never_in_effect_on_a_gpu_without_it(gpu_model):
    gpu_model("T4")
    before = precision.tf32_enabled()
    with tf32_matmul(True, CUDA) as in_effect:
        assert in_effect is False and precision.tf32_enabled() is before  # nothing changed, nothing held


def test_supported_dtypes(fake_cuda, monkeypatch):
    assert supported_dtypes(CPU) == ("float32", "float64", "float16", "bfloat16")
    assert "bfloat16" in supported_dtypes(CUDA)  # the fake is compute capability 9.0
    fake_cuda.props.major = 7
    assert "bfloat16" not in supported_dtypes(CUDA)
    assert "float64" not in supported_dtypes(torch.device("mps"))


def test_bad_dtype_and_size_are_refused():
    with pytest.raises(DashboardError, match="unknown dtype 'int8'"):
        time_matmul(Series("cpu", "int8"), 64)
    with pytest.raises(DashboardError, match="at least 1"):
        time_matmul(Series("cpu", "float32"), 0)


def test_labels_say_what_changes_the_speed():
    assert Series("cpu", "float32", threads=1).label == "cpu float32 1 thread"
    assert Series("cpu", "float32", threads=2).label == "cpu float32 2 threads"
    assert Series("cuda:0", "float32", tf32=True).label == "cuda:0 float32 TF32 on"
    assert Series("cuda:0", "bfloat16").label == "cuda:0 bfloat16"


def test_probe_times_one_warm_product():
    t = matmul.probe_seconds(Series("cpu", "float32", threads=1), 64)
    assert 0 < t < 1.0 and math.isfinite(t)  # loose: the machine may be busy


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a real CUDA device")
def test_cuda_events_agree_with_the_synchronized_clock():
    ops = matmul.make_operands(CUDA, torch.float32, 2048, seed=0, end_to_end=False)
    fn = matmul.product(ops)
    truth, unsynced = measure_product(fn, CUDA, budget_s=1.0, unsynced=True)
    events = matmul.cuda_event_seconds(fn, CUDA, truth.calls_per_block)
    assert events == pytest.approx(truth.median_s, rel=0.1)
    assert unsynced.median_s < truth.median_s / 10
