"""One GPU's job does not disturb another's in the same process (issue 33, items 4 and 5), on faked GPUs.

- torch's `empty_cache` frees and waits for every GPU of the process: a job ending on cuda:1 leaves it to
  the last GPU job of the process while another thread times cuda:0;
- every CUDA job holds its float32 precision: a job on cuda:1 never runs under the "TF32 on" of a sweep
  timing cuda:0, and a job's own TF32 block still gets its setting;
- a job synchronizes its GPUs before it lets them go (a Stop leaves kernels queued), but only where this
  process has a context (a launcher holding its ranks' GPUs creates none);
- locks are taken in the order of the GPUs' physical ids, the same in every process.
"""

from __future__ import annotations

import threading

import pytest
import torch

from core.matmul.engine import tf32_matmul
from core.platform import device_lock, jobs, memory, precision

WAIT_S = 5.0


@pytest.fixture(autouse=True)
def default_precision():
    yield
    if precision.uses_new_api():
        torch.backends.cuda.matmul.fp32_precision = "none"
    torch.set_float32_matmul_precision("highest")


def _in_thread(body) -> tuple[threading.Thread, threading.Event, threading.Event]:
    """`body` inside a job on cuda:0 in another thread; returns (thread, inside, may_leave)."""
    inside, may_leave = threading.Event(), threading.Event()

    def run() -> None:
        with jobs.run_job(["cuda:0"], label="timing cuda:0"), body():
            inside.set()
            may_leave.wait(WAIT_S)

    thread = threading.Thread(target=run)
    thread.start()
    assert inside.wait(WAIT_S)
    return thread, inside, may_leave


def test_a_job_ending_leaves_the_cache_alone_while_another_gpu_is_timed(gpu_model, monkeypatch):
    gpu_model("A100-80GB", count=2)
    emptied: list[str] = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append("empty"))
    from contextlib import nullcontext

    thread, _, may_leave = _in_thread(nullcontext)
    with jobs.run_job(["cuda:1"], label="training on cuda:1"):
        pass
    assert emptied == [], "the end of the cuda:1 job emptied the cache under the job timing cuda:0"
    with jobs.run_job(["cpu"], label="a CPU job"):  # a job without a GPU leaves the put-off release alone too
        pass
    assert emptied == []
    may_leave.set()
    thread.join(WAIT_S)
    assert emptied == ["empty"]  # the last GPU job of the process did it
    with jobs.run_job(["cuda:1"], label="alone"):
        pass
    assert emptied == ["empty", "empty"]


def test_an_out_of_memory_release_waits_for_no_one_but_is_put_off_while_another_gpu_is_timed(gpu_model, monkeypatch):
    gpu_model("H100", count=2)
    emptied: list[str] = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append("empty"))
    from contextlib import nullcontext

    thread, _, may_leave = _in_thread(nullcontext)
    with jobs.run_job(["cuda:1"], label="sweep on cuda:1"):
        assert memory.release_device_memory(torch.device("cuda", 1)) is False
        assert emptied == []
    may_leave.set()
    thread.join(WAIT_S)
    assert emptied == ["empty"]


def test_a_gpu_job_never_inherits_tf32_from_a_sweep_on_another_gpu(gpu_model):
    gpu_model("A100-80GB", count=2)
    seen: list[bool] = []
    started = threading.Event()

    thread, _, may_leave = _in_thread(lambda: tf32_matmul(True, torch.device("cuda", 0)))  # a "TF32 on" series

    def training() -> None:  # float32 on cuda:1, asking nothing about TF32
        with jobs.run_job(["cuda:1"], label="training on cuda:1"):
            started.set()
            seen.append(precision.tf32_enabled())

    other = threading.Thread(target=training)
    other.start()
    assert not started.wait(0.3) or seen == [False], "the cuda:1 job ran under the cuda:0 sweep's TF32"
    may_leave.set()
    thread.join(WAIT_S)
    other.join(WAIT_S)
    assert seen == [False] and precision.tf32_enabled() is False


def test_jobs_wanting_ieee_share_it_and_a_jobs_own_tf32_block_gets_tf32(gpu_model):
    gpu_model("A100-80GB", count=2)
    from contextlib import nullcontext

    thread, _, may_leave = _in_thread(nullcontext)  # a job holding IEEE on cuda:0
    done = threading.Event()

    def sweep() -> None:
        with jobs.run_job(["cuda:1"], label="sweep"):
            done.set()  # did not wait for the cuda:0 job: both want IEEE
            assert precision.tf32_enabled() is False
            with tf32_matmul(False, torch.device("cuda", 1)):
                assert precision.tf32_enabled() is False
            with tf32_matmul(True, torch.device("cuda", 1)):  # waits for the cuda:0 job's IEEE
                seen.append(precision.tf32_enabled())
            seen.append(precision.tf32_enabled())

    seen: list[bool] = []
    other = threading.Thread(target=sweep)
    other.start()
    assert done.wait(WAIT_S)
    assert seen == []  # its TF32 block waits while the cuda:0 job holds IEEE
    may_leave.set()
    thread.join(WAIT_S)
    other.join(WAIT_S)
    assert seen == [True, False] and precision.tf32_enabled() is False


def test_a_job_synchronizes_its_gpus_before_it_lets_them_go(gpu_model, monkeypatch):
    fake = gpu_model("T4", count=2)
    order: list[str] = []
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
    real_sync = torch.cuda.synchronize
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: (order.append(f"sync {device}"),
                                                                        real_sync(device))[1])
    fake.contexts.add(1)  # the job worked on cuda:1: kernels may still be queued when Stop breaks its loop
    with jobs.run_job(["cpu", "cuda:0", "cuda:1"], label="stopped training"):
        order.append("stop")
    assert order == ["stop", "sync cuda:1", "unlock"]  # cuda:0 has no context here: not created to wait on it
    assert fake.contexts == {1}


def test_a_failing_job_is_not_masked_by_a_dead_context_at_release(gpu_model):
    fake = gpu_model("T4")
    fake.contexts.add(0)
    fake.sticky_error = "CUDA error: device-side assert triggered"
    with pytest.raises(ValueError, match="the job's own error"):
        with jobs.run_job(["cuda:0"], label="failing"):
            raise ValueError("the job's own error")
    with pytest.raises(RuntimeError, match="device-side assert"):  # a job that ended well hears of it
        with jobs.run_job(["cuda:0"], label="ended well"):
            pass


def test_locks_are_taken_by_physical_id_whatever_cuda_visible_devices_says(gpu_model, monkeypatch):
    """Process A sees (GPU-x, GPU-y) as cuda:0, cuda:1; process B, under CUDA_VISIBLE_DEVICES=1,0, the other
    way round: both must take GPU-x first, or each could hold one and wait for the other."""
    taken: list[str] = []
    real_hold_one = device_lock._hold_one

    def watched(device, *args, **kwargs):
        taken.append(device_lock.physical_name(device))
        return real_hold_one(device, *args, **kwargs)

    monkeypatch.setattr(device_lock, "_hold_one", watched)
    for uuids in (["x", "y"], ["y", "x"]):
        gpu_model("A100-80GB", count=2, uuids=uuids)
        with device_lock.hold_devices(["cuda:0", "cuda:1"], label="both"):
            pass
    assert taken == ["cuda-GPU-x", "cuda-GPU-y"] * 2


def test_a_job_nested_in_a_job_of_the_same_thread_shares_its_precision(gpu_model):
    gpu_model("H100", count=2)
    with jobs.run_job(["cuda:0"], label="outer"), jobs.run_job(["cuda:1"], label="inner"):
        assert precision.tf32_enabled() is False
        with tf32_matmul(True, torch.device("cuda", 1)):
            assert precision.tf32_enabled() is True
    assert precision.tf32_enabled() is False
