"""The server process asks about GPU memory without creating a CUDA context (issue 33, item 3).

`torch.cuda.mem_get_info` creates a context on the GPU it asks about and the process keeps it. On a GPU in
EXCLUSIVE_PROCESS compute mode the ranks, the training workers and the cold-start child then cannot create
theirs. The fake GPUs record every context this process creates (mem_get_info, synchronize) and refuse a
child's while one is there; NVML (faked) answers the memory questions without one.
"""

from __future__ import annotations

import pytest
import torch
from streamlit.testing.v1 import AppTest

from core.classifier import workers
from core.classifier.model import ClassifierConfig
from core.matmul import guards, rank_launch
from core.matmul.rank_worker import RanksConfig
from core.matmul.choices import size_choices
from core.parallel.first_call import FirstCallConfig, run_first_call
from core.platform import torchrun
from core.platform.hardware import inspect_machine
from core.platform.memory import free_device_bytes, gpu_memory
from core.platform.timing import Measurement
from tests.conftest import GIB, GPU_MODELS, ROOT, FakeCuda, FakeGpuNvml, install_fake_cuda, install_fake_nvml

UUIDS = ["aaaa-0", "bbbb-1"]


@pytest.fixture
def exclusive(monkeypatch) -> FakeCuda:
    """Two A100s in EXCLUSIVE_PROCESS compute mode, with NVML."""
    fake = install_fake_cuda(monkeypatch, FakeCuda(2, GPU_MODELS["A100-80GB"], uuids=list(UUIDS),
                                                   exclusive_process=True))
    return fake


def test_memory_is_read_through_nvml_by_uuid_without_a_context(exclusive, monkeypatch):
    nvml = install_fake_nvml(monkeypatch, FakeGpuNvml(exclusive, ["bbbb-1", "aaaa-0"]))  # NVML's order is not CUDA's
    nvml.free = {"aaaa-0": 10 * GIB, "bbbb-1": 70 * GIB}
    assert gpu_memory(0) == (10 * GIB, 80 * GIB) and gpu_memory(1) == (70 * GIB, 80 * GIB)
    assert free_device_bytes(torch.device("cuda", 1)) == 70 * GIB
    info = inspect_machine(free_memory=True)  # the Hardware page, `core devices`, the self-check
    assert [g.free_memory_bytes for g in info.gpus] == [10 * GIB, 70 * GIB]
    assert ("index", 0) not in nvml.handles and ("uuid", "GPU-aaaa-0") in nvml.handles
    assert exclusive.contexts == set()


def test_without_nvml_a_gpu_without_a_context_is_not_asked(exclusive, monkeypatch):
    install_fake_nvml(monkeypatch, None)
    info = inspect_machine(free_memory=True)
    assert [g.free_memory_bytes for g in info.gpus] == [None, None]
    assert any("GPU 0 free memory: unknown" in n for n in info.notes)
    # the memory guard: only a size beyond the whole GPU is refused here; the allocation finds out the rest
    assert free_device_bytes(torch.device("cuda", 0)) == 80 * GIB
    assert exclusive.contexts == set()
    exclusive.contexts.add(1)  # a process that has worked on cuda:1 already may ask CUDA itself
    assert gpu_memory(1) == (exclusive.free, 80 * GIB)


def test_the_launcher_and_the_size_slider_create_no_context(exclusive):
    rank_launch.check_fits(RanksConfig(sizes=(8192,)), 2, ["cuda:0", "cuda:1"])
    with pytest.raises(guards.DoesNotFit):
        rank_launch.check_fits(RanksConfig(sizes=(65536,)), 2, ["cuda:0", "cuda:1"])
    assert max(size_choices(["cuda:0", "cuda:1", "cpu"], ["float32"])) >= 8192
    assert exclusive.contexts == set()


def _open_pages() -> None:
    for page in ("pages/hardware.py", "pages/matmul_race.py"):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.switch_page(page).run()
        assert not at.exception, page


def test_ranks_workers_and_the_cold_start_child_run_after_the_pages_opened(exclusive, monkeypatch):
    """The issue's "done when": the pages were opened in this (the server's) process, then each multi-process
    job starts its children, which must be able to create their own contexts."""
    _open_pages()
    assert exclusive.contexts == set()

    def ranks_launch(command, threads, job, emit) -> torchrun.Launched:
        for i in range(2):
            exclusive.open_child_context(i)  # each rank's own context: refused if the server holds one
        raise_on = {"event": "error", "message": "rank 0: fake run ends here", "rank": 0}
        emit(raise_on)
        return torchrun.Launched(2)

    with pytest.raises(Exception, match="fake run ends here"):
        rank_launch.run_ranks(RanksConfig(sizes=(64,), budget_s=0.01), 2, launch=ranks_launch)
    assert exclusive.child_contexts == {0, 1}

    exclusive.child_contexts.clear()

    def workers_follow(command, threads, job, on_event) -> torchrun.Launched:
        for i in range(2):
            exclusive.open_child_context(i)
        on_event({"event": "error", "message": "worker 0: fake run ends here"})
        return torchrun.Launched(2)

    monkeypatch.setattr(workers.torchrun, "follow", workers_follow)
    config = ClassifierConfig(preset="minibatch", device="cuda", epochs=1)
    with pytest.raises(Exception, match="fake run ends here"):
        workers.train_with_workers("toy", config, 2, cuda_count=2)
    assert exclusive.child_contexts == {0, 1}

    def fresh(sizes, devices, budget_s, threads):
        exclusive.open_child_context(0)  # the cold-start child times cuda:0 in its own process
        return {(d, n): Measurement((1e-3,), 1, 2e-3) for d in devices for n in sizes}

    exclusive.child_contexts.clear()
    run_first_call(FirstCallConfig(sizes=(64,), budget_s=0.05), devices=["cuda:0", "cpu"], fresh=fresh,
                   make=lambda shape, device: torch.ones(shape))  # this process's own timing: on the CPU here
    assert exclusive.child_contexts == {0}
