"""Shared fixtures: a fake CUDA GPU, isolated per-user folders, the real review data when present."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import torch
# torch imports its compiler, torch._dynamo, lazily (the CUDA build on an optimizer's first step), and
# that import reads torch.backends.mps.is_available.__wrapped__: under a test that has replaced the
# function with a plain lambda it fails. Imported here once, before any test patches anything.
import torch._dynamo
from streamlit.testing.v1 import AppTest

pytest_plugins = [
    "tests.postgres",  # fixtures postgres_admin_url, postgres_url
    "tests.tiers",  # a bare run is the fast tier: slow tests left out
]

GIB = 2**30
ROOT = Path(__file__).resolve().parents[1]
RT_POLARITY = ROOT.parent / "shared" / "data" / "rt-polaritydata"


@dataclass(frozen=True)
class GpuModel:
    """What torch.cuda.get_device_properties says about one kind of GPU users have.

    SM counts and boost clocks from NVIDIA's data sheets (T4; A100 whitepaper; H100 whitepaper, SXM5);
    memory as the card's nominal size. Only what this project's code reads is here.
    """

    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int
    clock_rate: int  # kHz, as CUDA reports the boost clock
    has_bf16: bool  # native bfloat16 matmuls (compute capability 8.0 and newer)
    has_tf32: bool  # TF32 tensor cores (compute capability 8.0 and newer)
    power_cap_w: float = 400.0  # the board's default power limit (T4 70 W, A100 SXM4 400 W, H100 SXM5 700 W)
    l2_bytes: int = 40 * 2**20  # L2_cache_size (T4 4 MB, A100 40 MB, H100 50 MB)


GPU_MODELS = {
    "T4": GpuModel("Tesla T4", 7, 5, 15 * GIB, 40, 1_590_000, has_bf16=False, has_tf32=False, power_cap_w=70.0,
                  l2_bytes=4 * 2**20),
    "A100-40GB": GpuModel("NVIDIA A100-SXM4-40GB", 8, 0, 40 * GIB, 108, 1_410_000, has_bf16=True, has_tf32=True),
    "A100-80GB": GpuModel("NVIDIA A100-SXM4-80GB", 8, 0, 80 * GIB, 108, 1_410_000, has_bf16=True, has_tf32=True),
    "H100": GpuModel("NVIDIA H100 80GB HBM3", 9, 0, 80 * GIB, 132, 1_980_000, has_bf16=True, has_tf32=True,
                     power_cap_w=700.0, l2_bytes=50 * 2**20),
}


class FakeCuda:
    """Stands in for torch.cuda on a machine without a GPU; records every synchronize call.

    `raise_later(message)` plays CUDA's asynchronous errors (a device-side assert): nothing fails
    where the faulty kernel is queued, the next synchronize raises, and so does every later one
    and every query, as on a real GPU whose context is lost until the process restarts.
    """

    def __init__(self, count: int = 1, model: GpuModel | None = None, *, uuids: list[str] | None = None,
                 exclusive_process: bool = False) -> None:
        self.count = count
        # per visible index, as torch's props.uuid prints: a permuted list plays CUDA_VISIBLE_DEVICES
        self.uuids = uuids
        self.exclusive_process = exclusive_process  # compute mode EXCLUSIVE_PROCESS: one process's context per GPU
        self.model = model
        self.events: list[str] = []  # e.g. ["sync", "clock", ...] when a test also fakes the clock
        if model is None:  # the default fake: an 80 GB Hopper-like GPU without a clock in its properties
            self.props = SimpleNamespace(
                name="Fake GPU 80GB", total_memory=80 * GIB, major=9, minor=0, multi_processor_count=132
            )
        else:
            self.props = SimpleNamespace(name=model.name, total_memory=model.total_memory, major=model.major,
                                         minor=model.minor, multi_processor_count=model.multi_processor_count,
                                         clock_rate=model.clock_rate, L2_cache_size=model.l2_bytes)
        self.free = int(self.props.total_memory * 3 // 4)
        self.fail: set[str] = set()  # names of queries that should raise
        self.pending_error: str | None = None  # queued by a kernel, raised at the next synchronize
        self.sticky_error: str | None = None  # raised since, by everything
        self.contexts: set[int] = set()  # devices on which this process created a CUDA context (mem_get_info,
        # synchronize do)
        self.child_contexts: set[int] = set()  # contexts another process (a rank, a worker) opened
        self.load_w: dict[int, float] = {}  # by CUDA index: the watts the work running now would draw uncapped
        self.gpu_s = 0.0  # the GPU's own timeline, which CUDA events stamp; a test's "kernels" advance it (`work`)

    def work(self, seconds: float) -> None:
        """A kernel of `seconds` runs on the GPU: its timeline moves on (the host's clock does not)."""
        self.events.append("kernel")
        self.gpu_s += seconds

    def Event(self, enable_timing: bool = False, **_: object) -> FakeEvent:
        return FakeEvent(self, enable_timing)

    def current_stream(self, device=None) -> SimpleNamespace:
        return SimpleNamespace(device=device)

    @contextmanager
    def running(self, watts: float, index: int = 0) -> Iterator[None]:
        """Work runs on GPU `index` while inside, wanting `watts` (the fake NVML caps it at the board's limit)."""
        self.load_w[index] = watts
        try:
            yield
        finally:
            self.load_w.pop(index, None)

    def _maybe_fail(self, what: str) -> None:
        if self.sticky_error is not None:
            raise RuntimeError(self.sticky_error)
        if what in self.fail:
            raise RuntimeError(f"fake driver failure in {what}")

    def raise_later(self, message: str = "CUDA error: device-side assert triggered") -> None:
        """A kernel failed on the device: the host hears of it at the next synchronize, and for good."""
        if self.pending_error is None and self.sticky_error is None:
            self.pending_error = message

    def is_available(self) -> bool:
        return self.count > 0

    def device_count(self) -> int:
        return self.count

    def get_device_properties(self, index=None):
        self._maybe_fail("get_device_properties")
        if self.uuids is None:
            return self.props
        index = int(getattr(index, "index", index) or 0)
        return SimpleNamespace(**vars(self.props), uuid=self.uuids[index])

    def has_primary_context(self, index: int) -> bool:
        return int(index) in self.contexts

    def open_child_context(self, index: int) -> None:
        """Another process (a torchrun rank, a training worker, the cold-start child) creates its context
        on GPU `index`; in EXCLUSIVE_PROCESS mode CUDA refuses it while this process holds one there."""
        if self.exclusive_process and index in self.contexts:
            raise RuntimeError("CUDA error: all CUDA-capable devices are busy or unavailable")
        self.child_contexts.add(index)

    def mem_get_info(self, index=None):
        self._maybe_fail("mem_get_info")
        self.contexts.add(0 if index is None else int(getattr(index, "index", index) or 0))
        return (self.free, self.props.total_memory)

    def synchronize(self, device=None) -> None:
        self.events.append("sync")
        self.contexts.add(0 if device is None else int(getattr(device, "index", device) or 0))  # as CUDA's does
        if self.pending_error is not None:
            self.sticky_error, self.pending_error = self.pending_error, None
        self._maybe_fail("synchronize")


class FakeEvent:
    """torch.cuda.Event on a FakeCuda: `record` stamps the GPU's timeline (FakeCuda.gpu_s) and is logged in its
    `events` ("record"), as is `synchronize` ("event sync")."""

    def __init__(self, cuda: FakeCuda, enable_timing: bool) -> None:
        self.cuda, self.enable_timing, self.at = cuda, enable_timing, None

    def record(self, stream=None) -> None:
        self.cuda._maybe_fail("event")
        self.cuda.events.append("record")
        self.at = self.cuda.gpu_s

    def synchronize(self) -> None:
        self.cuda.events.append("event sync")
        self.cuda._maybe_fail("event")

    def elapsed_time(self, end: FakeEvent) -> float:
        assert self.enable_timing and end.enable_timing and self.at is not None and end.at is not None
        return (end.at - self.at) * 1e3  # milliseconds, as CUDA's


def install_fake_cuda(monkeypatch, fake: FakeCuda, *, nvml: bool = True) -> FakeCuda:
    """Stand `fake` in for torch.cuda; with NVML for it (as a machine with NVIDIA's driver has) unless `nvml` is
    False."""
    for name in ("is_available", "device_count", "get_device_properties", "mem_get_info", "synchronize", "Event",
                 "current_stream"):
        monkeypatch.setattr(torch.cuda, name, getattr(fake, name))
    monkeypatch.setattr(torch._C, "_cuda_hasPrimaryContext", fake.has_primary_context, raising=False)
    nvml_ids = fake.uuids or [f"fake-{i}" for i in range(fake.count)]
    install_fake_nvml(monkeypatch, FakeGpuNvml(fake, list(nvml_ids)) if nvml else None)
    return fake


class FakeGpuNvml(ModuleType):
    """pynvml for a FakeCuda: its GPUs by NVML's own numbering (PCI order) and UUID, their free memory.

    NVML creates no CUDA context; the handles a test's code looked up are in `handles`.
    Its sensors follow the work (FakeCuda.running): idle, the GPU shows only the idle bit and its full clock; under
    load it draws what the work wants up to its power cap, and at the cap sets `sw_power_cap` and lowers its clock
    in proportion; a GPU in `thermal` also slows for heat (`sw_thermal`, 60 % of its clock) while work runs."""

    IDLE, POWER_CAP, SW_THERMAL = 0x1, 0x4, 0x20  # nvmlClocksEventReasons bits

    def __init__(self, cuda: FakeCuda, nvml_uuids: list[str]) -> None:
        super().__init__("pynvml")
        self.cuda, self.nvml_uuids = cuda, nvml_uuids
        self.handles: list[tuple[str, object]] = []
        self.free: dict[str, int] = {}  # by UUID, where a test sets it; else the FakeCuda's `free` as it is now
        self.sm_mhz: dict[str, int] = {u: 1410 for u in nvml_uuids}  # the SM clock, by UUID
        self.thermal: set[str] = set()  # UUIDs of GPUs that slow down for heat while work runs
        model = cuda.model
        self.power_cap_w = model.power_cap_w if model is not None else 400.0
        if model is not None:
            self.sm_mhz = {u: model.clock_rate // 1000 for u in nvml_uuids}

    def _load_w(self, handle) -> float:
        """What the work on this GPU wants now (0 idle), found by the CUDA index its UUID has."""
        order = self.cuda.uuids or self.nvml_uuids
        return self.cuda.load_w.get(order.index(handle), 0.0) if handle in order else 0.0

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle) -> int:
        load = self._load_w(handle)
        if not load:
            return self.IDLE
        return (self.POWER_CAP if load >= self.power_cap_w else 0) | (self.SW_THERMAL if handle in self.thermal else 0)

    def nvmlDeviceGetPowerUsage(self, handle) -> int:
        return int(1000 * (min(self._load_w(handle), self.power_cap_w) or 0.3 * self.power_cap_w))  # milliwatts

    def nvmlDeviceGetTemperature(self, handle, sensor) -> int:
        return 40 if not self._load_w(handle) else 90 if handle in self.thermal else 70

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetHandleByUUID(self, name: str):
        self.handles.append(("uuid", name))
        if not name.startswith("GPU-") or name[4:] not in self.nvml_uuids:
            raise RuntimeError("NVMLError_NotFound")
        return name[4:]

    def nvmlDeviceGetHandleByIndex(self, index: int):
        self.handles.append(("index", index))
        return self.nvml_uuids[index]

    def nvmlDeviceGetClockInfo(self, handle, kind):
        load, clock = self._load_w(handle), self.sm_mhz[handle]
        if load:
            clock = int(clock * min(1.0, self.power_cap_w / load) * (0.6 if handle in self.thermal else 1.0))
        return clock

    def nvmlDeviceGetMemoryInfo(self, handle):
        if "nvml_memory" in self.cuda.fail:
            raise RuntimeError("NVMLError_NotSupported: fake driver failure in nvml_memory")
        total, free = self.cuda.props.total_memory, self.free.get(handle, self.cuda.free)
        return SimpleNamespace(free=free, total=total, used=total - free)


def install_fake_nvml(monkeypatch, lib: ModuleType | None) -> ModuleType | None:
    """Make core.platform.sensors.nvml() return `lib` (None: no NVML) for this test."""
    from core.platform import sensors

    monkeypatch.setattr(sensors, "_nvml", lib)
    monkeypatch.setattr(sensors, "_nvml_tried", True)
    return lib


@pytest.fixture
def fake_cuda(monkeypatch) -> FakeCuda:
    """Pretend one CUDA GPU is present. Only inspection and synchronization are faked;
    allocating tensors on 'cuda' still fails, as it must."""
    return install_fake_cuda(monkeypatch, FakeCuda())


@pytest.fixture(params=list(GPU_MODELS))
def any_gpu(request, monkeypatch) -> FakeCuda:
    """`fake_cuda` as each GPU of the matrix in turn: a test using it runs once per model (T4, A100, H100)."""
    return install_fake_cuda(monkeypatch, FakeCuda(model=GPU_MODELS[request.param]))


@pytest.fixture
def gpu_model(monkeypatch):
    """A factory: `gpu_model("T4", count=2)` fakes that GPU (or several of it, each with its UUID) and returns
    the FakeCuda; keywords go to FakeCuda (`exclusive_process=True`, `uuids=[...]`)."""
    def make(name: str, count: int = 1, **kwargs) -> FakeCuda:
        uuids = [f"{name.lower()}-{i:04d}" for i in range(count)]  # torch reports each GPU's UUID
        return install_fake_cuda(monkeypatch, FakeCuda(count, GPU_MODELS[name], **{"uuids": uuids, **kwargs}))
    return make


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path_factory, monkeypatch):
    """Keep caches, the result store and lock files of every test out of the user's home and class."""
    root = tmp_path_factory.mktemp("userdirs")
    monkeypatch.setenv("GPU_VS_CPU_CACHE_DIR", str(root / "cache"))
    monkeypatch.setenv("GPU_VS_CPU_DATA_DIR", str(root / "data"))
    monkeypatch.setenv("GPU_VS_CPU_LOCK_DIR", str(root / "locks"))
    monkeypatch.delenv("DATABASE_URL", raising=False)  # never write test runs to a real class board
    monkeypatch.setenv("GPU_VS_CPU_LOAD_PROBE_S", "0.02")  # the real probe, short: it counts toward a job's time cap
    from core.store import key_guard

    monkeypatch.setattr(key_guard, "SERVER_GUARD", key_guard.KeyGuard())  # wrong keys counted per server: per test here
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
