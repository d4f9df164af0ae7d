"""The load probe (core.platform.machine_load), the thread counts it picks, and the optional `load` field.

psutil and the clock are faked so each case knows exactly how much CPU "other programs" took.
"""

from __future__ import annotations

import copy
import json
from collections import namedtuple
from types import SimpleNamespace

import pytest

from core.classifier.model import ClassifierConfig
from core.classifier.training import prepare, train
from core.cli import main
from core.errors import DashboardError
from core.matmul.config import MatmulOptions, SweepConfig
from core.matmul.sweep import run_sweep
from core.platform import jobs, machine_load
from core.results.matmul import MatmulSweep
from core.results.train import TrainRun
from core.results.kinds import read_result
from core.results.load import MachineLoad
from tests.result_samples import matmul_payload, train_payload
from tests.review_fixtures import toy_reviews

CpuTimes = namedtuple("CpuTimes", "user nice system idle iowait irq softirq steal guest guest_nice")
BUSY = MachineLoad(cores=2, others_cores=1.0, load_average=2.5, free_cores=1, busy=True, probe_s=0.2)
QUIET = MachineLoad(cores=2, others_cores=0.05, load_average=0.1, free_cores=2, busy=False, probe_s=0.2)


def _fake_psutil(monkeypatch, *, busy_s: float, own_s: float, wall_s: float = 0.2, cpus: int = 2) -> None:
    """The machine's busy CPU time grows by busy_s and ours by own_s over wall_s seconds."""
    system = iter([CpuTimes(10.0, 0, 5.0, 100.0, 1.0, 0, 0, 0, 0, 0),
                   CpuTimes(10.0 + busy_s, 0, 5.0, 100.0 + 2 * wall_s - busy_s, 1.0, 0, 0, 0, 0, 0)])
    own = iter([SimpleNamespace(user=3.0, system=1.0), SimpleNamespace(user=3.0 + own_s, system=1.0)])
    fake = SimpleNamespace(cpu_times=lambda: next(system), cpu_count=lambda: cpus, Error=Exception,
                           Process=lambda: SimpleNamespace(cpu_times=lambda: next(own)))
    clock = iter([50.0, 50.0 + wall_s])
    monkeypatch.setattr(machine_load, "psutil", fake)
    monkeypatch.setattr(machine_load, "time", SimpleNamespace(perf_counter=lambda: next(clock), sleep=lambda s: None))
    monkeypatch.setattr(machine_load, "usable_cores", lambda: cpus)
    monkeypatch.setattr(machine_load, "load_average", lambda: 1.7)


def test_one_busy_core_of_two_leaves_one_thread(monkeypatch):
    _fake_psutil(monkeypatch, busy_s=0.22, own_s=0.02)  # others: 0.2 s of CPU in 0.2 s = one core
    load = machine_load.probe_load(0.2)
    assert load.others_cores == pytest.approx(1.0) and load.free_cores == 1 and load.busy
    assert load.load_average == 1.7 and load.cores == 2
    assert load.notice == ("Machine busy: figures may be noisy (other programs used 1.0 of 2 cores, "
                           "load average 1.7 just before this run).")


def test_a_job_that_leaves_cores_idle_is_busy_only_beyond_them(monkeypatch):
    """The pre-run notice by the verdicts' rule: one core of others is busy for a race of 2 threads, not of 1."""
    _fake_psutil(monkeypatch, busy_s=0.22, own_s=0.02)
    assert machine_load.probe_load(0.2, needed=2).busy
    _fake_psutil(monkeypatch, busy_s=0.22, own_s=0.02)
    assert not machine_load.probe_load(0.2, needed=1).busy


def test_our_own_cpu_time_does_not_count_as_busy(monkeypatch):
    _fake_psutil(monkeypatch, busy_s=0.30, own_s=0.28)  # our threads spinning down: not someone else
    load = machine_load.probe_load(0.2)
    assert load.others_cores == pytest.approx(0.1) and load.free_cores == 2 and not load.busy and load.notice is None


def test_without_cpu_times_the_load_average_decides(monkeypatch):
    def broken():
        raise OSError("no /proc/stat")
    monkeypatch.setattr(machine_load.psutil, "cpu_times", broken)
    monkeypatch.setattr(machine_load, "usable_cores", lambda: 4)
    monkeypatch.setattr(machine_load, "load_average", lambda: 3.2)
    load = machine_load.probe_load(0.0)
    assert load.others_cores is None and load.free_cores == 1 and load.busy
    assert "load average 3.2" in (load.notice or "") and "other programs" not in (load.notice or "")


@pytest.mark.parametrize("cores, others, load, free, busy", [
    (2, 0.0, 0.5, 2, False), (2, 0.4, 3.0, 2, False), (2, 0.6, 0.0, 1, True), (2, 2.0, 4.0, 1, True),
    (8, 3.0, None, 5, True), (1, 1.0, None, 1, True), (4, None, None, 4, False), (4, None, 2.0, 2, True),
])
def test_free_cores_and_busy(cores, others, load, free, busy):
    assert machine_load.free_cores(cores, others, load) == free
    assert machine_load.is_busy(cores, others, load) is busy


@pytest.mark.parametrize("others, cores, needed, busy", [
    (0.5, 2, 2, True), (0.4, 2, 2, False),  # this machine, 2 threads: half a core of theirs shows
    (1.4, 2, 1, False), (1.5, 2, 1, True),  # one thread leaves a core to them
    (0.6, 64, 64, True),  # a server's every core: as strict as on a laptop
    (50.0, 64, 8, False), (56.5, 64, 8, True),  # 8 of 64 cores needed: 56 are theirs
    (None, 2, 2, False), (3.0, 2, 5, True),  # more threads than cores: none spare
])
def test_busy_when_others_take_cores_the_measurement_needs(others, cores, needed, busy):
    assert machine_load.busy_for(others, cores=cores, needed=needed) is busy


def test_only_the_cpus_we_may_run_on_are_counted(monkeypatch):
    """A taskset or container on a big server: a neighbour on the other CPUs takes nothing from us."""
    cpu = lambda busy: CpuTimes(busy, 0, 0, 100.0 - busy, 0, 0, 0, 0, 0, 0)  # noqa: E731
    readings = iter([[cpu(1.0), cpu(1.0), cpu(1.0), cpu(1.0)],
                     [cpu(1.2), cpu(1.0), cpu(3.0), cpu(3.0)]])  # ours: CPUs 0 and 1; 2 and 3 spin
    clock = iter([10.0, 11.0])
    fake = SimpleNamespace(cpu_times=lambda percpu=False: next(readings), cpu_count=lambda: 4, Error=Exception,
                           Process=lambda: SimpleNamespace(cpu_times=lambda: SimpleNamespace(user=1.0, system=0.0)))
    monkeypatch.setattr(machine_load, "psutil", fake)
    monkeypatch.setattr(machine_load.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(machine_load, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    before, after = machine_load.cpu_reading(), machine_load.cpu_reading()
    assert before.cpus == 2 and machine_load.others_between(before, after) == pytest.approx(0.2)
    monkeypatch.setattr(machine_load.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert machine_load._our_cpus() is None  # every CPU ours: the machine's total, as before
    monkeypatch.setattr(machine_load.os, "sched_getaffinity", lambda pid: {0, 7}, raising=False)
    assert machine_load._our_cpus() is None  # numbering psutil does not list: count the whole machine


def test_the_users_thread_count_wins_over_the_free_cores():
    assert machine_load.default_threads(2, BUSY) == 2
    assert machine_load.default_threads(None, BUSY) == 1 and machine_load.default_threads(None, QUIET) == 2
    assert machine_load.default_threads(None, None) is None


@pytest.mark.parametrize("value, seconds", [("0.05", 0.05), ("nonsense", 0.2), ("-1", 0.2), ("99", 0.2)])
def test_the_probe_length_setting(monkeypatch, value, seconds):
    monkeypatch.setenv(machine_load.PROBE_ENV, value)
    assert machine_load.probe_seconds() == seconds


def test_a_real_probe_is_sane():
    load = machine_load.probe_load(0.05)
    assert load.cores >= 1 and 1 <= load.free_cores <= load.cores and load.probe_s == 0.05
    assert load.others_cores is None or 0 <= load.others_cores <= 1024


# ---------------------------------------------------------------- jobs pick their threads under load


def test_a_sweep_defaults_to_the_free_cores_and_keeps_the_load(monkeypatch):
    monkeypatch.setattr(jobs, "probe_load", lambda **k: BUSY)
    result = run_sweep(SweepConfig(sizes=(16,), options=MatmulOptions(budget_s=0.05)))  # threads (None,): the probe
    assert {r.threads for r in result.results} == {1} and result.load == BUSY
    assert any("Free cores: other programs left 1 of 2 cores idle" in n and "used 1 thread." in n for n in result.notes)
    assert result.to_json()["load"] == BUSY.to_json()
    monkeypatch.setattr(jobs, "probe_load", lambda **k: QUIET)  # two free cores, but the user asked for one
    forced = run_sweep(SweepConfig(sizes=(16,), threads=(1,), options=MatmulOptions(budget_s=0.05)))
    assert {r.threads for r in forced.results} == {1} and forced.load == QUIET
    assert not any("Free cores" in n for n in forced.notes)


def test_training_defaults_to_the_free_cores_and_a_forced_count_is_kept(monkeypatch):
    monkeypatch.setattr(jobs, "probe_load", lambda **k: BUSY)
    config = ClassifierConfig(epochs=1, hidden=4, batch_size=16, lr=0.3, ngrams=1, device="cpu")
    features, _ = prepare(toy_reviews(20), config)
    result = train(features, config)
    assert result.threads == 1 and result.load == BUSY and result.run.to_json()["load"]["busy"] is True
    forced = train(features, ClassifierConfig(**{**config.to_dict(), "threads": 2}))
    assert forced.threads == 2


def test_a_thread_count_out_of_range_is_refused():
    with pytest.raises(DashboardError, match="threads 0 is out of range"):
        ClassifierConfig(threads=0)


# ---------------------------------------------------------------- the CLI's JSON and text


def test_matmul_json_and_text_carry_the_load(monkeypatch, capsys):
    monkeypatch.setattr(jobs, "probe_load", lambda **k: BUSY)
    assert main(["matmul", "--sizes", "16", "--budget", "0.05", "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    from core.matmul.choices import default_race_threads
    from core.platform.devices import has_gpu
    assert out["load"] == BUSY.to_json() and out["settings"]["threads"] == list(default_race_threads(has_gpu()))
    assert main(["matmul", "--sizes", "16", "--budget", "0.05", "--quiet"]) == 0
    assert BUSY.notice in " ".join(capsys.readouterr().out.split())  # wrapped to 100 columns


def test_why_parallel_json_has_a_load_per_section_and_on_top(monkeypatch, capsys):
    from core.parallel import section
    monkeypatch.setattr(section, "probe_load", lambda **k: BUSY)
    assert main(["why-parallel", "--section", "timing-bug", "--budget", "0.2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["load"] == BUSY.to_json() and all(s["notice"] == BUSY.notice for s in out["sections"].values())


def test_train_json_carries_the_load(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(jobs, "probe_load", lambda **k: QUIET)
    path = tmp_path / "toy.csv"
    reviews = toy_reviews(20)
    path.write_text("text,label\n" + "".join(f"{t},{int(y)}\n" for t, y in zip(reviews.texts, reviews.labels)))
    assert main(["train", "--data", str(path), "--epochs", "1", "--hidden", "4", "--device", "cpu", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["load"] == QUIET.to_json() and out["settings"]["threads"] is None


# ---------------------------------------------------------------- the schema: with and without `load`


@pytest.mark.parametrize("kind, payload", [("matmul", matmul_payload()), ("train", train_payload())])
def test_files_with_and_without_load_read(kind, payload):
    assert "load" not in payload
    assert read_result(kind, copy.deepcopy(payload)).load is None  # older files have no such field
    with_load = {**payload, "load": BUSY.to_json()}
    record = read_result(kind, with_load)
    assert isinstance(record, (MatmulSweep, TrainRun)) and record.load == BUSY
    assert record.to_json()["load"] == BUSY.to_json() and "load" not in read_result(kind, payload).to_json()


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d.update(busy="yes"), r"load\.busy"),
    (lambda d: d.update(cores=0), r"load\.cores"),
    (lambda d: d.pop("free_cores"), r"load: missing 'free_cores'"),
    (lambda d: d.update(others_cores=-1), r"load\.others_cores"),
    (lambda d: d.update(load_average=float("inf")), r"load\.load_average"),
])
def test_a_bad_load_field_is_refused_by_name(mutate, match):
    load = BUSY.to_json()
    mutate(load)
    with pytest.raises(DashboardError, match=match):
        read_result("matmul", {**matmul_payload(), "load": load})
    with pytest.raises(DashboardError, match="load: expected a JSON object"):
        read_result("train", {**train_payload(), "load": [1, 2]})


def test_a_family_of_processes_counts_as_our_own_cpu(monkeypatch):
    """A rank's siblings are the job, not strangers: what each really used is taken off the others' figure."""
    readings = iter([CpuTimes(10.0, 0, 0, 90.0, 0, 0, 0, 0, 0, 0), CpuTimes(12.0, 0, 0, 90.0, 0, 0, 0, 0, 0, 0)])
    clock = iter([10.0, 11.0])
    used = {"me": iter([1.0, 1.7]), "sibling": iter([3.0, 4.1])}

    def process(name: str) -> SimpleNamespace:
        return SimpleNamespace(cpu_times=lambda: SimpleNamespace(user=next(used[name]), system=0.0))
    sibling = process("sibling")
    fake = SimpleNamespace(cpu_times=lambda percpu=False: next(readings), cpu_count=lambda: 2, Error=Exception,
                           Process=lambda: process("me"))
    monkeypatch.setattr(machine_load, "psutil", fake)
    monkeypatch.setattr(machine_load, "_our_cpus", lambda: None)
    monkeypatch.setattr(machine_load, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    before, after = machine_load.cpu_reading([sibling]), machine_load.cpu_reading([sibling])
    assert machine_load.others_between(before, after) == pytest.approx(2.0 - 0.7 - 1.1)


@pytest.mark.parametrize("others, spare, reach", [
    (None, 0, 1.0), (0.0, 0, 1.0), (0.25, 0, 4 / 3), (0.5, 0, 2.0), (1.0, 0, float("inf")), (3.0, 0, float("inf")),
    (1.25, 1, 4 / 3), (0.8, 1, 1.0), (50.0, 56, 1.0),  # what fits in the idle cores slows nothing
])
def test_the_slowdown_other_programs_could_explain(others, spare, reach):
    assert machine_load.explained_slowdown(others, spare=spare) == pytest.approx(reach)


def test_a_sweep_probes_for_the_cores_its_series_keep_busy(monkeypatch):
    seen: list = []
    monkeypatch.setattr(jobs, "probe_load", lambda **k: seen.append(k["needed"]) or QUIET)
    monkeypatch.setattr("core.matmul.sweep.usable_cores", lambda: 2)
    run_sweep(SweepConfig(sizes=(16,), threads=(1,), options=MatmulOptions(budget_s=0.05)))
    run_sweep(SweepConfig(sizes=(16,), threads=(1, 2), options=MatmulOptions(budget_s=0.05)))
    assert seen == [1, 2]
