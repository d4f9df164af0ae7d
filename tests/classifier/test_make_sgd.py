"""The classifier's optimizer: torch's SGD, fused where torch has the kernel, the same steps either way."""

from __future__ import annotations

import pytest
import torch

from core.classifier import model as model_module
from core.classifier.model import ClassifierConfig, build_model, make_sgd

CONFIG = ClassifierConfig(lr=0.05, momentum=0.9, weight_decay=1e-3)


def _steps(fused_allowed: bool, monkeypatch) -> list[torch.Tensor]:
    monkeypatch.setattr(model_module, "_fused_sgd_runs", lambda device: fused_allowed)
    net = build_model(50, 4, seed=0)
    optimizer = make_sgd(net.parameters(), CONFIG)
    assert optimizer.defaults["fused"] is (True if fused_allowed else None)
    x, y = torch.rand(8, 50, generator=torch.Generator().manual_seed(1)), torch.tensor([0.0, 1.0] * 4)
    for _ in range(5):
        optimizer.zero_grad()
        torch.nn.functional.binary_cross_entropy(net(x).squeeze(1), y).backward()
        optimizer.step()
    return [p.detach().clone() for p in net.parameters()]


def test_fused_and_unfused_steps_agree(monkeypatch):
    fused, plain = _steps(True, monkeypatch), _steps(False, monkeypatch)
    for a, b in zip(fused, plain):
        torch.testing.assert_close(a, b)


def test_the_cpu_probe_runs_one_real_fused_step():
    """torch 2.4+ has a CPU kernel; torch 2.3, still inside requirements.txt's range, raises at the first step."""
    has_kernel = tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 4)
    assert model_module._fused_sgd_runs(torch.device("cpu")) is has_kernel


def test_a_device_without_a_kernel_falls_back(monkeypatch):
    real = torch.optim.SGD

    class NoFusedKernel(real):  # what torch 2.3 does on the CPU: the check comes at the first step
        def step(self, closure=None):
            if self.defaults.get("fused"):
                raise RuntimeError("`fused=True` requires all the params to be floating point Tensors "
                                   "of supported devices")
            return super().step(closure)

    monkeypatch.setattr(torch.optim, "SGD", NoFusedKernel)
    assert model_module._fused_sgd_runs(torch.device("cpu")) is False
    assert make_sgd(build_model(10, 2, seed=0).parameters(), CONFIG).defaults["fused"] is None


def test_no_parameters_is_torchs_own_error():
    with pytest.raises(ValueError, match="empty parameter list"):
        make_sgd([], CONFIG)
