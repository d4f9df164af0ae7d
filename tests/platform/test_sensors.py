"""The clock a size ran at: the CPU's frequency (psutil faked), a GPU's SM clock, temperature, power and throttle
reasons through a faked NVML, the reading before and after a size, throttled sizes marked in the point, the
sweep's notes, the table and the JSON; NVML never imported without a GPU; older files still import."""

from __future__ import annotations

import sys
import time
from collections import namedtuple
from dataclasses import replace
from types import ModuleType

import psutil
import pytest
import torch

from core.platform.units import readable
from core.results.table import human_table
from core.matmul import engine, paired
from core.matmul.config import MatmulOptions
from core.matmul.engine import measured_point
from core.matmul.series import Series
from core.matmul.config import SweepConfig
from core.matmul.report import clock_summary, sweep_of, throttle_notes
from core.platform import sensors
from core.platform.sensors import ClockReading, during, over
from core.platform.timing import Measurement
from core.results.kinds import read_result
from core.results.matmul import MatmulPoint, MatmulSweep

Freq = namedtuple("Freq", "current min max")


class FakeNvml(ModuleType):
    """pynvml as the tests need it: one GPU whose readings and throttle bits the test sets."""

    def __init__(self, reasons: int = 0, *, new_api: bool = True) -> None:
        super().__init__("pynvml")
        self.reasons, self.inits, self.handles = reasons, 0, []
        self.sm_mhz, self.temp_c, self.power_mw = 1980, 61, 350_000
        if new_api:
            self.nvmlDeviceGetCurrentClocksEventReasons = lambda h: self.reasons
        else:
            self.nvmlDeviceGetCurrentClocksThrottleReasons = lambda h: self.reasons

    def nvmlInit(self) -> None:
        self.inits += 1

    def nvmlDeviceGetHandleByIndex(self, index):
        self.handles.append(("index", index))
        return ("gpu", index)

    def nvmlDeviceGetHandleByPciBusId(self, bus):
        self.handles.append(("pci", bus))
        return ("gpu", bus)

    def nvmlDeviceGetClockInfo(self, handle, kind):
        assert kind == sensors.NVML_CLOCK_SM
        return self.sm_mhz

    def nvmlDeviceGetTemperature(self, handle, sensor):
        assert sensor == sensors.NVML_TEMPERATURE_GPU
        return self.temp_c

    def nvmlDeviceGetPowerUsage(self, handle):
        return self.power_mw


@pytest.fixture
def fresh_nvml(monkeypatch):
    """Forget any NVML a previous test loaded; install the given fake as `pynvml`."""
    monkeypatch.setattr(sensors, "_nvml", None)
    monkeypatch.setattr(sensors, "_nvml_tried", False)

    def install(fake: ModuleType | None) -> ModuleType | None:
        monkeypatch.setitem(sys.modules, "pynvml", fake)  # None: `import pynvml` raises ImportError
        return fake
    return install


def test_the_cpu_frequency_where_the_os_reports_it(monkeypatch):
    monkeypatch.setattr(psutil, "cpu_freq", lambda: Freq(2600.0, 1500.0, 3640.0))
    assert sensors.read_clocks(torch.device("cpu")) == ClockReading(cpu_mhz=2600.0)
    monkeypatch.setattr(psutil, "cpu_freq", lambda: None)  # many VMs
    assert sensors.cpu_mhz() is None
    monkeypatch.setattr(psutil, "cpu_freq", lambda: Freq(0.0, 0.0, 0.0))
    assert sensors.cpu_mhz() is None

    def refuse():
        raise NotImplementedError("no cpufreq")
    monkeypatch.setattr(psutil, "cpu_freq", refuse)
    assert sensors.cpu_mhz() is None


def test_a_gpu_reading_through_nvml(fake_cuda, fresh_nvml):
    nvml = fresh_nvml(FakeNvml(reasons=0x1))  # idle: not throttling
    reading = sensors.read_clocks(torch.device("cuda:0"))
    assert reading == ClockReading(gpu_sm_mhz=1980.0, gpu_temperature_c=61.0, gpu_power_w=350.0, reasons=(),
                                   throttled=False)
    nvml.reasons = 0x4 | 0x40 | 0x1  # power cap and hardware thermal, idle ignored
    hot = sensors.read_clocks(torch.device("cuda:0"))
    assert hot.reasons == ("sw_power_cap", "hw_thermal") and hot.throttled
    assert nvml.inits == 1 and nvml.handles[0] == ("index", 0)  # initialised once; the fake's props have no PCI id


def test_the_handle_is_found_by_pci_bus_id_where_torch_gives_it(fake_cuda, fresh_nvml):
    nvml = fresh_nvml(FakeNvml(new_api=False))  # older nvidia-ml-py: the throttle-reasons name
    fake_cuda.props.pci_bus_id, fake_cuda.props.pci_device_id, fake_cuda.props.pci_domain_id = 0x1E, 0, 0
    assert sensors.read_clocks(torch.device("cuda:0")).throttled is False
    assert nvml.handles == [("pci", "00000000:1E:00.0")]


def test_without_nvml_or_with_a_refusing_driver_the_gpu_fields_are_not_measured(fake_cuda, fresh_nvml, monkeypatch):
    fresh_nvml(None)
    assert sensors.read_clocks(torch.device("cuda:0")) == ClockReading()
    fake = FakeNvml()
    monkeypatch.setattr(sensors, "_nvml", fake)
    monkeypatch.setattr(sensors, "_nvml_tried", True)

    def not_supported(handle):
        raise RuntimeError("NVMLError_NotSupported")
    fake.nvmlDeviceGetPowerUsage = not_supported  # each field is read on its own: the others stay (issue 33)
    assert sensors.read_clocks(torch.device("cuda:0")) == ClockReading(
        gpu_sm_mhz=1980.0, gpu_temperature_c=61.0, gpu_power_w=None, reasons=(), throttled=False)
    fake.nvmlDeviceGetCurrentClocksEventReasons = not_supported  # a driver without the reasons call
    assert sensors.read_clocks(torch.device("cuda:0")) == ClockReading(
        gpu_sm_mhz=1980.0, gpu_temperature_c=61.0, gpu_power_w=None, reasons=(), throttled=None)
    fake.nvmlDeviceGetHandleByIndex = not_supported
    assert sensors.read_clocks(torch.device("cuda:0")) == ClockReading()


def test_no_gpu_never_imports_nvml(fresh_nvml, monkeypatch):
    imported = []
    monkeypatch.setattr(sensors.importlib, "import_module", lambda name: imported.append(name))
    sensors.read_clocks(torch.device("cpu"))
    assert imported == []


def test_a_size_that_began_or_ended_throttled_is_throttled():
    cool = ClockReading(gpu_sm_mhz=1980.0, throttled=False)
    hot = ClockReading(gpu_sm_mhz=1410.0, reasons=("sw_thermal",), throttled=True)
    assert over(hot, cool).throttled and over(hot, cool).reasons == ("sw_thermal",)
    assert over(cool, hot).gpu_sm_mhz == 1410.0 and over(cool, hot).throttled
    assert over(cool, cool).throttled is False and over(ClockReading(), ClockReading()).throttled is None
    assert over(ClockReading(cpu_mhz=2600.0), ClockReading()).cpu_mhz == 2600.0


def test_the_rounds_read_the_cpu_before_and_after_and_sample_the_gpu_while_its_blocks_run(fake_cuda, monkeypatch):
    """A CPU series and a (fake) GPU series at one size: each point gets its own device's clock; the GPU's is
    read only while a GPU block runs (issue 33: an idle GPU shows neither the slowdown nor the clock of the work)."""
    state = {"gpu_block": False}
    readings = {"cpu": [ClockReading(cpu_mhz=2600.0), ClockReading(cpu_mhz=3000.0)]}
    taken: list[bool] = []

    def read(device):
        if device.type == "cpu":
            return readings["cpu"].pop(0)
        taken.append(state["gpu_block"])
        return ClockReading(gpu_sm_mhz=1410.0, reasons=("sw_thermal",), throttled=True)
    monkeypatch.setattr(paired, "read_clocks", read)
    monkeypatch.setattr(sensors, "SAMPLE_INTERVAL_S", 0.001)

    def interleave(blocks, budget_s, **kw):
        state["gpu_block"] = True
        with contenders[1].sampler.working():
            time.sleep(0.05)
        state["gpu_block"] = False
        time.sleep(0.02)  # a CPU block: the sampler waits
        return [Measurement((1e-3,) * 3, 1, 1e-3)] * len(blocks)
    contenders: list = []
    real_contenders = paired._contenders
    monkeypatch.setattr(paired, "_contenders", lambda *a: contenders.extend(real_contenders(*a)) or contenders)
    monkeypatch.setattr(paired, "interleave", interleave)
    real = engine.make_operands
    monkeypatch.setattr(engine, "make_operands", lambda device, *a, **kw: real(torch.device("cpu"), *a, **kw))
    series = [Series("cpu", "float32", threads=1), Series("cuda:0", "float64")]
    cpu, gpu = paired.time_interleaved(series, 8, MatmulOptions(budget_s=0.01, unsynced=False, check_error=False))
    assert (cpu.clock.cpu_mhz, cpu.clock.throttled, cpu.clock.gpu_sm_mhz) == (3000.0, None, None)
    assert (gpu.clock.gpu_sm_mhz, gpu.clock.throttle, gpu.clock.throttled) == (1410.0, "sw_thermal", True)
    assert readings == {"cpu": []} and taken and all(taken)


def test_a_size_s_gpu_reading_is_made_from_the_samples_taken_while_it_ran():
    capped = [ClockReading(gpu_sm_mhz=mhz, gpu_temperature_c=t, gpu_power_w=70.0, reasons=("sw_power_cap",),
                           throttled=True) for mhz, t in ((1590.0, 60.0), (900.0, 71.0), (1000.0, 70.0))]
    size = during(capped)
    assert (size.gpu_sm_mhz, size.gpu_temperature_c, size.gpu_power_w) == (1000.0, 71.0, 70.0)
    assert size.reasons == ("sw_power_cap",) and size.throttled is False  # the power cap explains the drop
    assert size.record().power_limited and not size.record().slowed
    hot = during([*capped, ClockReading(gpu_sm_mhz=800.0, reasons=("sw_thermal",), throttled=True)])
    assert hot.throttled is True and hot.record().slowed and hot.reasons == ("sw_power_cap", "sw_thermal")
    unexplained = [ClockReading(gpu_sm_mhz=1590.0, throttled=False), ClockReading(gpu_sm_mhz=1000.0, throttled=False)]
    assert during(unexplained).throttled is True  # a clock drop no reason explains
    assert during([ClockReading(gpu_sm_mhz=1590.0), ClockReading(gpu_sm_mhz=1500.0)]).throttled is None
    assert during([ClockReading(gpu_sm_mhz=1590.0), ClockReading(gpu_sm_mhz=1000.0)]).throttled is True


def _race_on_a_fake_gpu(fake, monkeypatch, sizes, watts) -> MatmulSweep:
    """A CPU series against the fake GPU's float32, the GPU's products running (on the CPU, 10 ms each) inside
    FakeCuda.running(watts(n)): its NVML sees the load only then."""
    monkeypatch.setattr(sensors, "SAMPLE_INTERVAL_S", 0.002)
    monkeypatch.setattr(paired, "others_between", lambda before, after: 0.0)  # a quiet machine, whatever this one is
    gpu_sizes: dict[int, int] = {}
    real_make, real_product = engine.make_operands, engine.product

    def make(device, dtype, n, **kw):
        ops = real_make(torch.device("cpu"), dtype, n, **kw)
        if device.type == "cuda":
            gpu_sizes[id(ops)] = n
        return ops

    def product(ops):
        call = real_product(ops)
        if id(ops) not in gpu_sizes:
            return call

        def on_gpu():
            with fake.running(watts(gpu_sizes[id(ops)])):
                time.sleep(0.01)
                return call()
        return on_gpu
    monkeypatch.setattr(engine, "make_operands", make)
    monkeypatch.setattr(engine, "product", product)
    series = [Series("cpu", "float32", threads=1), Series("cuda:0", "float32", tf32=False)]
    options = MatmulOptions(budget_s=0.03, unsynced=False, check_error=False)
    points = [p for n in sizes for p in paired.time_interleaved(series, n, options)]
    return sweep_of(SweepConfig(sizes=sizes, devices=("cpu", "cuda:0")), series, points)


def test_a_t4_at_its_power_cap_in_the_large_sizes_keeps_its_verdicts_and_says_so(gpu_model, monkeypatch):
    """Issue 33: read while idle, a T4's reasons missed the cap, or (caught) withheld every large size's call."""
    t4 = gpu_model("T4")
    sweep = _race_on_a_fake_gpu(t4, monkeypatch, (16, 64), lambda n: 40.0 if n < 64 else 140.0)  # cap: 70 W
    small, large = [p for p in sweep.results if p.is_gpu]
    assert small.clock.throttle is None and small.clock.gpu_sm_mhz == 1590.0 and small.clock.gpu_power_w == 40.0
    assert large.clock.throttle == "sw_power_cap" and not large.clock.throttled
    assert large.clock.gpu_sm_mhz == 795.0 and large.clock.gpu_power_w == 70.0  # the clock while it ran
    assert [(v.n, v.call, v.a) for v in sweep.verdicts] == [(16, "faster", "cpu float32 1 thread"),
                                                           (64, "faster", "cpu float32 1 thread")]
    assert any("the GPU was at its power limit while n = 64 ran" in note for note in sweep.notes)
    assert not any("throttled" in note for note in sweep.notes)


def test_a_thermal_slowdown_while_the_size_runs_still_makes_it_unclear(gpu_model, monkeypatch):
    a100 = gpu_model("A100-40GB")
    nvml = sensors.nvml()
    nvml.thermal.add("a100-40gb-0000")
    sweep = _race_on_a_fake_gpu(a100, monkeypatch, (16,), lambda n: 250.0)
    (gpu,) = [p for p in sweep.results if p.is_gpu]
    assert gpu.clock.throttled and gpu.clock.throttle == "sw_thermal" and gpu.clock.gpu_temperature_c == 90.0
    (v,) = sweep.verdicts
    assert v.call == "unclear" and "the GPU throttled (sw_thermal)" in v.why
    assert any("the GPU throttled (sw_thermal) while n = 16 was timed" in note for note in sweep.notes)


def _point(series: Series, n: int, **clock) -> MatmulPoint:
    p = measured_point(series, n, Measurement((1e-3,) * 3, 1, 1e-3), None, None, None, None,
                       series.threads, None)
    return replace(p, **clock)


def test_throttled_sizes_are_noted_shown_in_the_table_and_saved():
    gpu, cpu = Series("cuda:0", "float32", tf32=False), Series("cpu", "float32", threads=2)
    points = [_point(cpu, 512, cpu_mhz=2600.0), _point(cpu, 1024, cpu_mhz=2650.0),
              _point(gpu, 512, gpu_sm_mhz=1980.0, gpu_temperature_c=60.0, gpu_power_w=300.0, throttled=False),
              _point(gpu, 1024, gpu_sm_mhz=1410.0, gpu_temperature_c=84.0, gpu_power_w=350.0, throttled=True,
                     throttle="sw_power_cap, sw_thermal")]
    power, note = throttle_notes(points)
    assert power.startswith("cuda:0 float32 TF32 off: the GPU was at its power limit while n = 1,024 ran")
    assert "cuda:0 float32 TF32 off: the GPU throttled (sw_power_cap, sw_thermal) while n = 1,024 was timed" in note
    assert clock_summary(points) == ("Clock during the run: CPU 2,600-2,650 MHz; "
                                     "cuda:0 SM 1,410-1,980 MHz, 60-84 °C, 300-350 W")
    sweep = sweep_of(SweepConfig(sizes=(512, 1024), devices=("cpu", "cuda:0")), [gpu, cpu], points)
    assert note in sweep.notes and power in sweep.notes
    table = human_table(sweep.results)
    assert list(readable(table)["throttled"]) == ["", "", "", "sw_power_cap, sw_thermal"]
    assert list(table["CPU MHz"])[:2] == [2600, 2650]
    from core.cli.matmul import render
    table = next(t for t in render(sweep).split("\n\n") if "throttled" in t.splitlines()[0])  # tables fit 100 columns
    header, _, *rows = table.splitlines()
    assert header.rstrip().endswith("throttled") and rows[3].endswith("sw_power_cap, sw_thermal")  # the CLI's table too
    obj = sweep.to_json()
    back = read_result("matmul", obj)
    assert back.results[3].clock.throttled is True and back.results[0].clock.cpu_mhz == 2600.0
    assert obj["results"][3]["clock"]["throttle"] == "sw_power_cap, sw_thermal"  # a nested record in the file
    flat = sweep.to_json()  # a file written before `clock`: its readings were keys of the point
    for row in flat["results"]:
        row.update(row.pop("clock", {}))
    assert read_result("matmul", flat) == back
    old = sweep.to_json()
    for row in old["results"]:
        row.pop("clock", None)
    older = read_result("matmul", old)
    assert older.results[0].clock.cpu_mhz is None and clock_summary(older.results) is None
    assert not throttle_notes(older.results)
    assert "clock" not in _point(cpu, 8).to_json()  # not read: the key is left out, as before the field
