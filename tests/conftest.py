"""Shared fixtures: a fake CUDA GPU, isolated per-user folders, the real review data when present."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
# torch imports its compiler, torch._dynamo, lazily (the CUDA build on an optimizer's first step), and
# that import reads torch.backends.mps.is_available.__wrapped__: under a test that has replaced the
# function with a plain lambda it fails. Imported here once, before any test patches anything.
import torch._dynamo  # noqa: F401
from streamlit.testing.v1 import AppTest

pytest_plugins = [
    "tests.postgres",  # fixtures postgres_admin_url, postgres_url
    "tests.tiers",  # a bare run is the fast tier: slow tests left out
]

GIB = 2**30
ROOT = Path(__file__).resolve().parents[1]
RT_POLARITY = ROOT.parent / "shared" / "data" / "rt-polaritydata"


class FakeCuda:
    """Stands in for torch.cuda on a machine without a GPU; records every synchronize call."""

    def __init__(self, count: int = 1) -> None:
        self.count = count
        self.events: list[str] = []  # e.g. ["sync", "clock", ...] when a test also fakes the clock
        self.props = SimpleNamespace(
            name="Fake GPU 80GB", total_memory=80 * GIB, major=9, minor=0, multi_processor_count=132
        )
        self.free = 60 * GIB
        self.fail: set[str] = set()  # names of queries that should raise

    def _maybe_fail(self, what: str) -> None:
        if what in self.fail:
            raise RuntimeError(f"fake driver failure in {what}")

    def is_available(self) -> bool:
        return self.count > 0

    def device_count(self) -> int:
        return self.count

    def get_device_properties(self, index: int):
        self._maybe_fail("get_device_properties")
        return self.props

    def mem_get_info(self, index=None):
        self._maybe_fail("mem_get_info")
        return (self.free, self.props.total_memory)

    def synchronize(self, device=None) -> None:
        self.events.append("sync")


@pytest.fixture
def fake_cuda(monkeypatch) -> FakeCuda:
    """Pretend one CUDA GPU is present. Only inspection and synchronization are faked;
    allocating tensors on 'cuda' still fails, as it must."""
    fake = FakeCuda()
    for name in ("is_available", "device_count", "get_device_properties", "mem_get_info", "synchronize"):
        monkeypatch.setattr(torch.cuda, name, getattr(fake, name))
    return fake


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path_factory, monkeypatch):
    """Keep caches, the result store and lock files of every test out of the user's home and class."""
    root = tmp_path_factory.mktemp("userdirs")
    monkeypatch.setenv("GPU_VS_CPU_CACHE_DIR", str(root / "cache"))
    monkeypatch.setenv("GPU_VS_CPU_DATA_DIR", str(root / "data"))
    monkeypatch.setenv("GPU_VS_CPU_LOCK_DIR", str(root / "locks"))
    monkeypatch.delenv("DATABASE_URL", raising=False)  # never write test runs to a real class board
    monkeypatch.setenv("GPU_VS_CPU_LOAD_PROBE_S", "0.02")  # the real probe, short: it counts toward a job's time cap
    return root


@pytest.fixture
def rt_polarity_dir() -> Path:
    """The real Pang & Lee data beside the checkout; tests using it skip on a user's machine."""
    if not (RT_POLARITY / "rt-polarity.pos").exists():
        pytest.skip(f"rt-polarity data not found at {RT_POLARITY}")
    return RT_POLARITY


@pytest.fixture
def app() -> AppTest:
    """The whole app as a user meets it; `app.switch_page("pages/x.py").run()` opens a page."""
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
