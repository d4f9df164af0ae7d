import pytest
import torch

from core.platform import devices
from core.errors import DashboardError


def test_cpu_is_always_available():
    assert devices.available_devices()[-1] == "cpu"
    assert devices.resolve_device("CPU") == torch.device("cpu")


def test_auto_prefers_cuda(fake_cuda, monkeypatch):
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert devices.available_devices() == ["cuda:0", "mps", "cpu"]
    assert devices.resolve_device("auto") == torch.device("cuda", 0)
    assert devices.resolve_device("cuda") == torch.device("cuda", 0)


def test_auto_falls_back_to_mps_then_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert devices.resolve_device("auto") == torch.device("mps")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert devices.resolve_device("auto") == torch.device("cpu")


@pytest.mark.parametrize("name", ["tpu", "gpu", "", "cuda:x"])
def test_unknown_device_names_the_choices(name):
    with pytest.raises(DashboardError, match="choose one of: auto, .*cpu"):
        devices.resolve_device(name)


def test_absent_cuda_says_how_to_get_one(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(DashboardError, match="Download for Colab buttons"):
        devices.resolve_device("cuda")


def test_second_gpu_absent(fake_cuda):
    with pytest.raises(DashboardError, match="only 1 CUDA device"):
        devices.resolve_device("cuda:1")


def test_synchronize_only_waits_on_async_devices(fake_cuda):
    devices.synchronize(torch.device("cpu"))
    assert fake_cuda.events == []
    devices.synchronize(torch.device("cuda", 0))
    assert fake_cuda.events == ["sync"]
    assert devices.is_async(torch.device("cuda", 0)) and not devices.is_async(torch.device("cpu"))
