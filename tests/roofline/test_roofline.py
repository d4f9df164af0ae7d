"""The roofline: the model and its crossover on synthetic constants, the theoretical peaks, the probes and a
whole run under a fake clock, the GPU paths under the fake CUDA, and the result's JSON round trip."""

import math
from dataclasses import replace
from pathlib import Path

import pytest

from tests.result_samples import save_payload
import torch

from core.errors import DashboardError
from core.platform import clock
from core.platform.jobs import JobHooks
from core.results.kinds import read_result
from core.results.files import read_import
from core.results.jsonio import dumps
from core.results.crossover import Crossover
from core.results.roofline import DeviceRoofs, RooflinePoint, RooflineRun
from core.platform import timing
from core.platform.timing import Measurement
from core.roofline import probes, spread, theory
from core.roofline.explain import crossover_sentence, model_error_text, model_errors
from core.roofline.model import RooflineModel, intensity, predict_crossover
from core.roofline.run import RooflineConfig, model_of, plan, run_roofline
from core.charts.roofline import model_figure, roofline_figure, share_of_roof
from core.store.database import open_store


class StepClock:
    """Every clock read advances `step` seconds: each timed block lasts exactly one step."""

    def __init__(self, step: float) -> None:
        self.t, self.step = 0.0, step

    def read(self) -> float:
        self.t += self.step
        return self.t


@pytest.fixture
def step_clock(monkeypatch) -> StepClock:
    fake = StepClock(0.02)
    monkeypatch.setattr(clock, "read_clock", fake.read)
    monkeypatch.setattr(probes, "CPU_STREAM_BYTES", 1 << 16)  # the fake clock times every copy alike: keep them cheap
    return fake


# ---------------------------------------------------------------- the model


def test_intensity_is_2n_over_3s():
    assert intensity(96, "float32") == pytest.approx(16.0)
    assert intensity(96, "float64") == pytest.approx(8.0)


def test_time_is_overhead_plus_the_slower_roof():
    m = RooflineModel(overhead_s=1e-5, peak_gflops=100.0, bandwidth_gbs=10.0)
    # n = 10: compute 2e3 / 1e11 = 2e-8 s, memory 1200 B / 1e10 = 1.2e-7 s: memory bound
    assert m.time_s(10) == pytest.approx(1e-5 + 1.2e-7)
    # n = 1000: compute 2e9 / 1e11 = 0.02 s, memory 1.2e7 / 1e10 = 1.2e-3 s: compute bound
    assert m.time_s(1000) == pytest.approx(1e-5 + 0.02)
    assert m.ridge_intensity == pytest.approx(10.0)
    assert m.roof_gflops(1.0) == 10.0 and m.roof_gflops(50.0) == 100.0
    assert m.copies_s(1000) == 0.0 and m.end_to_end_s(1000) == m.time_s(1000)


def test_copies_count_two_inputs_in_and_one_output_out():
    m = RooflineModel(1e-5, 1000.0, 100.0, "float32", h2d_gbs=10.0, d2h_gbs=5.0)
    assert m.copies_s(1000) == pytest.approx(2 * 4e6 / 1e10 + 4e6 / 5e9)


def test_predicted_crossover_solves_equal_times():
    slow_start = RooflineModel(overhead_s=1e-5, peak_gflops=1000.0, bandwidth_gbs=1e6)  # fast roof, dear start
    cheap_start = RooflineModel(overhead_s=1e-6, peak_gflops=100.0, bandwidth_gbs=1e6)
    # 1e-6 + 2n^3/1e11 = 1e-5 + 2n^3/1e12  ->  n^3 = 9e-6 / 1.8e-11 = 5e5
    assert predict_crossover(slow_start, cheap_start) == pytest.approx(5e5 ** (1 / 3), rel=1e-6)
    assert predict_crossover(cheap_start, slow_start) is None  # never ahead at large n
    better = RooflineModel(overhead_s=1e-7, peak_gflops=1000.0, bandwidth_gbs=1e6)
    assert predict_crossover(better, cheap_start, lo=4) == 4.0  # ahead everywhere


def test_copies_push_the_end_to_end_crossover_up():
    cpu = RooflineModel(2e-6, 150.0, 20.0)
    gpu = RooflineModel(1e-5, 40_000.0, 3000.0, h2d_gbs=10.0, d2h_gbs=10.0)
    compute_only = predict_crossover(gpu, cpu)
    with_copies = predict_crossover(gpu, cpu, end_to_end=True)
    assert compute_only is not None and with_copies is not None and with_copies > compute_only


def test_a_model_needs_positive_roofs():
    with pytest.raises(DashboardError, match="positive peak"):
        RooflineModel(1e-6, 0.0, 10.0)


# ---------------------------------------------------------------- theoretical peaks


def test_cpu_peak_is_cores_times_clock_times_simd_and_says_it_guesses():
    intel = theory.cpu_peak(2, "float32", capability="AVX2", name="Intel Xeon", clock=(3.0, "test"))
    assert intel.gflops == pytest.approx(2 * 3.0 * 32) and "a guess" in intel.note
    assert theory.cpu_peak(1, "float32", capability="AVX512", name="Intel Xeon", clock=(2.0, "t")).gflops == 128.0
    amd = theory.cpu_peak(2, "float32", capability="AVX512", name="AMD EPYC", clock=(3.64, "t"))
    assert amd.gflops == pytest.approx(2 * 3.64 * 32)  # the issue's 233 GFLOP/s
    assert theory.cpu_peak(1, "float64", capability="AVX2", name="x", clock=(1.0, "t")).gflops == 16.0
    unknown = theory.cpu_peak(1, "float32", capability="AVX2", name="x", clock=(None, "unknown"))
    assert unknown.gflops is None and "unknown" in unknown.note


def test_cpu_clock_prefers_cpufreq_then_cpuinfo():
    files = {"cpuinfo_max_freq": "3640000\n", "cpuinfo": "model name\t: X\ncpu MHz\t\t: 2596.1\n"}

    def read(path: Path) -> str:
        if path.name not in files:
            raise OSError("absent")
        return files[path.name]

    assert theory.cpu_clock_ghz(read) == (pytest.approx(3.64), "cpufreq maximum")
    del files["cpuinfo_max_freq"]
    ghz, source = theory.cpu_clock_ghz(read)
    assert ghz == pytest.approx(2.5961) and "/proc/cpuinfo" in source


def test_cuda_peak_from_device_properties(fake_cuda):
    missing = theory.cuda_peak(0, "float32")  # the fake, like older torch, has no clock_rate
    assert missing.gflops is None and "clock rate" in missing.note
    fake_cuda.props.clock_rate = 1_980_000  # kHz, as CUDA reports it
    peak = theory.cuda_peak(0, "float32")
    assert peak.gflops == pytest.approx(132 * 1.98 * 2 * 128) and "132 SMs" in peak.note


# ---------------------------------------------------------------- probes and a whole run, fake clock


def test_bandwidth_counts_read_plus_write_bytes(step_clock):
    nbytes = 1 << 20
    gbs = probes.bandwidth_gbs(torch.device("cpu"), torch.float32, budget_s=0.2, nbytes=nbytes)
    assert gbs == pytest.approx(2 * nbytes / 0.02 / 1e9)


def test_launch_cost_is_the_median_of_a_tiny_product(step_clock):
    assert probes.launch_s(torch.device("cpu"), torch.float32, budget_s=0.2) == pytest.approx(0.02)


def test_wake_cost_is_what_a_split_add_takes_beyond_its_share(monkeypatch):
    """One thread: 40 µs of work. Split over two: 20 µs each, and the 30 µs measured holds 10 µs of waking.
    The two are timed in alternation (A, B, B, A, ...), so a neighbour slows both alike."""
    seen = []

    def fake_block(fn, calls, device, **kw):
        seen.append(torch.get_num_threads())
        return calls * {1: 40e-6, 2: 30e-6, 4: 5e-6}[torch.get_num_threads()]

    monkeypatch.setattr(timing, "time_block", fake_block)
    before = torch.get_num_threads()
    assert probes.wake_s(2, budget_s=0.2) == pytest.approx(10e-6)
    assert torch.get_num_threads() == before, "threads restored"
    rounds = seen[6:12]  # after each one's cold call, warm probe and first block: alternating rounds
    assert rounds == [2, 1, 1, 2, 2, 1]
    assert probes.wake_s(4, budget_s=0.2) == 0.0  # faster than a perfect split: noise, never a negative cost


def test_the_fixed_costs_are_a_low_quantile_not_the_median(monkeypatch):
    """A neighbour's stalls only add time: three of eight blocks slowed tenfold leave the launch cost alone."""
    samples = (1e-5,) * 5 + (1e-4,) * 3
    monkeypatch.setattr(timing, "measure", lambda fn, device, **kw: Measurement(samples, 1, 1e-5))
    assert probes.launch_s(torch.device("cpu"), torch.float32, budget_s=0.2) == pytest.approx(1e-5)


def test_the_wake_cost_moves_the_predicted_crossover_where_a_second_thread_pays_off():
    """Two threads double the roof but pay 20 µs to wake: they win once n^3 / p1 exceeds the wake, n = 100 here."""
    one = replace(_roofs("cpu float32 1 thread", "cpu", 1e-6, 50.0, 20.0), threads=1)
    two = replace(_roofs("cpu float32 2 threads", "cpu", 1e-6, 100.0, 20.0, wake_s=20e-6), threads=2)
    fast, slow = model_of(two), model_of(one)
    assert fast is not None and slow is not None and fast.overhead_s == pytest.approx(21e-6)
    # 1e-6 + 2n^3/50e9 = 21e-6 + 2n^3/100e9  ->  n^3 / 50e9 = 20e-6  ->  n = 100
    assert predict_crossover(fast, slow) == pytest.approx(100.0, rel=1e-6)
    without_wake = model_of(_roofs("cpu float32 2 threads", "cpu", 1e-6, 100.0, 20.0))
    # the old model: where compute outgrows memory
    assert without_wake is not None and predict_crossover(without_wake, slow) < 20
    run = RooflineRun(devices_roofs=(one, two), points=(), predicted_crossover_n=100,
                      measured_crossover=measured_at(two.series, one.series, 96), challenger=two.series,
                      baseline=one.series)
    text = crossover_sentence(run)
    assert "21 µs with 2 threads (1 µs for a product too small to split, plus 20 µs to wake the other threads)" in text
    assert "against 1 µs for cpu float32 1 thread" in text
    assert "Below n ≈ 100, 2 threads pay more to start (waking the other threads) than their faster arithmetic" in text


def test_a_whole_run_under_a_fake_clock(step_clock, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    config = RooflineConfig(devices=("cpu",), sizes=(8, 16), budget_s=1.0)
    steps = []
    result = run_roofline(config, JobHooks(on_progress=steps.append))
    assert [d.series for d in result.devices_roofs] == ["cpu float32 1 thread", "cpu float32 2 threads"]
    assert (result.challenger, result.baseline) == ("cpu float32 2 threads", "cpu float32 1 thread")
    for roofs in result.devices_roofs:
        assert roofs.launch_s == pytest.approx(0.02) and roofs.h2d_gbs is None and roofs.d2h_gbs is None
        assert roofs.peak_gflops == pytest.approx(2 * 16**3 / 0.02 / 1e9)  # the best product: n = 16
    one, two = result.devices_roofs
    assert one.wake_s is None and two.wake_s == pytest.approx(0.02 - 0.02 / 2)  # t(2) - t(1) / 2 on the step clock
    assert two.overhead_s == pytest.approx(0.03) and one.overhead_s == pytest.approx(0.02)
    assert sorted(p.n for p in result.points) == [8, 8, 16, 16]
    assert all(p.median_s == pytest.approx(0.02) for p in result.points)
    # identical constants: neither series is ever ahead, in the model or in the sweep
    assert result.predicted_crossover_n is None and result.measured_crossover_n is None
    assert steps[-1].done == steps[-1].total - 1 and not result.stopped


def test_a_stop_between_steps_returns_what_was_measured(step_clock, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    asked = []

    def stop() -> bool:  # asked before the rounds, before rounds 2 and 3, before each size: Stop once n = 8 is timed
        asked.append(1)
        return len(asked) > 4

    result = run_roofline(RooflineConfig(sizes=(8, 16), budget_s=1.0), JobHooks(should_stop=stop))
    assert result.stopped and len(result.devices_roofs) == 2 and [p.n for p in result.points] == [8, 8]


def test_the_guard_skips_a_size_the_best_rate_says_overruns(step_clock):
    result = run_roofline(RooflineConfig(devices=("cpu",), sizes=(8, 64), budget_s=0.5))
    assert all(p.n == 8 for p in result.points)
    assert any("n=64" in note and "raise the budget" in note for note in result.notes)


def test_bad_settings_are_refused():
    with pytest.raises(DashboardError, match="between 0 and"):
        RooflineConfig(budget_s=0)
    with pytest.raises(DashboardError, match="unknown dtype"):
        RooflineConfig(dtype="int8")
    with pytest.raises(DashboardError, match="at least 1"):
        RooflineConfig(sizes=(0,))


# ---------------------------------------------------------------- GPU paths, fake CUDA


def test_with_a_gpu_the_gpu_races_the_cpu(fake_cuda):
    series, pair = plan(RooflineConfig(devices=("cpu", "cuda")))
    assert [s.device for s in series] == ["cpu", "cuda:0"]
    assert pair is not None and pair[0].device == "cuda:0" and pair[1].device == "cpu"


class FakeCopies:
    """probes.Copies on the fake GPU: each direction's figure per repeat from a list the test sets."""

    made: list["FakeCopies"] = []
    rates = {("h2d", False): [12.0, 11.0, 12.0], ("d2h", False): [10.0, 10.0, 9.5],
             ("h2d", True): [25.0, 24.0, 25.0], ("d2h", True): [20.0, 8.0, 19.0]}  # one slow pinned D2H repeat

    def __init__(self, device):
        self.device, self.calls = device, []
        FakeCopies.made.append(self)

    def rate_gbs(self, direction, *, pinned, budget_s):
        self.calls.append((direction, pinned, budget_s))
        return self.rates[direction, pinned][sum(1 for c in self.calls if c[:2] == (direction, pinned)) - 1]


def test_gpu_copy_rates_are_repeated_in_the_rounds_with_their_spread(fake_cuda, monkeypatch):
    """The copy rates are probed REPEATS times like every other constant (best repeat, spread, noisy flag),
    buffers made once per series; the CPU series takes its turns between them."""
    from core.matmul.series import Series
    from core.roofline import run as roofline_run

    fake_cuda.props.clock_rate = 1_000_000
    FakeCopies.made = []
    order = []
    monkeypatch.setattr(probes, "bandwidth_gbs", lambda device, dtype, *, budget_s: order.append(device.type) or 3000.0)
    monkeypatch.setattr(probes, "launch_s", lambda device, dtype, *, budget_s: 8e-6)
    monkeypatch.setattr(probes, "wake_s", lambda threads, *, budget_s: 1e-6)
    monkeypatch.setattr(probes, "Copies", FakeCopies)
    monkeypatch.setattr(roofline_run, "cpu_reading", lambda: None)  # the load unknown: only the repeats can flag
    gpu, cpu = Series("cuda:0", "float32", tf32=False), Series("cpu", "float32", threads=2)
    found, _ = roofline_run.probe_rounds([gpu, cpu], 0.3)
    assert order == ["cuda", "cpu", "cpu", "cuda", "cuda", "cpu"]  # A, B, B, A, A, B
    (copies,) = FakeCopies.made
    assert len(copies.calls) == 4 * spread.REPEATS and {c[2] for c in copies.calls} == {0.3 / spread.REPEATS}
    roofs = roofline_run.roofs_of(gpu, found[gpu.label])
    assert roofs.threads is None and roofs.theoretical_gflops == pytest.approx(132 * 1.0 * 2 * 128)
    assert (roofs.h2d_gbs, roofs.d2h_gbs, roofs.h2d_pinned_gbs, roofs.d2h_pinned_gbs) == (12.0, 10.0, 25.0, 20.0)
    assert roofs.spread("d2h_pinned_gbs") == (8.0, 20.0) and roofs.spread("h2d_gbs") == (11.0, 12.0)
    assert roofs.noisy == ("d2h_pinned_gbs",) and "ranged from 8 GB/s to 20 GB/s" in (roofs.notes or ("",))[0]
    assert roofs.bandwidth_gbs == 3000.0 and roofs.launch_s == 8e-6 and roofs.peak_gflops is None
    assert roofline_run.roofs_of(cpu, found[cpu.label]).h2d_gbs is None  # the CPU has nothing to copy


def test_the_copy_probe_keeps_its_buffers_between_repeats():
    """probes.Copies on a real device (the CPU stands in for a GPU here: pinning needs CUDA)."""
    copies = probes.Copies(torch.device("cpu"), nbytes=1 << 20)
    first = [copies.rate_gbs(d, pinned=False, budget_s=0.02) for d in probes.DIRECTIONS]
    host, dev = copies.buffers(False)
    again = copies.rate_gbs("h2d", pinned=False, budget_s=0.02)
    assert copies.buffers(False)[0] is host and copies.buffers(False)[1] is dev and len(copies._buffers) == 1
    assert all(r > 0 for r in (*first, again)) and host.numel() * 4 == 1 << 20


def _roofs(series, device, launch, peak, bw, **kw):
    return DeviceRoofs(device=device, dtype="float32", series=series, threads=None, peak_gflops=peak,
                       theoretical_gflops=None, theoretical_note="unknown", bandwidth_gbs=bw, launch_s=launch, **kw)


def measured_at(challenger: str, baseline: str, n: int) -> Crossover:
    """A measured crossover found at n with no interval: the medians' size, as a run older than the verdicts."""
    return Crossover(challenger=challenger, baseline=baseline, time="median_s", call="found", n=n)


def _synthetic_run() -> RooflineRun:
    cpu = _roofs("cpu float32 2 threads", "cpu", 2e-6, 150.0, 20.0)
    gpu = _roofs("cuda:0 float32 TF32 off", "cuda:0", 1e-5, 40_000.0, 3000.0, h2d_gbs=10.0, d2h_gbs=12.0)
    points = []
    for roofs in (cpu, gpu):
        model = model_of(roofs)
        assert model is not None
        for n in (64, 256, 1024):
            t = model.time_s(n) * 1.1
            points.append(RooflinePoint(device=roofs.device, dtype="float32", n=n, gflops=2 * n**3 / t / 1e9,
                                        intensity=intensity(n, "float32"), series=roofs.series, median_s=t,
                                        predicted_s=model.time_s(n)))
    return RooflineRun(devices_roofs=(cpu, gpu), points=tuple(points), predicted_crossover_n=49,
                       measured_crossover=measured_at(gpu.series, cpu.series, 61), challenger=gpu.series,
                       baseline=cpu.series, settings={"budget_s": 0.2},
                       finished_at="2026-12-01T05:00:00Z")


def test_plain_words_and_model_error_on_synthetic_constants():
    run = _synthetic_run()
    text = crossover_sentence(run)
    assert "n ≈ 49" in text and "n ≈ 61" in text and "ratio 0.80" in text
    assert "the GPU pays more to start (launch and synchronize) than its faster arithmetic saves" in text
    errors = model_errors(run)
    assert errors.count == 4 and errors.median_abs == pytest.approx(0.1 / 1.1)
    assert "median |error| 9%" in model_error_text(run)


def test_charts_place_every_point_with_its_share_of_the_roof():
    run = _synthetic_run()
    fig = roofline_figure(run)
    products = [t for t in fig.data if t.name.endswith("products")]
    assert sum(len(t.x) for t in products) == len(run.points)
    cpu_1024 = next(p for p in run.points if p.device == "cpu" and p.n == 1024)
    assert share_of_roof(cpu_1024, run.devices_roofs[0]) == pytest.approx(1 / 1.1, rel=0.01)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    names = [t.name for t in model_figure(run).data]
    assert "cuda:0 float32 TF32 off model with copies" in names and "cpu float32 2 threads model" in names


# ---------------------------------------------------------------- the result record


def test_json_round_trip_and_the_issue_keys():
    run = _synthetic_run()
    obj = run.to_json()
    assert obj["kind"] == "roofline" and obj["schema_version"] == 2
    assert {"device", "dtype", "peak_gflops", "theoretical_gflops", "bandwidth_gbs", "launch_s", "h2d_gbs",
            "d2h_gbs"} <= set(obj["devices"][0])
    assert {"device", "dtype", "n", "gflops", "intensity"} <= set(obj["points"][0])
    assert read_result("roofline", obj) == run
    assert read_result("roofline", __import__("json").loads(dumps(obj))) == run



def test_a_roofline_carries_the_machine_load_and_lists_on_the_board_with_or_without_it(tmp_path):
    from dataclasses import replace

    from core.results.load import MachineLoad
    from core.store.frames import listing_frame

    busy = MachineLoad(cores=2, others_cores=1.0, load_average=2.0, free_cores=1, busy=True)
    run = replace(_synthetic_run(), load=busy)
    assert read_result("roofline", run.to_json()).load == busy
    old = _synthetic_run().to_json()
    assert "load" not in old and read_result("roofline", old).load is None  # files older than the field
    store = open_store(f"sqlite:///{tmp_path / 'r.sqlite3'}")
    save_payload(store, "roofline", run.to_json(), {})
    save_payload(store, "roofline", old, {})
    marks = listing_frame(store.list_runs())["load"].tolist()
    assert sorted(marks) == sorted(["busy: noisy", ""])

@pytest.mark.parametrize("edit, message", [
    (lambda o: o["devices"][0].update(device="tpu"), "payload.devices[0].device"),
    (lambda o: o["points"][1].update(n=0), "payload.points[1].n"),
    (lambda o: o.update(devices=[]), "payload.devices"),
    (lambda o: o.pop("predicted_crossover_n"), "missing 'predicted_crossover_n'"),
    (lambda o: o.update(schema_version=3), "update the dashboard"),
])
def test_a_bad_field_is_named(edit, message):
    obj = _synthetic_run().to_json()
    edit(obj)
    with pytest.raises(DashboardError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_result("roofline", obj)


def test_saved_and_imported_rooflines_reach_the_store(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'r.sqlite3'}")
    run_id = save_payload(store, "roofline", _synthetic_run().to_json(), {"budget_s": 0.2}, label="lab GPU")
    (saved,) = store.list_runs(kind="roofline")
    assert saved.run_id == run_id and saved.kind == "roofline" and "40,000 GFLOP/s" in saved.headline
    records = read_import(dumps(_synthetic_run().to_json()).encode())  # a bare `roofline --json` file
    assert records[0].kind == "roofline" and records[0].result == _synthetic_run()
    assert math.isclose(records[0].result.devices_roofs[1].h2d_gbs or 0, 10.0)


def test_roofline_charts_share_the_axis_style():
    from tests.chart_checks import assert_legend_below, assert_log_axis, assert_points_inside

    run = _synthetic_run()
    roof, model = roofline_figure(run), model_figure(run)
    assert_log_axis(roof.layout.xaxis)
    assert_log_axis(roof.layout.yaxis)
    assert_log_axis(model.layout.yaxis, unit="ms" if "(ms)" in model.layout.yaxis.title.text else None)
    assert model.layout.yaxis.title.text.startswith("time per product (")
    for fig in (roof, model):
        assert_legend_below(fig)
        assert_points_inside(fig)
