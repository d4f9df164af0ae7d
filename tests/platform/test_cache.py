"""Cold or warm cache: the last-level cache's size (fake /sys trees), the flush buffers, and the rule that a flush
never falls inside a timed interval (a fake clock logs every read beside every flush), in timing.measure and in
the race's interleaved rounds; the switch through the config, the CLI, the JSON and the chart's title."""

from __future__ import annotations

import pytest
import torch

from core.charts.matmul import gflops_figure, time_figure
from core.cli import build_parser
from core.cli.matmul import config_from_args
from core.errors import DashboardError
from core.matmul import engine, paired
from core.matmul.config import MatmulOptions
from core.matmul.series import Series
from core.matmul.config import SweepConfig
from core.matmul.report import results_frame, sweep_of
from core.platform import cache, clock, timing
from core.results.kinds import read_result

CPU = torch.device("cpu")


def _sys_tree(root, caches):
    """A fake /sys/devices/system/cpu with (cpu, index, level, type, size) entries."""
    for cpu, index, level, kind, size in caches:
        d = root / f"cpu{cpu}" / "cache" / f"index{index}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    return root


def test_the_last_level_cache_is_the_largest_of_the_highest_level(tmp_path):
    root = _sys_tree(tmp_path, [(0, 0, 1, "Data", "32K"), (0, 1, 1, "Instruction", "32K"), (0, 2, 2, "Unified", "512K"),
                                (0, 3, 3, "Unified", "32768K"), (1, 3, 3, "Unified", "16M")])
    assert cache.llc_bytes(root) == 32 * 2**20


def test_without_sys_sysconf_then_the_fallback(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "llc_from_sysconf", lambda: 8 * 2**20)
    assert cache.llc_bytes(tmp_path) == 8 * 2**20
    monkeypatch.setattr(cache, "llc_from_sysconf", lambda: None)
    assert cache.llc_bytes(tmp_path) == cache.FALLBACK_LLC_BYTES
    odd = _sys_tree(tmp_path / "odd", [(0, 3, 3, "Unified", "4G"), (0, 2, 2, "Unified", "nonsense")])
    assert cache.llc_bytes(odd) == cache.FALLBACK_LLC_BYTES  # 4 GiB is a misread, not a cache


@pytest.mark.parametrize("text, size", [("32K", 32768), ("8M", 8 * 2**20), ("1024", 1024), ("", None), ("x", None)])
def test_sizes_as_sys_writes_them(text, size):
    assert cache.parse_size(text) == size


def test_the_gpu_flush_is_twice_its_l2(fake_cuda):
    assert cache.gpu_l2_bytes(torch.device("cuda:0")) == cache.FALLBACK_L2_BYTES  # the fake's properties lack it
    assert cache.flush_bytes(torch.device("cuda:0"), "cold") == 256 * 2**20  # do_bench's buffer
    fake_cuda.props.L2_cache_size = 50 * 2**20  # an H100's
    assert cache.gpu_l2_bytes(torch.device("cuda:0")) == 50 * 2**20
    assert cache.flush_bytes(torch.device("cuda:0"), "cold") == 2 * 50 * 2**20  # one L2 may leave operands cached


@pytest.mark.parametrize("name", ["T4", "A100-40GB", "H100"])
def test_a_cold_gpu_call_is_timed_by_events_recorded_after_the_flush(gpu_model, monkeypatch, name):
    """Issue 33: one cold call read by the host clock carries launch and synchronize latency (here 1 ms a read of
    the fake host clock); CUDA events recorded after the flush time the kernel alone (20 us on the GPU's timeline)."""
    fake = gpu_model(name)
    log = fake.events
    monkeypatch.setattr(clock, "read_clock", LoggedClock(log).read)
    flush = LoggedFlush(log)
    gpu = torch.device("cuda:0")
    m = timing.measure(lambda: fake.work(2e-5), gpu, budget_s=0.05, flush=flush)
    assert m.calls_per_block == 1 and m.times_s == pytest.approx((2e-5,) * m.samples)
    assert m.first_call_s == pytest.approx(2e-5)
    assert "read" not in log  # no host clock in a cold GPU sample
    calls = [i for i, e in enumerate(log) if e == "kernel"]
    assert all(log[i - 2:i + 3] == ["flush", "record", "kernel", "record", "event sync"] for i in calls)

    log.clear()
    real = engine.make_operands
    monkeypatch.setattr(engine, "make_operands", lambda device, *a, **kw: real(CPU, *a, **kw))
    monkeypatch.setattr(paired, "cache_flush", lambda device, choice: LoggedFlush(log) if choice == "cold" else None)
    monkeypatch.setattr(engine, "product", lambda ops: lambda: fake.work(3e-5))
    options = MatmulOptions(budget_s=0.02, unsynced=False, check_error=False, cache="cold")
    (point,) = paired.time_interleaved([Series("cuda:0", "float32", tf32=False)], 16, options)
    assert point.calls_per_block == 1 and point.times_s == pytest.approx((3e-5,) * point.samples)
    calls = [i for i, e in enumerate(log) if e == "kernel"]
    assert calls and all(log[i - 2:i + 3] == ["flush", "record", "kernel", "record", "event sync"] for i in calls)
    gpu_flush = cache.flush_bytes(gpu, "cold")
    assert gpu_flush == 2 * fake.props.L2_cache_size  # 8 / 80 / 100 MB


def test_a_cold_cpu_flush_touches_twice_the_last_level_cache(monkeypatch):
    monkeypatch.setattr(cache, "llc_bytes", lambda: 2**20)
    assert cache.cache_flush(CPU, "warm") is None
    flush = cache.cache_flush(CPU, "cold")
    assert flush is not None and flush.buffer.numel() * 4 == 2 * 2**20 and flush.cost_s > 0
    before = int(flush.buffer[0])
    flush()
    assert int(flush.buffer[0]) == before + 1  # read and written, not skipped
    with pytest.raises(DashboardError, match="cache must be one of warm, cold"):
        cache.cache_flush(CPU, "lukewarm")


class LoggedClock:
    """A fake clock: every read advances `step` and is logged, beside every flush."""

    def __init__(self, log: list[str], step: float = 1e-3) -> None:
        self.log, self.t, self.step = log, 0.0, step

    def read(self) -> float:
        self.log.append("read")
        self.t += self.step
        return self.t


class LoggedFlush:
    def __init__(self, log: list[str], cost_s: float = 0.0) -> None:
        self.log, self.cost_s = log, cost_s

    def __call__(self) -> None:
        self.log.append("flush")


def assert_never_timed(log: list[str]) -> None:
    """Reads come in (start, stop) pairs, one per timed block: no flush between a start and its stop."""
    inside = False
    for event in log:
        if event == "read":
            inside = not inside
        else:
            assert not inside, f"a flush inside a timed interval: {log}"
    assert not inside


def test_measure_flushes_before_every_block_and_never_inside_one(monkeypatch):
    log: list[str] = []
    monkeypatch.setattr(clock, "read_clock", LoggedClock(log).read)
    m = timing.measure(lambda: None, CPU, budget_s=0.05, flush=LoggedFlush(log))
    assert_never_timed(log)
    assert m.calls_per_block == 1  # one call per sample: the flush comes before each
    assert log.count("flush") == log.count("read") // 2 == m.samples + 1  # + the cold call (the probe is a sample)
    warm: list[str] = []
    monkeypatch.setattr(clock, "read_clock", LoggedClock(warm, step=1e-6).read)
    assert timing.measure(lambda: None, CPU, budget_s=0.05).calls_per_block > 1 and "flush" not in warm


def test_the_flush_cost_counts_against_the_budget(monkeypatch):
    log: list[str] = []
    monkeypatch.setattr(clock, "read_clock", LoggedClock(log).read)
    free = timing.measure(lambda: None, CPU, budget_s=0.1, min_samples=1, flush=LoggedFlush(log, 0.0))
    costly = timing.measure(lambda: None, CPU, budget_s=0.1, min_samples=1, flush=LoggedFlush(log, 9e-3))
    assert costly.samples < free.samples / 5


def test_cold_rounds_flush_outside_the_clock_one_call_per_block(monkeypatch):
    log: list[str] = []
    monkeypatch.setattr(clock, "read_clock", LoggedClock(log).read)
    monkeypatch.setattr(paired, "cache_flush", lambda device, choice: LoggedFlush(log) if choice == "cold" else None)
    series = [Series("cpu", "float32", threads=1), Series("cpu", "float32", threads=2)]
    options = MatmulOptions(budget_s=0.02, unsynced=False, check_error=False, cache="cold")
    points = paired.time_interleaved(series, 16, options)
    assert_never_timed(log)
    assert all(p.calls_per_block == 1 for p in points) and points[0].samples == points[1].samples
    assert log.count("flush") == log.count("read") // 2


def test_the_engine_passes_the_flush_to_the_measurement(monkeypatch):
    seen = []
    monkeypatch.setattr(engine, "cache_flush", lambda device, choice: f"flush:{choice}")
    monkeypatch.setattr(engine, "measure_product",
                        lambda fn, device, *, budget_s, unsynced, flush=None: seen.append(flush) or (
                            timing.Measurement((1e-3,) * 3, 1, 1e-3), None))
    engine.time_matmul(Series("cpu", "float32"), 8, MatmulOptions(budget_s=0.01, check_error=False, cache="cold"))
    assert seen == ["flush:cold"]


def test_the_switch_reaches_the_config_the_cli_the_json_and_the_chart():
    with pytest.raises(DashboardError, match="cache must be one of"):
        SweepConfig(options=MatmulOptions(cache="hot"))
    config = SweepConfig(sizes=(8,), threads=(1,), options=MatmulOptions(cache="cold"))
    assert config.options.cache == "cold" and config.to_dict()["cache"] == "cold"
    args = build_parser("matmul").parse_args(["matmul", "--sizes", "8", "--devices", "cpu", "--threads", "1",
                                              "--cache", "cold"])
    assert config_from_args(args).options.cache == "cold"
    assert config_from_args(build_parser("matmul").parse_args(["matmul"])).options.cache == "warm"
    with pytest.raises(DashboardError, match="invalid choice: 'hot'"):
        build_parser("matmul").parse_args(["matmul", "--cache", "hot"])
    point = engine.measured_point(Series("cpu", "float32", threads=1), 8, timing.Measurement((1e-5,) * 3, 1, 1e-5),
                                  None, None, None, None, 1, None)
    sweep = sweep_of(config, [Series("cpu", "float32", threads=1)], [point])
    obj = sweep.to_json()
    assert obj["cache"] == "cold" and read_result("matmul", obj).cache == "cold"
    old = dict(obj)
    old.pop("cache")
    assert read_result("matmul", old).cache is None  # files older than the switch: warm, unsaid
    bad = obj | {"cache": "tepid"}
    with pytest.raises(DashboardError, match="cache: expected one of warm, cold"):
        read_result("matmul", bad)
    frame = results_frame(sweep.results)
    assert "cold cache" in time_figure(frame, cache="cold").layout.title.text
    assert "warm cache" in gflops_figure(frame, cache="warm").layout.title.text
    assert "cache" not in time_figure(frame).layout.title.text


def test_the_memory_guard_counts_the_flush_buffer_before_anything_is_allocated(fake_cuda, monkeypatch):
    """Cold caches allocate a flush buffer beside the operands: a size that fits warm but not with the buffer is
    refused by the guard (not killed by the kernel, not an out-of-memory error halfway)."""
    from core.matmul import guards
    from core.matmul.choices import size_choices
    from core.matmul.guards import DoesNotFit, check_memory, memory_need, refusal

    gpu = torch.device("cuda:0")
    fake_cuda.props.L2_cache_size = 50 * 2**20
    warm = memory_need(gpu, "float32", 4096)
    cold = memory_need(gpu, "float32", 4096, cache="cold")
    assert warm.flush_bytes == 0 and cold.flush_bytes == 2 * 50 * 2**20  # twice the L2 (issue 33)
    assert cold.device_bytes == warm.device_bytes + 2 * 50 * 2**20
    monkeypatch.setattr(cache, "llc_bytes", lambda: 32 * 2**20)
    assert memory_need(CPU, "float32", 64, cache="cold").flush_bytes == 2 * 32 * 2**20  # RAM, twice the LLC

    free = warm.device_bytes + 10 * 2**20  # room for the operands, not for the buffer
    monkeypatch.setattr(guards, "free_device_bytes", lambda device: free if device.type == "cuda" else 64 * 2**30)
    check_memory(warm)
    with pytest.raises(DoesNotFit, match=r"cold-cache flush buffer 100 MiB\) but only"):
        check_memory(cold)

    monkeypatch.setattr(engine, "make_operands", lambda *a, **k: pytest.fail("allocated before the memory check"))
    monkeypatch.setattr(cache, "cache_flush", lambda *a, **k: pytest.fail("flush allocated before the memory check"))
    series = Series("cuda:0", "float32", tf32=False)
    skipped = refusal(MatmulOptions(cache="cold", check_error=False), series, 4096)
    assert skipped is not None and skipped.reason == "memory" and "flush buffer" in skipped.message
    # the page's size slider offers n = 4096 warm but not cold
    assert size_choices(["cuda:0"], ["float32"], ceiling=4096)[-1] == 4096
    assert size_choices(["cuda:0"], ["float32"], ceiling=4096, cache="cold")[-1] == 2048
    assert refusal(MatmulOptions(check_error=False), series, 4096) is None
    with pytest.raises(DoesNotFit, match="flush buffer"):
        engine.time_matmul(series, 4096, MatmulOptions(cache="cold", check_error=False))
