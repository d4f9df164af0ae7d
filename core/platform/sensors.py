"""The clock a figure was measured at: the CPU's current frequency, and a GPU's SM clock, temperature, power
and throttle reasons (NVML), read before and after each size so a throttled size is marked, not trusted.

A GPU that reaches its power cap or its temperature limit lowers its clock mid-run, and a laptop CPU does
the same on battery: the same product then takes longer for reasons that are the machine's, not the
series'. NVIDIA's nvbench drops samples taken while the GPU throttles; here the size keeps its samples
and says so (`throttled`, with the reasons), so the table and the saved run show it.

A GPU's reasons are only meaningful under load: read while it is idle they miss a slowdown the work caused,
and its idle clock is not the clock the work ran at. So `RunSampler` reads them on a thread of its own every
SAMPLE_INTERVAL_S while a timed block runs on the GPU (never during a CPU series' blocks, whose cores it would
take), and `during` makes the size's reading from those samples: the median SM clock, the highest temperature,
the median power, every reason seen. Not every reason is a slowdown: a GPU at its power cap (`sw_power_cap`:
a 70 W T4 under any sustained matmul) runs at the clock it always runs long work at, a fact about the GPU
(`PointClock.power_limited`). Thermal and hardware slowdowns, or a clock that fell by more than CLOCK_DROP
during the size with no power cap to explain it, make the size `throttled` (`PointClock.slowed`).

NVML comes from `nvidia-ml-py` (the `pynvml` module, which torch.cuda's own clock_rate/temperature/
power_draw also use; they do not give the throttle reasons). It is imported only when a CUDA device is
read, so a machine without a GPU never loads it; without it, or when the driver refuses, the GPU
fields are None (not measured), never a guess. The CPU's frequency is psutil's (None where the OS
does not report it: many VMs, macOS on Apple silicon).
"""

from __future__ import annotations

import importlib
import statistics
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import psutil
import torch

from core.platform import gpu_ids
from core.results.matmul import POWER_CAP, PointClock

NVML_CLOCK_SM = 1  # nvmlClockType_t
NVML_TEMPERATURE_GPU = 0  # nvmlTemperatureSensors_t
# nvmlClocksEventReasons bits (nvml.h); idle, application clocks, sync boost and display are not throttling
THROTTLE_REASONS = {
    0x4: POWER_CAP,
    0x8: "hw_slowdown",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
}

SAMPLE_INTERVAL_S = 0.05  # NVML samples while a GPU block runs: 4 reads of well under a ms each, 20 times a second
CLOCK_DROP = 0.2  # an SM clock this far below the size's highest, without a power cap, is a slowdown

_lock = threading.Lock()
_nvml: ModuleType | None = None
_nvml_tried = False


@dataclass(frozen=True)
class ClockReading:
    """One reading of a device's clock; None where not measured."""

    cpu_mhz: float | None = None
    gpu_sm_mhz: float | None = None
    gpu_temperature_c: float | None = None
    gpu_power_w: float | None = None
    reasons: tuple[str, ...] = ()  # the active throttle reasons (GPU)
    throttled: bool | None = None  # None: the GPU's reasons were not read (no GPU, no NVML); see `during`

    def record(self) -> PointClock:
        """The reading as a saved point keeps it (the reasons joined: "sw_power_cap, hw_thermal")."""
        return PointClock(cpu_mhz=self.cpu_mhz, gpu_sm_mhz=self.gpu_sm_mhz, gpu_temperature_c=self.gpu_temperature_c,
                          gpu_power_w=self.gpu_power_w, throttle=", ".join(self.reasons) or None,
                          throttled=self.throttled)


def cpu_mhz() -> float | None:
    """The CPU's current clock in MHz (the mean over cores, as psutil reports it), or None."""
    try:
        freq = psutil.cpu_freq()
    except (OSError, NotImplementedError, AttributeError, RuntimeError):
        return None
    current = getattr(freq, "current", None)
    return float(current) if isinstance(current, (int, float)) and current > 0 else None


def nvml() -> ModuleType | None:
    """The initialised pynvml module, or None (not installed, no driver); tried once per process."""
    global _nvml, _nvml_tried
    with _lock:
        if not _nvml_tried:
            _nvml_tried = True
            try:
                module = importlib.import_module("pynvml")
                module.nvmlInit()
                _nvml = module
            except Exception:  # noqa: BLE001 - ImportError or any NVMLError: the readings stay None
                _nvml = None
        return _nvml


def _reasons(lib: ModuleType, handle: Any) -> int:
    read = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or lib.nvmlDeviceGetCurrentClocksThrottleReasons
    return int(read(handle))


def _field(read: Callable[[], float]) -> float | None:
    """One NVML figure, or None where this GPU or driver does not give it (NVMLError_NotSupported and kin):
    each read on its own, so a driver without one call still gives the others."""
    try:
        return float(read())
    except Exception:  # noqa: BLE001 - NVML's errors have no common base outside pynvml
        return None


def gpu_reading(device: torch.device) -> ClockReading:
    """SM clock, temperature, power and throttle reasons of a CUDA device, each None where not measured
    (no NVML, a GPU NVML cannot be sure is this one, a field the driver does not give)."""
    lib = nvml() if device.type == "cuda" else None
    if lib is None:
        return ClockReading()
    try:
        handle = gpu_ids.nvml_handle(lib, device.index or 0)
    except Exception:  # noqa: BLE001 - the driver refused the lookup: not measured
        handle = None
    if handle is None:
        return ClockReading()
    bits = _field(lambda: _reasons(lib, handle))
    reasons = () if bits is None else tuple(name for bit, name in THROTTLE_REASONS.items() if int(bits) & bit)
    power_mw = _field(lambda: lib.nvmlDeviceGetPowerUsage(handle))
    return ClockReading(gpu_sm_mhz=_field(lambda: lib.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM)),
                        gpu_temperature_c=_field(lambda: lib.nvmlDeviceGetTemperature(handle, NVML_TEMPERATURE_GPU)),
                        gpu_power_w=None if power_mw is None else power_mw / 1000.0,  # milliwatts
                        reasons=reasons, throttled=None if bits is None else bool(reasons))


def read_clocks(device: torch.device) -> ClockReading:
    """What the device's clock is now: the CPU's frequency for the CPU, NVML's figures for a CUDA GPU."""
    if device.type == "cpu":
        return ClockReading(cpu_mhz=cpu_mhz())
    return gpu_reading(device)


def during(samples: Sequence[ClockReading]) -> ClockReading:
    """A size's GPU reading from the samples taken while its blocks ran: the median SM clock and power, the
    highest temperature, every reason seen; throttled for a thermal or hardware slowdown, or for an SM clock
    CLOCK_DROP below the size's highest with no power cap to explain it (None: neither reasons nor clocks read)."""
    def known(values: Sequence[float | None]) -> list[float]:
        return [v for v in values if v is not None]
    clocks = known([s.gpu_sm_mhz for s in samples])
    temps, powers = known([s.gpu_temperature_c for s in samples]), known([s.gpu_power_w for s in samples])
    reasons = tuple(dict.fromkeys(r for s in samples for r in s.reasons))
    dropped = bool(clocks) and min(clocks) < (1 - CLOCK_DROP) * max(clocks) and POWER_CAP not in reasons
    slowdown = any(r != POWER_CAP for r in reasons)
    read = any(s.throttled is not None for s in samples)
    return ClockReading(gpu_sm_mhz=statistics.median(clocks) if clocks else None,
                        gpu_temperature_c=max(temps) if temps else None,
                        gpu_power_w=statistics.median(powers) if powers else None, reasons=reasons,
                        throttled=slowdown or dropped if read or dropped else None)


@dataclass
class RunSampler:
    """Samples a GPU's sensors on a thread of its own every `interval_s` while a timed block runs on it
    (`working`), from `start` to `stop`; `reading()` is the size's (`during` of the samples, or one reading
    taken at the end where the blocks were too short for any)."""

    device: torch.device
    read: Callable[[torch.device], ClockReading] = gpu_reading
    interval_s: float | None = None  # None: SAMPLE_INTERVAL_S as it is when the sampler starts
    samples: list[ClockReading] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._busy, self._stop = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> RunSampler:
        interval = SAMPLE_INTERVAL_S if self.interval_s is None else self.interval_s

        def sample() -> None:
            while not self._stop.is_set():
                if self._busy.wait(timeout=0.1) and not self._stop.is_set():
                    self.samples.append(self.read(self.device))
                    self._stop.wait(interval)
        self._thread = threading.Thread(target=sample, name=f"sensors {self.device}", daemon=True)
        self._thread.start()
        return self

    @contextmanager
    def working(self) -> Iterator[None]:
        """Around a timed block of this GPU: the sampler reads while it runs."""
        self._busy.set()
        try:
            yield
        finally:
            self._busy.clear()

    def stop(self) -> None:
        self._stop.set()
        self._busy.set()  # wake the thread's wait
        if self._thread is not None:
            self._thread.join()

    def reading(self) -> ClockReading:
        return during(self.samples or [self.read(self.device)])


def over(before: ClockReading, after: ClockReading) -> ClockReading:
    """A size's reading from the ones before and after it: the figures after, throttled if either was,
    with every reason either showed (a size that began throttled was timed throttled)."""
    reasons = tuple(dict.fromkeys((*before.reasons, *after.reasons)))
    flags = [t for t in (before.throttled, after.throttled) if t is not None]
    return ClockReading(cpu_mhz=after.cpu_mhz if after.cpu_mhz is not None else before.cpu_mhz,
                        gpu_sm_mhz=after.gpu_sm_mhz, gpu_temperature_c=after.gpu_temperature_c,
                        gpu_power_w=after.gpu_power_w, reasons=reasons, throttled=any(flags) if flags else None)
