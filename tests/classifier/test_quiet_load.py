"""A server's large read of review data is quiet work (issue 31): a child process, stopped while a
timed job holds or waits for a device, giving the reviews the read in the server gives; a small read (rt-polarity's,
0.01-0.03 s of CPU: bench/quiet_load.py) stays in the server."""

from __future__ import annotations

import math
import multiprocessing
import sys
import threading

import numpy as np
import psutil
import pytest

from core.classifier import browser_paths, workbench
from core.classifier.browser_paths import QUIET_LOAD_CPU_S, read_cost_s
from core.classifier.workbench import PATH, UPLOAD, DataChoice, Upload, Workbench
from core.platform.jobs import JobHooks, run_job
from tests.lock_helpers import wait_until
from tests.review_fixtures import csv_bytes, labelled_rows, tar_gz, write_imdb_folder, write_rt_folder

RT = "/work/shared/data/rt-polaritydata"


def _upload(data: bytes, name: str = "reviews.csv") -> DataChoice:
    return DataChoice(UPLOAD, uploads=(Upload(name, data, "id-1"),))


def _same(a, b) -> bool:
    return a.texts == b.texts and np.array_equal(a.labels, b.labels) and a.source == b.source


def test_rt_polarity_costs_the_server_too_little_to_move(tmp_path, monkeypatch):
    pair = [(name, b"x" * 620_000) for name in ("rt-polarity.pos", "rt-polarity.neg")]  # its two files' sizes
    assert read_cost_s(True, "", pair) < QUIET_LOAD_CPU_S
    assert read_cost_s(True, "", [("rt-polaritydata.tar.gz", b"x" * 487_770)]) < QUIET_LOAD_CPU_S
    monkeypatch.setenv("GPU_VS_CPU_CACHE_DIR", str(tmp_path / "cache"))
    assert read_cost_s(False, "rt-polarity", []) < QUIET_LOAD_CPU_S, "downloaded, checked and read: still light"
    assert read_cost_s(False, "imdb", []) > QUIET_LOAD_CPU_S, "84 MB and 100,000 files"


def test_large_uploads_and_folders_cost_more(tmp_path, monkeypatch):
    assert read_cost_s(True, "", [("big.csv", b"x" * 10_000_000)]) > QUIET_LOAD_CPU_S
    assert read_cost_s(True, "", [("big.tar.gz", b"x" * 2_000_000)]) > QUIET_LOAD_CPU_S
    monkeypatch.setenv(browser_paths.DATA_ROOTS_ENV, str(tmp_path))
    assert read_cost_s(False, str(write_imdb_folder(tmp_path / "aclImdb")), []) == math.inf
    assert read_cost_s(False, str(write_rt_folder(tmp_path / "rt")), []) < QUIET_LOAD_CPU_S
    assert read_cost_s(False, "/etc", []) == 0.0, "refused in the server, at once, as before"


def test_a_small_read_stays_in_the_server(monkeypatch):
    monkeypatch.setattr(workbench, "run_quietly", lambda *a, **k: pytest.fail("a small upload went quiet"))
    bench = Workbench(quiet=True)
    reviews = bench.load(_upload(csv_bytes(labelled_rows())))
    assert reviews.n == len(labelled_rows())


@pytest.fixture
def quiet_calls(monkeypatch) -> list[str]:
    """Every read counts as large, and each quiet one is noted."""
    calls: list[str] = []
    real = workbench.run_quietly

    def counted(fn, *args, what, **kwargs):
        calls.append(what)
        return real(fn, *args, what=what, **kwargs)

    monkeypatch.setattr(workbench, "QUIET_LOAD_CPU_S", -1.0)
    monkeypatch.setattr(workbench, "run_quietly", counted)
    return calls


@pytest.mark.slow
def test_a_quiet_read_gives_the_same_reviews_and_imports_no_torch(quiet_calls, tmp_path):
    archive = tar_gz(write_rt_folder(tmp_path / "rt"), "rt-polaritydata")
    for choice in (_upload(csv_bytes(labelled_rows())), _upload(archive, "rt.tar.gz")):
        quiet = Workbench(quiet=True).load(choice)
        assert _same(quiet, Workbench().load(choice))
    assert quiet_calls == ["reading the reviews"] * 2
    probe = ("import sys; from core.classifier.browser_paths import read_choice; "
             "print('torch' in sys.modules or 'core.platform.quiet_work' in sys.modules)")
    out = __import__("subprocess").run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", "the child's work module pulls in torch"


def _quiet_child() -> psutil.Process:
    children = multiprocessing.active_children()
    assert children, "no quiet child"
    return psutil.Process(children[0].pid)


@pytest.mark.slow
def test_the_read_is_stopped_while_a_race_holds_the_cpu_and_goes_on_after(quiet_calls):
    """A race pressed during the read: the read's process is stopped until the race ends, the page's progress is
    touched meanwhile (its chance to act on a Stop), and the reviews that come back are those of the read."""
    held, release = threading.Event(), threading.Event()

    def race() -> None:
        with run_job(["cpu"], JobHooks(), label="a race"):
            held.set()
            release.wait(60)

    touched: list[tuple] = []
    out: dict = {}
    choice = _upload(csv_bytes(labelled_rows()))
    racer = threading.Thread(target=race)
    racer.start()
    assert held.wait(10)
    reader = threading.Thread(target=lambda: out.update(
        reviews=Workbench(quiet=True).load(choice, progress=lambda d, t: touched.append((d, t)))))
    reader.start()
    try:
        wait_until(lambda: multiprocessing.active_children(), 30)
        wait_until(lambda: _quiet_child().status() == psutil.STATUS_STOPPED, 10)
        wait_until(lambda: len(touched) >= 2, 10)
        assert "reviews" not in out
    finally:
        release.set()
        racer.join(10)
    reader.join(120)
    assert quiet_calls == ["reading the reviews"]
    assert _same(out["reviews"], Workbench().load(choice))


@pytest.mark.slow
def test_a_page_stop_in_the_progress_ends_the_read_and_its_process(quiet_calls):
    """Streamlit ends a stopped script at its next page update: here the progress raises as that update would."""
    class Stopped(Exception):
        pass

    def progress(done: int, total: int | None) -> None:
        raise Stopped

    with pytest.raises(Stopped):
        with run_job(["cpu"], JobHooks(), label="a race"):  # holds the child still, so the touch comes first
            Workbench(quiet=True).load(_upload(csv_bytes(labelled_rows())), progress=progress)
    wait_until(lambda: not multiprocessing.active_children(), 10)


def test_rt_polarity_from_its_folder_reads_in_the_server(monkeypatch):
    from pathlib import Path

    if not Path(RT).is_dir():
        pytest.skip(f"rt-polarity data not found at {RT}")
    monkeypatch.setenv(browser_paths.DATA_ROOTS_ENV, RT)
    monkeypatch.setattr(workbench, "run_quietly", lambda *a, **k: pytest.fail("rt-polarity went quiet"))
    assert Workbench(quiet=True).load(DataChoice(PATH, path=RT)).n == 10662


def test_a_download_is_not_stopped_midway_but_an_upload_is(tmp_path, monkeypatch):
    """A connection stalled for a race's length would be dropped: a quiet read that downloads waits for a quiet
    moment and then runs to its end (pause=False); any other read is stopped while a job is timed."""
    monkeypatch.setenv("GPU_VS_CPU_CACHE_DIR", str(tmp_path / "cache"))
    pauses: list[bool] = []
    monkeypatch.setattr(workbench, "run_quietly", lambda fn, *a, pause=True, **k: pauses.append(pause))
    DataChoice("imdb").load_quietly()
    _upload(b"x" * 20_000_000).load_quietly()
    assert pauses == [False, True]
