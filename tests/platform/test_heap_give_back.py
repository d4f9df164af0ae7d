"""A CPU job's freed matrices go back to the operating system at its end, never under another thread's timing;
a server keeps two malloc heaps for all its sessions' threads.

glibc keeps the pages of freed heap blocks; malloc_trim hands them back (core.platform.memory.give_back_heap,
called as a job lets its devices go). It walks every arena under its lock, so while another thread of this
process holds a device (a race timing the CPU) it is left for later.
"""

from __future__ import annotations

import ctypes
import sys
import threading

import pytest

from core.platform import device_lock, heap, jobs, memory

WAIT_S = 10.0


@pytest.fixture
def trims(monkeypatch) -> list[int]:
    """malloc_trim as a recorder: the calls it got, whatever the C library is."""
    calls: list[int] = []
    monkeypatch.setattr(heap, "_glibc", lambda name, *types: lambda pad: calls.append(pad) or 1)
    return calls


def _holding(devices: list[str]) -> tuple[threading.Thread, threading.Event]:
    """Another thread of this process holding `devices` until the returned event is set."""
    inside, may_leave = threading.Event(), threading.Event()

    def hold() -> None:
        with device_lock.hold_devices(devices, label="another session's race"):
            inside.set()
            may_leave.wait(WAIT_S)

    thread = threading.Thread(target=hold)
    thread.start()
    assert inside.wait(WAIT_S)
    return thread, may_leave


def test_a_cpu_job_gives_its_heap_back_at_its_end(trims):
    with jobs.run_job(["cpu"], label="a race on the CPU"):
        assert trims == []  # not while it runs
    assert trims == [0]


def test_a_job_without_the_cpu_leaves_the_heap_alone(trims, gpu_model):
    gpu_model("A100-80GB", count=1)
    with jobs.run_job(["cuda:0"], label="a race on the GPU"):
        pass
    assert trims == []


def test_no_give_back_while_another_thread_holds_a_device(trims):
    thread, may_leave = _holding(["cuda:0"])
    try:
        assert memory.give_back_heap() is False
        with jobs.run_job(["cpu"], label="a CPU job beside a GPU race"):
            pass
        assert trims == [], "malloc_trim ran while another thread was timing"
    finally:
        may_leave.set()
        thread.join(WAIT_S)
    assert memory.give_back_heap() is True and trims == [0]


def test_no_c_library_trim_is_no_give_back(monkeypatch):
    monkeypatch.setattr(heap, "_glibc", lambda *a: None)
    assert memory.give_back_heap() is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_the_real_trim_is_found_and_runs():
    heap._glibc.cache_clear()
    assert heap._glibc("malloc_trim", ctypes.c_size_t) is not None
    assert memory.give_back_heap() is True


ARENA_PROBE = """
import ctypes, sys, threading, time
if sys.argv[1] == "limit":
    from core.platform.heap import limit_heap_arenas
    print(limit_heap_arenas())
else:
    import core.platform.heap  # the same imports
stats = ctypes.CDLL("libc.so.6").malloc_stats  # one "Arena N:" block per heap, on stderr
stats()
sys.stderr.write("-- threads --\\n")
sys.stderr.flush()
def work():
    kept = [bytes(200_000) for _ in range(5)]  # large enough for malloc, not Python's small-object pool
    time.sleep(0.5)
threads = [threading.Thread(target=work) for _ in range(6)]
for t in threads:
    t.start()
for t in threads:
    t.join()
stats()
"""


def _arenas(mode: str, env: dict[str, str]) -> tuple[str, int, int]:
    """(what limit_heap_arenas said, heaps before six threads allocate, heaps after)."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", ARENA_PROBE, mode], cwd=root, env={**env, "PYTHONPATH": str(root)},
                         capture_output=True, text=True, timeout=120, check=True)
    before, after = out.stderr.split("-- threads --")
    return (out.stdout.strip(), *(sum(line.startswith("Arena ") for line in part.splitlines())
                                  for part in (before, after)))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc arenas are glibc's")
def test_a_server_keeps_two_heaps_for_all_its_threads():
    import os

    env = {k: v for k, v in os.environ.items() if k != heap.ARENA_ENV}
    _, before, after = _arenas("none", env)
    assert after > max(before, heap.SERVER_ARENAS), "six threads made no heaps of their own: tells nothing"
    said, before, after = _arenas("limit", env)
    assert said == "True" and after == max(before, heap.SERVER_ARENAS)


def test_an_operators_malloc_arena_max_wins(monkeypatch):
    monkeypatch.setenv(heap.ARENA_ENV, "4")
    assert heap.limit_heap_arenas() is False


def test_no_c_library_no_limit(monkeypatch):
    monkeypatch.delenv(heap.ARENA_ENV, raising=False)
    monkeypatch.setattr(heap, "_glibc", lambda *a: None)
    assert heap.limit_heap_arenas() is False


def test_the_server_sets_its_heap_limit_without_importing_torch():
    """app.py's first import sets the limit: importing torch there would move its ~3 s to the first page."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    check = "import sys, pages.shared.server_memory; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", check], cwd=root, capture_output=True, text=True, timeout=120,
                         check=True)
    assert out.stdout.strip() == "False"
