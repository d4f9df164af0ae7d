"""Ranks and workers on GPUs a launcher numbered its own way (issue 33, items 5 and 7), on faked GPUs.

A launcher that gives each rank one GPU through CUDA_VISIBLE_DEVICES makes every rank's GPU cuda:0, and
cuda:LOCAL_RANK an invalid ordinal; two ranks of one machine must not share a GPU; under `--distributed`
the first rank of each machine holds every GPU of its machine's ranks, by their physical ids.
"""

from __future__ import annotations

import pytest
import torch

from core.classifier.distributed import worker_device
from core.errors import DashboardError
from core.matmul.rank_worker import RanksConfig, machine_devices, rank_device, shared_gpu
from core.platform import device_lock, gpu_ids
from core.platform.torchrun import WorkerEnv, local_gpu_index


def test_a_rank_that_sees_one_gpu_takes_cuda_0(gpu_model):
    gpu_model("A100-80GB", count=1, uuids=["rank1-own-gpu"])  # CUDA_VISIBLE_DEVICES=<its GPU> for local rank 1
    assert rank_device(RanksConfig(), 1, 2, 1, "node-a") == torch.device("cuda", 0)
    assert worker_device("cuda", WorkerEnv(rank=1, world_size=2, local_rank=1)) == torch.device("cuda", 0)
    assert worker_device("auto", WorkerEnv(rank=3, world_size=4, local_rank=3)) == torch.device("cuda", 0)


def test_with_every_gpu_visible_each_rank_takes_its_local_rank(gpu_model):
    gpu_model("H100", count=4)
    assert rank_device(RanksConfig(), 2, 4, 4, "node-a") == torch.device("cuda", 2)
    assert worker_device("cuda", WorkerEnv(rank=2, world_size=4, local_rank=2)) == torch.device("cuda", 2)
    with pytest.raises(DashboardError, match="node-a has 2 GPU.s. but 3 ranks"):
        rank_device(RanksConfig(), 2, 3, 2, "node-a")
    with pytest.raises(DashboardError, match="worker 5 has no GPU: this machine has 4"):
        worker_device("cuda", WorkerEnv(rank=5, world_size=6, local_rank=5))
    assert [local_gpu_index(r, 1) for r in range(3)] == [0, 0, 0] and local_gpu_index(1, 2) == 1
    assert local_gpu_index(2, 2) is None


def test_two_ranks_of_one_machine_on_one_gpu_are_refused_in_one_line():
    places = [("m1", "GPU-a"), ("m1", "GPU-b"), ("m2", "GPU-a"), ("m1", None)]  # m2's GPU-a is another machine's
    assert shared_gpu(places, ["node-a", "node-a", "node-b", "node-a"]) is None
    message = shared_gpu([("m1", "GPU-a"), ("m1", "GPU-a")], ["node-a", "node-a"])
    assert message is not None and message.startswith("ranks 0 and 1 on node-a were given the same GPU (GPU-a)")


def test_the_machine_lock_names_every_gpu_of_the_machine_by_its_physical_id(gpu_model):
    places = [("node-a", "m1", "GPU-bbbb"), ("node-a", "m1", "GPU-aaaa"), ("node-b", "m2", "GPU-cccc")]
    gpu = torch.device("cuda", 0)
    assert machine_devices(places, "m1", gpu) == ["cuda-GPU-aaaa", "cuda-GPU-bbbb"]
    assert machine_devices(places, "m2", gpu) == ["cuda-GPU-cccc"]
    assert machine_devices([("a", "m1", None), ("a", "m1", None)], "m1", gpu) == ["cuda:0", "cuda:1"]
    assert machine_devices(places, "m1", torch.device("cpu")) == ["cpu"]
    # a physical name and the logical name of the same GPU share one line, in every process
    gpu_model("A100-80GB", count=1, uuids=["aaaa"])
    assert gpu_ids.physical_id(0) == "GPU-aaaa"
    assert device_lock._holder_path("cuda-GPU-aaaa") == device_lock._holder_path("cuda:0")
    with device_lock.hold_devices(["cuda-GPU-aaaa"], label="machine lock"):
        assert device_lock.current_holder("cuda:0") is not None
    assert device_lock.current_holder("cuda:0") is None


def test_a_job_holding_a_neighbours_gpu_by_its_physical_name_runs_and_lets_go(gpu_model):
    from core.platform.jobs import run_job

    fake = gpu_model("T4", count=1, uuids=["mine"])
    with run_job(["cuda-GPU-mine", "cuda-GPU-neighbour"], label="matmul on 2 ranks") as job:
        assert job.devices == ("cuda-GPU-mine", "cuda-GPU-neighbour")
    assert fake.contexts == set()


def test_nvml_reads_the_gpu_cuda_means_whatever_cuda_visible_devices_says(gpu_model, monkeypatch):
    from core.platform import sensors
    from tests.conftest import FakeGpuNvml, install_fake_nvml

    fake = gpu_model("A100-80GB", count=1, uuids=["second"])  # CUDA_VISIBLE_DEVICES=1: cuda:0 is NVML's GPU 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    nvml = install_fake_nvml(monkeypatch, FakeGpuNvml(fake, ["first", "second"]))
    nvml.sm_mhz = {"first": 1410, "second": 705}  # the second GPU is throttled, the first is not
    assert sensors.read_clocks(torch.device("cuda", 0)).gpu_sm_mhz == 705.0
    assert nvml.handles == [("uuid", "GPU-second")]
    fake.uuids = None  # a torch that names neither UUID nor PCI id: no figure rather than NVML's GPU 0's
    assert sensors.read_clocks(torch.device("cuda", 0)).gpu_sm_mhz is None
    assert ("index", 0) not in nvml.handles
