import os
from pathlib import Path

import torch

from core.platform import hardware

from core.platform import memory


def _meminfo_kib(key: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def test_cpu_matches_this_machine():
    info = hardware.inspect_machine()
    assert info.cpu.logical_cores == os.cpu_count()
    assert info.cpu.physical_cores is None or 1 <= info.cpu.physical_cores <= os.cpu_count()
    assert info.cpu.torch_threads == torch.get_num_threads()
    assert info.cpu.name and info.cpu.name != "unknown CPU"
    assert info.cpu.capability == torch.backends.cpu.get_cpu_capability()


def test_ram_agrees_with_proc_meminfo():
    info = hardware.inspect_machine().cpu
    total = _meminfo_kib("MemTotal") * 1024
    cgroup = memory.cgroup_memory()
    expected_total = min(total, cgroup[0]) if cgroup else total
    assert info.ram_total_bytes == expected_total
    available = _meminfo_kib("MemAvailable") * 1024
    # available memory moves between two reads; 5% of total is plenty for that
    assert abs(info.ram_available_bytes - min(available, expected_total)) < 0.05 * total or cgroup
    assert 0 < info.ram_available_bytes <= info.ram_total_bytes


def test_cgroup_limit_lower_than_machine_wins(tmp_path):
    (tmp_path / "memory.max").write_text("1073741824\n")
    (tmp_path / "memory.current").write_text("268435456\n")
    assert memory.cgroup_memory(tmp_path, tmp_path / "none") == (2**30, 2**28)
    (tmp_path / "memory.max").write_text("max\n")
    assert memory.cgroup_memory(tmp_path, tmp_path / "none") is None


def test_no_gpu_here_is_reported_plainly():
    info = hardware.inspect_machine()
    if torch.cuda.is_available():
        return  # only meaningful on the CPU machines CI runs on
    assert info.gpus == []
    assert not info.mps_available or info.has_gpu


def test_fake_gpu_is_reported(fake_cuda):
    info = hardware.inspect_machine(free_memory=True)
    assert len(info.gpus) == 1
    gpu = info.gpus[0]
    assert gpu.name == "Fake GPU 80GB"
    assert gpu.total_memory_bytes == 80 * 2**30
    assert gpu.free_memory_bytes == 60 * 2**30
    assert gpu.used_memory_bytes == 20 * 2**30
    assert gpu.compute_capability == "9.0"
    assert gpu.multiprocessors == 132
    assert info.has_gpu
    assert info.notes == [] or all("container" in n for n in info.notes)


def test_one_failing_query_leaves_the_rest(fake_cuda):
    fake_cuda.fail.add("nvml_memory")  # NVML refuses; CUDA is not asked (it would create a context: issue 33)
    info = hardware.inspect_machine(free_memory=True)
    gpu = info.gpus[0]
    assert gpu.name == "Fake GPU 80GB" and gpu.total_memory_bytes == 80 * 2**30
    assert gpu.free_memory_bytes is None and gpu.used_memory_bytes is None
    assert any("GPU 0 free memory: unknown" in n for n in info.notes) and fake_cuda.contexts == set()


def test_failing_properties_fall_back_to_driver_total(fake_cuda):
    fake_cuda.fail.add("get_device_properties")
    gpu = hardware.inspect_machine(free_memory=True).gpus[0]
    assert gpu.name is None and gpu.compute_capability is None
    assert gpu.total_memory_bytes == 80 * 2**30


def test_cuda_built_but_no_device_is_explained(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    info = hardware.inspect_machine()
    assert info.gpus == []
    assert any("no CUDA device is visible" in n for n in info.notes)


def test_broken_driver_counts_as_no_gpu(monkeypatch):
    def boom():
        raise RuntimeError("driver exploded")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", boom)
    assert hardware.inspect_machine().gpus == []
