"""The matmul race on real torchrun ranks over gloo, CPU ranks on this machine: two ranks, two agents on
loopback, a straggler on purpose, a killed rank, a hung rank, a rank that never joins.

Slow: each test starts torchrun and two Python processes that import torch. The processes are found
as descendants of this test's own process (never by name: other runs on this machine start the same
commands) and must all be gone when a test ends.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from core.errors import DashboardError
from core.matmul import rank_launch, rank_worker
from core.matmul.rank_launch import run_ranks
from core.matmul.rank_worker import RanksConfig
from core.platform.device_lock import current_holder
from core.platform.jobs import JobHooks
from core.results.cluster import NAMED, ClusterRun

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
TINY = RanksConfig(sizes=(32, 64), budget_s=0.1, threads=1)


def _ranks_below() -> dict[int, psutil.Process]:
    """This test's rank processes by rank (descendants of this process only)."""
    out = {}
    for p in psutil.Process().children(recursive=True):
        try:
            if "core.matmul.rank_worker" in " ".join(p.cmdline()) and "torch.distributed.run" not in p.cmdline():
                out[int(p.environ()["RANK"])] = p
        except (psutil.Error, KeyError, ValueError):
            pass
    return out


def _gone(procs: list[psutil.Process], within_s: float = 15.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        alive = [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return True
        time.sleep(0.1)
    return False


def _on_one_core() -> None:
    if hasattr(os, "sched_setaffinity"):  # Linux; elsewhere the ranks run where the OS puts them
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def _cli_ranks() -> ClusterRun:
    """`--ranks 2` with every process of the job on one core. Why: on this project's 2-core VM the two vCPUs are
    not equal while both are busy (a hypervisor's doing: others' CPU read 0.00), and an undisturbed pair on two
    cores was named a straggler in 2 of 6 quiet runs, one rank at half the other's rate even at n = 512 and the
    gap not the same rank's from one phase to the next. That is a real straggler of that moment, not the
    rule's mistake; sharing one core, the ranks meet the same hardware and only the rule is tested."""
    out = subprocess.run([sys.executable, "-m", "core", "matmul", "--ranks", "2", "--sizes", "32,64", "--budget", "0.1",
                          "--threads", "1", "--json", "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         preexec_fn=_on_one_core)
    assert out.returncode == 0, out.stderr[-2000:]
    return ClusterRun.from_json(json.loads(out.stdout), "run")


def test_two_ranks_on_this_machine_from_the_command_line():
    """`--ranks 2`: both ranks with a point per size together and alone, the spread, no straggler named
    (what other programs did meanwhile may make it "cannot tell", never a name). Both ranks share one core
    (_cli_ranks says why)."""
    run = _cli_ranks()
    assert [r.rank for r in run.ranks] == [0, 1] and all(r.device == "cpu" and r.threads == 1 for r in run.ranks)
    assert all([p.n for p in r.together] == [32, 64] == [p.n for p in r.alone] for r in run.ranks)
    assert all(p.gflops and len(p.times_s) >= 3 for r in run.ranks for p in r.together + r.alone)
    assert [s.n for s in run.spread] == [32, 64] and [c.n for c in run.contention] == [32, 64]
    assert run.straggler_call != NAMED, run.straggler_note  # nobody slowed on purpose: none, or cannot tell
    assert current_holder("cpu") is None and _ranks_below() == {}


def test_a_rank_slowed_on_purpose_is_named_the_straggler(monkeypatch):
    monkeypatch.setenv(rank_worker.SLOW_ENV, "1:0.004")  # 4 ms more per call of a ~0.1 ms product
    run = run_ranks(TINY, 2)
    if run.straggler_call != NAMED:  # only strangers' load that could explain even a 40x slowdown may withhold it
        assert run.straggler_note.startswith("rank 1 ") and "cannot tell on a machine this busy" in run.straggler_note
        return
    (s,) = run.stragglers
    assert (s.rank, s.n, s.hostname) == (1, 64, socket.gethostname()[:120]) and s.below_median > 0.5
    assert current_holder("cpu") is None


def _kill_rank_one(sig: signal.Signals, seen: dict[int, psutil.Process]):
    def on_progress(progress) -> None:
        if not seen:
            seen.update(_ranks_below())
            os.kill(seen[1].pid, sig)
    return on_progress


def test_a_killed_rank_is_one_line_naming_it_and_leaves_no_process():
    seen: dict[int, psutil.Process] = {}
    config = RanksConfig(sizes=(32, 64, 128, 256), budget_s=2.0, threads=1)
    with pytest.raises(DashboardError, match=r"^rank 1 on \S+ died \(pid \d+\).*devices are free$"):
        run_ranks(config, 2, JobHooks(on_progress=_kill_rank_one(signal.SIGKILL, seen)))
    assert len(seen) == 2 and _gone(list(seen.values())) and current_holder("cpu") is None


def test_a_killed_rank_is_named_even_when_the_poller_sleeps_through_the_deaths(monkeypatch):
    """On a loaded machine the launcher's 20 ms poller could sleep through the ~0.1 s between rank 1's death and
    torchrun's SIGTERM to rank 0 (seen once in the fast tier): both gone at one look, and the message named no
    rank. A poller that never looks during the run is that, every time: the ranks' `ended` tells them apart."""
    monkeypatch.setattr(rank_launch, "POLL_S", 600.0)
    seen: dict[int, psutil.Process] = {}
    config = RanksConfig(sizes=(32, 64, 128, 256), budget_s=2.0, threads=1)
    with pytest.raises(DashboardError, match=r"^rank 1 on \S+ died \(pid \d+\).*devices are free$"):
        run_ranks(config, 2, JobHooks(on_progress=_kill_rank_one(signal.SIGKILL, seen)))
    assert len(seen) == 2 and _gone(list(seen.values())) and current_holder("cpu") is None


def test_a_hung_rank_is_one_line_naming_it_and_leaves_no_process():
    seen: dict[int, psutil.Process] = {}
    config = RanksConfig(sizes=(32, 64, 128, 256), budget_s=2.0, threads=1, timeout_s=3)
    with pytest.raises(DashboardError, match=r"^rank 1 on \S+ hung"):
        run_ranks(config, 2, JobHooks(on_progress=_kill_rank_one(signal.SIGSTOP, seen)))
    assert len(seen) == 2 and _gone(list(seen.values())) and current_holder("cpu") is None


def test_a_rank_that_never_joins_is_named(monkeypatch):
    monkeypatch.setenv(rank_worker.LATE_ENV, "1")
    with pytest.raises(DashboardError, match=r"^rank 1 on this machine never joined"):
        run_ranks(RanksConfig(sizes=(32,), budget_s=0.1, threads=1, timeout_s=3), 2)
    assert current_holder("cpu") is None and _gone(list(_ranks_below().values()))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_agents_on_loopback_give_one_gathered_result(tmp_path):
    """The README's many-machine command with two torchrun agents as two "nodes" (c10d on a loopback port),
    each with a lock folder of its own, as two machines have."""
    port = _free_port()
    agents = [subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
         "--node-rank", str(node), "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
         "--rdzv-id", "ranks-test", "-m", "core", "matmul", "--distributed", "--json", "--sizes", "32,64",
         "--budget", "0.1", "--threads", "1", "--timeout", "60"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT),
                 GPU_VS_CPU_LOCK_DIR=str(tmp_path / f"locks{node}")))
        for node in range(2)]
    try:
        outs = [a.communicate(timeout=240) for a in agents]
    finally:
        for a in agents:
            a.kill()
    assert [a.returncode for a in agents] == [0, 0], [err[-2000:] for _, err in outs]
    printed = [out for out, _ in outs if out.strip()]
    assert len(printed) == 1, "rank 0 alone prints"
    run = ClusterRun.from_json(json.loads(printed[0]), "run")
    assert [r.rank for r in run.ranks] == [0, 1] and run.mode == "torchrun"
    assert all(len(r.together) == 2 and len(r.alone) == 2 for r in run.ranks)
    assert current_holder("cpu") is None


def test_under_your_torchrun_a_hung_rank_is_named_by_its_stopped_heartbeat(tmp_path):
    """Two agents on loopback; rank 1 frozen mid-run: rank 0's one line names rank 1 and its host, from the
    heartbeats in the job's store (no launcher of ours watches the processes there)."""
    port = _free_port()
    agents = [subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
         "--node-rank", str(node), "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
         "--rdzv-id", "ranks-hang", "-m", "core", "matmul", "--distributed", "--sizes", "32,64,128,256",
         "--budget", "2", "--threads", "1", "--timeout", "3"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), GPU_VS_CPU_LOCK_DIR=str(tmp_path / f"l{node}")))
        for node in range(2)]
    lines: list[str] = []
    started = threading.Event()

    def read() -> None:
        for line in agents[0].stderr:
            lines.append(line)
            if line.startswith("[1/"):
                started.set()
    threading.Thread(target=read, daemon=True).start()
    below: list[psutil.Process] = []
    try:
        assert started.wait(240), "".join(lines)[-2000:]
        below = [p for a in agents for p in psutil.Process(a.pid).children(recursive=True)]
        (frozen,) = [p for p in psutil.Process(agents[1].pid).children(recursive=True) if "matmul" in p.cmdline()]
        frozen.send_signal(signal.SIGSTOP)
        agents[0].wait(timeout=120)
        time.sleep(0.5)  # the reader's last lines
        errors = [line for line in lines if line.startswith("error: ")]
        assert len(errors) == 1 and errors[0].startswith(f"error: rank 1 on {socket.gethostname()[:120]} hung: its "
                                                         "heartbeat stopped (seen from rank 0"), "".join(lines)[-3000:]
    finally:
        for a in agents:
            a.kill()
    assert _gone(below), "the agents killed outright take their ranks (the frozen one too) with them"


def test_two_agents_on_one_machine_share_one_machine_lock(tmp_path):
    """Two torchrun agents on one machine and one lock folder (issue 33, item 7): each agent's first rank used
    to take the machine's lock before the rendezvous, so the second waited for the first, which waited for the
    second to join, until the timeout. Now the first rank of the machine holds it once, for both."""
    port = _free_port()
    locks = tmp_path / "one-machine"
    agents = [subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
         "--node-rank", str(node), "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
         "--rdzv-id", "ranks-one-machine", "-m", "core", "matmul", "--distributed", "--json", "--sizes", "32,64",
         "--budget", "0.1", "--threads", "1", "--timeout", "30"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), GPU_VS_CPU_LOCK_DIR=str(locks)))
        for node in range(2)]
    try:
        outs = [a.communicate(timeout=240) for a in agents]
    finally:
        for a in agents:
            a.kill()
    assert [a.returncode for a in agents] == [0, 0], [err[-2000:] for _, err in outs]
    run = ClusterRun.from_json(json.loads(next(out for out, _ in outs if out.strip())), "run")
    assert [r.rank for r in run.ranks] == [0, 1] and run.load is not None  # rank 0 held the machine's lock
    assert list(locks.glob("cpu.queue")) and not list(locks.glob("*.holder.json"))  # used, and let go


def test_ranks_that_oversubscribe_the_cores_are_said_and_name_no_straggler():
    """Issue 30: `--ranks 3` on 2 cores named "rank 0 ... 49 % below the median" in 3 of 4 runs. Here the job
    gets one more one-thread rank than the cores it may use, whatever this machine has."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    ranks = min(cores + 1, 2 * cores)
    out = subprocess.run([sys.executable, "-m", "core", "matmul", "--ranks", str(ranks), "--sizes", "32,64",
                          "--budget", "0.1", "--json", "--quiet"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"warning: {ranks} CPU ranks run {ranks} threads on the {cores} usable cores: oversubscribed" in out.stderr
    run = ClusterRun.from_json(json.loads(out.stdout), "run")
    assert run.straggler_call == "unclear" and not run.stragglers
    assert "oversubscribed" in run.straggler_note and all(r.cores == cores for r in run.ranks)
