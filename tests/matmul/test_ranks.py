"""The matmul race on every rank, without processes: the spread, the contention, the straggler rule,
the result's JSON, the device each rank takes (GPUs faked), the launcher's checks and how a failed
launch names its rank. The real torchrun runs are in tests/matmul/test_ranks_launch.py (slow)."""

from __future__ import annotations

import argparse
import os
import socket

import pytest
import torch

from core.cli import main as cli_main
from core.cli import ranks as cli_ranks
from core.errors import DashboardError
from core.matmul import rank_launch, rank_worker
from core.matmul.rank_launch import _Follower, rank_devices
from core.matmul.rank_worker import RanksConfig, check_config, measure_ranks, rank_device, rank_threads
from core.matmul.ranks import (
    common_sizes, contention, gflops, judge_stragglers, median_rank, rank_point, spread,
)
from core.platform.torchrun import WorkerEnv
from core.results.kinds import KINDS, detect_kind, read_result
from core.results.cluster import NAMED, NONE, UNCLEAR, ClusterRun, RankRecord

FAST = [0.010, 0.0101, 0.0099, 0.0100, 0.0102, 0.0098]  # seconds per call: tight samples


def _record(rank: int, together: dict[int, list[float]], alone: dict[int, list[float]] | None = None, *,
            others: float | None = None, host: str = "node-a", spare: int | None = None,
            cores: int | None = None) -> RankRecord:
    return RankRecord(rank=rank, hostname=host, device="cpu", device_name="CPU, 1 thread", threads=1, cores=cores,
                      together=tuple(rank_point(n, t, others_cores=others, busy=bool(others and others >= 0.5),
                                                spare_cores=spare) for n, t in together.items()),
                      alone=tuple(rank_point(n, t) for n, t in (alone or {}).items()))


def _scaled(samples: list[float], factor: float) -> list[float]:
    return [t * factor for t in samples]


def test_gflops_and_points():
    assert gflops(1000, 2.0) == pytest.approx(1.0) and gflops(10, 0.0) is None and gflops(10, None) is None
    p = rank_point(100, [0.002, 0.001, 0.003])
    assert p.seconds == 0.002 and p.gflops == pytest.approx(1.0) and p.times_s == (0.002, 0.001, 0.003)


def test_spread_and_contention_over_the_sizes_every_rank_measured():
    ranks = [_record(0, {64: FAST, 128: FAST}, {64: _scaled(FAST, 0.5), 128: _scaled(FAST, 0.5)}),
             _record(1, {64: _scaled(FAST, 2.0), 128: _scaled(FAST, 2.0)}, {128: _scaled(FAST, 0.5)}),
             _record(2, {64: FAST}, {})]
    assert common_sizes(ranks) == [64] and common_sizes(ranks[:2], "alone") == [128]
    (s,) = spread(ranks)
    fast, slow = gflops(64, 0.0100), gflops(64, 0.0200)
    assert s.n == 64 and s.min == pytest.approx(slow)
    assert s.median == pytest.approx(fast) and s.max == pytest.approx(fast)
    (c,) = contention(ranks[:2])
    assert c.n == 128 and c.ratio == pytest.approx(c.alone_gflops / c.together_gflops)
    assert c.ratio == pytest.approx(gflops(128, 0.005) / ((gflops(128, 0.01) + gflops(128, 0.02)) / 2))


def test_a_rank_far_below_the_median_outside_the_noise_is_named():
    ranks = [_record(0, {64: FAST, 256: FAST}), _record(1, {64: FAST, 256: _scaled(FAST, 1.5)}),
             _record(2, {64: FAST, 256: _scaled(FAST, 1.01)}, host="node-b")]
    stragglers, call, note = judge_stragglers(ranks)
    assert call == NAMED and [(s.rank, s.hostname, s.n) for s in stragglers] == [(1, "node-a", 256)]
    assert "a CPU straggler is the core it ran on at the time" in note  # rank 0 shares node-a's cores
    alone_there = judge_stragglers([ranks[0], ranks[2], _record(1, {256: _scaled(FAST, 1.5)}, host="node-c")])
    assert alone_there[1] == NAMED and "CPU ranks share" not in alone_there[2]
    assert stragglers[0].below_median == pytest.approx(1 - 1 / 1.5 * 1.01, abs=0.02)
    assert stragglers[0].slowdown_low > 1.05 and stragglers[0].slowdown_high >= stragglers[0].slowdown_low


def test_oversubscribed_ranks_name_no_straggler_and_say_why():
    """Issue 30: `--ranks 3` on 2 cores named "rank 0 ... 49 % below the median", a slowdown its own
    three one-thread ranks taking turns on two cores made."""
    turns = [_record(0, {256: _scaled(FAST, 2.0)}, cores=2), _record(1, {256: FAST}, cores=2),
             _record(2, {256: FAST}, cores=2)]
    stragglers, call, note = judge_stragglers(turns)
    assert (stragglers, call) == ((), UNCLEAR)
    assert "3 CPU ranks run 3 threads on the 2 usable cores of node-a: oversubscribed" in note
    assert judge_stragglers([*turns[:2], _record(2, {256: FAST}, cores=2, host="node-b")])[1] == NAMED, \
        "two one-thread ranks fit two cores: the slow one is named"
    assert judge_stragglers([_record(r.rank, {256: list(r.together[0].times_s)}) for r in turns])[1] == NAMED, \
        "a record without its machine's cores (older) is judged as before"
    back = read_result("cluster", ClusterRun(ranks=tuple(turns)).to_json())
    assert [r.cores for r in back.ranks] == [2, 2, 2]
    assert "cores" not in ClusterRun(ranks=(_record(0, {256: FAST}),)).to_json()["ranks"][0]


def test_the_launch_says_beforehand_when_cpu_ranks_oversubscribe(monkeypatch, capsys):
    monkeypatch.setattr(rank_launch, "usable_cores", lambda: 2)
    assert rank_launch.crowding(RanksConfig(), 2, 0) is None
    assert "3 CPU ranks run 3 threads on the 2 usable cores: oversubscribed" in rank_launch.crowding(
        RanksConfig(), 3, 0)
    assert "4 threads" in rank_launch.crowding(RanksConfig(threads=2), 2, 0)
    assert rank_launch.crowding(RanksConfig(), 2, 2) is None, "a rank per GPU"
    monkeypatch.setattr(rank_launch, "run_ranks", lambda config, ranks, hooks: (_ for _ in ()).throw(
        DashboardError("stop here")))
    monkeypatch.setattr("core.platform.devices.cuda_count", lambda: 0)
    assert cli_main(["matmul", "--ranks", "3", "--sizes", "64"]) == 2
    err = capsys.readouterr().err
    assert "warning: 3 CPU ranks run 3 threads on the 2 usable cores" in err and "stop here" in err


def test_an_even_run_names_none_and_a_noisy_gap_cannot_be_told():
    even = [_record(0, {256: FAST}), _record(1, {256: _scaled(FAST, 1.05)})]
    assert judge_stragglers(even)[:2] == ((), NONE)
    noisy = [0.010, 0.030, 0.009, 0.014, 0.031, 0.012]  # median 30 % slower, but the samples overlap
    stragglers, call, note = judge_stragglers([_record(0, {256: FAST}), _record(1, {256: FAST}),
                                               _record(2, {256: noisy})])
    assert (stragglers, call) == ((), UNCLEAR) and "rank 2" in note and "overlap" in note
    few = judge_stragglers([_record(0, {256: FAST[:2]}), _record(1, {256: _scaled(FAST[:2], 3)})])
    assert few[1] == UNCLEAR and "fewer than" in few[2]


def test_a_slowdown_other_programs_could_explain_is_not_named():
    def run(factor: float, others: float, spare: int = 0) -> tuple:
        return judge_stragglers([_record(0, {256: FAST}, others=others, spare=spare),
                                 _record(1, {256: _scaled(FAST, factor)}, others=others, spare=spare)])
    # a quarter of a core taken (under the half-core busy rule) could make a rank 1.33x slower
    assert run(1.25, 0.25)[1] == UNCLEAR and "cannot tell on a machine this busy" in run(1.25, 0.25)[2]
    assert run(1.25, 0.0)[1] == NAMED and run(1.25, 0.25, spare=2)[1] == NAMED  # idle cores were the stranger's
    assert run(1.6, 0.25)[1] == NAMED  # beyond what it could explain
    assert run(40.0, 1.2)[1] == UNCLEAR and "any slowdown" in run(40.0, 1.2)[2]  # a whole core taken: anything goes


def test_the_median_rank_is_the_reference():
    ranks = [_record(r, {64: _scaled(FAST, f)}) for r, f in enumerate([1.0, 1.2, 3.0, 1.1])]
    assert median_rank(ranks, 64).rank == 3  # the two middle ones (1 and 3): the faster of them
    assert median_rank(ranks[:3], 64).rank == 1


def test_of_two_ranks_the_faster_is_the_reference_and_the_slow_one_is_named():
    """Both ranks are equally far from the median of two; the slow one was once picked as the reference by
    floating point and nothing was named (stop 26's final slow tier)."""
    for slow in (0, 1):
        times = {slow: _scaled(FAST, 40.0), 1 - slow: FAST}
        ranks = [_record(r, {64: times[r]}) for r in (0, 1)]
        assert median_rank(ranks, 64).rank == 1 - slow
        stragglers, call, _ = judge_stragglers(ranks)
        assert call == NAMED and [s.rank for s in stragglers] == [slow]
    for a, b in [(0.0123, 0.0456), (0.0456, 0.0123), (1e-4, 3.7e-3)]:  # rates whose distances may round apart
        ranks = [_record(0, {64: [a] * 4}), _record(1, {64: [b] * 4})]
        assert median_rank(ranks, 64).rank == (0 if a < b else 1)


def test_the_cluster_kind_round_trips_and_is_detected():
    ranks = [_record(0, {64: FAST}, {64: FAST}), _record(1, {64: _scaled(FAST, 2)}, {64: FAST})]
    stragglers, call, note = judge_stragglers(ranks)
    run = ClusterRun(ranks=tuple(ranks), spread=spread(ranks), contention=contention(ranks), stragglers=stragglers,
                     straggler_call=call, straggler_note=note)
    data = run.to_json()
    assert "cluster" in KINDS and detect_kind(data) == "cluster"
    assert list(data)[:3] == ["kind", "schema_version", "ranks"]
    back = read_result("cluster", data)
    assert back == run and back.devices == ["cpu"] and back.largest_common_n == 64
    assert {"rank", "hostname", "device", "device_name", "together", "alone"} <= set(data["ranks"][0])
    assert set(data["ranks"][0]["together"][0]) >= {"n", "seconds", "gflops"}
    assert set(data["stragglers"][0]) >= {"rank", "hostname", "device", "n", "below_median"}
    assert "straggler: rank 1" in back.headline
    bad = {**data, "ranks": [{**data["ranks"][0], "device": "gpu0"}]}
    with pytest.raises(DashboardError, match=r"cluster.ranks\[0\].device"):
        read_result("cluster", bad, "cluster")
    with pytest.raises(DashboardError, match="ranks"):
        read_result("cluster", {**data, "ranks": []}, "cluster")


def test_each_rank_takes_its_local_gpu_and_too_few_gpus_is_one_line(gpu_model):
    fake = gpu_model("H100", count=2)
    auto = RanksConfig()
    assert rank_device(auto, 1, 2, fake.count, "node-a") == torch.device("cuda", 1)
    assert rank_device(RanksConfig(device="cpu"), 1, 2, 2, "node-a") == torch.device("cpu")
    with pytest.raises(DashboardError, match="node-a has 2 GPU.s. but 4 ranks were started on it"):
        rank_device(auto, 3, 4, 2, "node-a")
    assert rank_worker.device_name(torch.device("cuda", 1), None) == "NVIDIA H100 80GB HBM3"
    assert rank_devices(auto, 2, 2) == ["cuda:0", "cuda:1"]
    with pytest.raises(DashboardError, match="--ranks 3 needs 3 GPUs"):
        rank_devices(auto, 3, 2)
    rank_launch.check_fits(RanksConfig(sizes=(8192,)), 2, ["cuda:0", "cuda:1"])  # 0.75 GiB per GPU
    with pytest.raises(DashboardError, match="n=65536 float32 on cuda:0 needs"):
        rank_launch.check_fits(RanksConfig(sizes=(65536,)), 2, ["cuda:0", "cuda:1"])
    env = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "4"}
    with pytest.raises(DashboardError, match=f"{socket.gethostname()[:20]}.* has 2 GPU"):
        measure_ranks(auto, distributed=True, environ=env)  # before any process group or lock


def test_cpu_ranks_share_the_cores_and_are_bounded(monkeypatch):
    cpu = torch.device("cpu")
    assert rank_threads(RanksConfig(), cpu, 2, 8) == 4 and rank_threads(RanksConfig(), cpu, 4, 2) == 1
    assert rank_threads(RanksConfig(threads=3), cpu, 2, 8) == 3
    assert rank_threads(RanksConfig(), torch.device("cuda", 0), 2, 8) is None
    monkeypatch.setattr(rank_launch, "usable_cores", lambda: 2)
    assert rank_devices(RanksConfig(), 4, 0) == ["cpu"]
    with pytest.raises(DashboardError, match="more than twice this machine's 2 usable cores; use at most 4"):
        rank_devices(RanksConfig(), 5, 0)
    with pytest.raises(DashboardError, match="between 1 and"):
        rank_devices(RanksConfig(), 0, 0)


@pytest.mark.parametrize("config, match", [
    (RanksConfig(sizes=()), "sizes"), (RanksConfig(sizes=(0,)), "sizes"), (RanksConfig(budget_s=0), "budget"),
    (RanksConfig(dtype="int8"), "dtype"), (RanksConfig(device="cuda:1"), "LOCAL_RANK"),
    (RanksConfig(threads=0), "threads"),
])
def test_bad_settings_are_refused_before_anything_starts(config, match):
    with pytest.raises(DashboardError, match=match):
        check_config(config)


def test_a_cpu_rank_times_a_size_and_counts_its_siblings_cpu_as_its_own(monkeypatch):
    rank = rank_worker._Rank(WorkerEnv(0, 2, 0), "node-a", torch.device("cpu"), 1, 2, 2, 0.0)
    family = [object()]
    read_with: list = []
    readings = iter([0.2])  # strangers used 0.2 cores (the siblings' real CPU already counted as ours)
    monkeypatch.setattr(rank_worker, "siblings", lambda: family)
    monkeypatch.setattr(rank_worker, "cpu_reading", lambda fam=(): read_with.append(fam) or object())
    monkeypatch.setattr(rank_worker, "others_between", lambda before, after: next(readings))
    point = rank.time_size(RanksConfig(budget_s=0.05), 16, together=True)
    assert point.n == 16 and len(point.times_s) >= 3 and point.gflops > 0 and read_with == [family, family]
    assert point.others_cores == pytest.approx(0.2) and not point.busy and point.spare_cores == 0  # both cores needed
    readings = iter([1.6])
    alone = rank.time_size(RanksConfig(budget_s=0.05), 16, together=False)
    assert alone.others_cores == pytest.approx(1.6) and alone.busy and alone.spare_cores == 1  # into its one core
    readings = iter([0.6])
    assert rank.time_size(RanksConfig(budget_s=0.05), 16, together=True).busy


def test_siblings_are_the_parents_children_with_our_command_line(monkeypatch):
    import psutil

    class Proc:
        def __init__(self, pid: int, cmd: list[str], kids: list | None = None) -> None:
            self.pid, self.cmd, self.kids = pid, cmd, kids or []

        def cmdline(self) -> list[str]:
            if self.cmd is None:
                raise psutil.AccessDenied(self.pid)
            return self.cmd

        def children(self) -> list:
            return self.kids

        def parent(self):
            return parent

    me = ["python", "-m", "core.matmul.rank_worker", "--config", "x"]
    twin, other, hidden = Proc(11, list(me)), Proc(12, ["python", "-m", "other"]), Proc(13, None)
    mine = Proc(10, me)
    parent = Proc(1, ["torchrun"], [mine, twin, other, hidden])
    monkeypatch.setattr(psutil, "Process", lambda *a: mine)
    assert rank_worker.siblings() == [twin]


def test_the_test_delay_slows_only_its_rank(monkeypatch):
    monkeypatch.setenv(rank_worker.SLOW_ENV, "1:0.25")
    assert rank_worker._test_delay(1) == 0.25 and rank_worker._test_delay(0) == 0.0
    monkeypatch.delenv(rank_worker.SLOW_ENV)
    assert rank_worker._test_delay(1) == 0.0


class _Job:
    def __init__(self) -> None:
        self.reports: list = []

    def report(self, progress) -> None:
        self.reports.append(progress)


def test_a_failed_launch_names_the_rank_that_never_joined_died_or_hung():
    def follower(*events) -> _Follower:
        f = _Follower(_Job(), 3)  # type: ignore[arg-type]
        for e in events:
            if e["event"] == "error":  # the run has failed: the launch is ended at once
                with pytest.raises(rank_launch._RankFailed):
                    f.event(e)
            else:
                f.event(e)
        return f

    joined = [{"event": "joining", "rank": r, "hostname": "node-a", "pid": os.getpid()} for r in range(3)]
    late = follower(*joined[:2], {"event": "error", "rank": 0, "message": "rank 0 on node-a: waited 3 s for the "
                                  "other ranks to join and gave up (x)"})
    assert late.culprit(3).startswith("rank 2 on this machine never joined")
    own = follower(*joined, {"event": "error", "rank": 1, "message": "rank 1 on node-a: n=99999 does not fit"})
    assert own.culprit(3) == "rank 1 on node-a: n=99999 does not fit"
    died = follower(*joined)
    died.seen[2].ended_at, died.seen[0].ended_at = 1.0, 2.0
    assert died.culprit(3).startswith("rank 2 on node-a died")
    stopped = follower(*joined)
    stopped.seen[1].stopped = True
    assert stopped.culprit(3).startswith("rank 1 on node-a hung")
    silent = follower(*joined, *({"event": "error", "rank": r, "message": f"rank {r} on node-a: timed out: another "
                                  "rank gave no answer"} for r in (0, 2)))
    assert silent.culprit(3).startswith("rank 1 on node-a hung: it gave no answer within the 3 s")
    heard = follower(*joined, {"event": "error", "rank": 0, "message": "rank 2 on node-a hung: its heartbeat stopped "
                               "(seen from rank 0 on node-a, timed out: ...)"})
    assert heard.culprit(3).startswith("rank 2 on node-a hung: its heartbeat stopped")
    progress = follower({"event": "progress", "message": "n=64", "done": 1, "total": 6})
    assert progress.job.reports[0].done == 1
    # one look saw rank 2 gone and torchrun's SIGTERM already through ranks 0 and 1 (a poller that slept through
    # the ~0.1 s between them, on a loaded machine): the ranks that said `ended` did not fail
    at_once = follower(*joined, *({"event": "ended", "rank": str(r), "signal": "SIGTERM"} for r in (0, 1)))
    for s in at_once.seen.values():
        s.ended_at = 5.0
    assert at_once.culprit(3).startswith("rank 2 on node-a died (pid ")
    killed = follower(*joined, *({"event": "ended", "rank": str(r), "signal": "SIGTERM"} for r in range(3)))
    killed.seen[1].ended_at, killed.seen[0].ended_at, killed.seen[2].ended_at = 1.0, 2.0, 2.0
    assert killed.culprit(3).startswith("rank 1 on node-a died")  # all SIGTERMed: someone's kill; the order says


def _args(**kw) -> argparse.Namespace:
    base = dict(sizes=None, threads=None, devices=None, dtype="float32", budget="0.5", ranks=2, distributed=False,
                timeout=120.0, guess=None, end_to_end=False, cache="warm", tf32="off", quiet=True, json=True)
    return argparse.Namespace(**{**base, **kw})


def test_cli_flags_become_one_config_and_misfits_are_one_line():
    config = cli_ranks.config_from_args(_args(sizes="512,128,128", threads="2"))
    assert config.sizes == (128, 512) and config.threads == 2 and config.device == "auto" and config.budget_s == 0.5
    for kw, match in [({"devices": "cpu,cuda"}, "one of auto"), ({"threads": "1,2"}, "one number"),
                      ({"dtype": "float32,bfloat16"}, "one dtype"), ({"timeout": 0.0}, "--timeout")]:
        with pytest.raises(DashboardError, match=match):
            cli_ranks.config_from_args(_args(**kw))
    with pytest.raises(DashboardError, match="give one"):
        cli_ranks.run(_args(distributed=True))
    with pytest.raises(DashboardError, match="not for --ranks"):
        cli_ranks.run(_args(guess="1024"))


def test_the_json_matmul_ranks_prints_imports_as_a_cluster_run():
    from core.results import files
    from core.results.jsonio import dumps

    ranks = [_record(0, {64: FAST}), _record(1, {64: FAST})]
    run = ClusterRun(ranks=tuple(ranks), spread=spread(ranks), straggler_call=NONE)
    (record,) = files.read_import(dumps(run.to_json()).encode(), file="ranks.json")
    assert record.kind == "cluster" and record.result == run and record.devices == ["cpu"]


def test_sizes_that_do_not_fit_are_refused_before_anything_starts(monkeypatch):
    from core.matmul import guards

    monkeypatch.setattr(guards, "free_device_bytes", lambda device: 3 * 2**30)
    rank_launch.check_fits(RanksConfig(sizes=(4096,)), 2, ["cpu"])  # 2 x ~0.26 GiB
    with pytest.raises(DashboardError, match=r"n=16384 on 4 CPU ranks needs .* GiB at once"):
        rank_launch.check_fits(RanksConfig(sizes=(1024, 16384)), 4, ["cpu"])
    rank = rank_worker._Rank(WorkerEnv(2, 4, 0), "node-c", torch.device("cpu"), 1, 1, 2, 0.0)
    with pytest.raises(DashboardError, match=r"^rank 2 on node-c: n=16384 float32 on cpu needs"):
        rank.time_size(RanksConfig(), 16384, together=True)


def test_a_failed_collective_names_the_peer_whose_heartbeat_stopped():
    rank = rank_worker._Rank(WorkerEnv(0, 3, 0), "node-a", torch.device("cpu"), 1, 1, 2, 0.0)
    hosts = ["node-a", "node-b", "node-c"]

    class Beat:
        def __init__(self, silent):
            self._silent = silent

        def silent(self):
            return self._silent

    timeout = RuntimeError("[gloo] Timed out waiting 3000ms for recv operation to complete")
    closed = RuntimeError("Connection closed by peer [10.0.0.2]:4242")
    assert rank_worker._failure(timeout, 3, rank, hosts, Beat([2])).startswith(
        "rank 2 on node-c hung: its heartbeat stopped (seen from rank 0 on node-a, timed out")
    assert rank_worker._failure(closed, 3, rank, hosts, Beat([1])).startswith("rank 1 on node-b died")
    assert rank_worker._failure(closed, 3, rank, hosts, Beat([])) == (
        "rank 0 on node-a: another rank closed its connection (it died)")  # no heartbeat says which
    assert rank_worker._failure(timeout, 3, rank, hosts, None).startswith("rank 0 on node-a: timed out")


def test_the_ranks_table_heads_every_column_and_says_which_wall_time_it_is():
    """Issue 34: an unheaded column, and 'wall time 6.6 s' (rank 0's sweep) for a 13.8 s command."""
    ranks = [_record(0, {64: FAST, 128: FAST}, {64: FAST}, host="a-very-long-host-name.example.org" * 2),
             _record(1, {64: _scaled(FAST, 2), 128: FAST}, {64: FAST}, others=0.9)]
    stragglers, call, note = judge_stragglers(ranks)
    run = ClusterRun(ranks=tuple(ranks), spread=spread(ranks), contention=contention(ranks), stragglers=stragglers,
                     straggler_call=call, straggler_note=note, wall_s=6.6)
    text = cli_ranks.render(run, command_s=13.8)
    header = text.splitlines()[0]
    rule = text.splitlines()[1]
    assert len(rule.split()) == 8 and header.endswith("machine")  # 8 columns, each headed (an empty one: no dashes)
    assert "machine" in header and "busy" in text
    assert "wall time 13.8 s since the command started" in " ".join(text.split())
    assert "the sweep on the ranks 6.6 s" in " ".join(text.split())
    assert max(len(line) for line in text.splitlines()) <= 100
    assert cli_ranks.command_seconds() is not None
