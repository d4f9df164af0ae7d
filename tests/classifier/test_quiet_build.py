"""A server's feature build is quiet work (issue 31): a child process, stopped while a timed job
holds or waits for a device, and the same matrices and baseline as the build it replaces."""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import psutil
import pytest

from core.classifier import training
from core.classifier.baseline import PREPARE_STEPS
from core.classifier.model import ClassifierConfig
from core.classifier.workbench import Workbench
from core.platform.device_lock import JobCancelled
from core.platform.jobs import JobHooks, Progress, run_job
from tests.lock_helpers import wait_until
from tests.review_fixtures import toy_reviews

pytestmark = pytest.mark.slow  # each test spawns a Python process that imports scikit-learn (seconds here)
CONFIG = ClassifierConfig(hidden=4, epochs=1, weighting="nb", ngrams=2, device="cpu")
MATRICES = ("x_train", "x_val", "x_test")


@pytest.fixture
def quiet_calls(monkeypatch) -> list[str]:
    """Every build counts as large, and each quiet one is noted."""
    calls: list[str] = []
    real = training.run_quietly

    def counted(fn, *args, what, **kwargs):
        calls.append(what)
        return real(fn, *args, what=what, **kwargs)

    monkeypatch.setattr(training, "QUIET_BUILD_CHARS", 1)
    monkeypatch.setattr(training, "run_quietly", counted)
    return calls


def test_a_quiet_build_gives_the_same_matrices_baseline_and_steps(quiet_calls):
    reviews = toy_reviews(60)
    heard: list[Progress] = []
    quiet, quiet_base = training.prepare_quietly(reviews, CONFIG, JobHooks(on_progress=heard.append))
    assert quiet_calls == ["building the features"]
    local, local_base = training.prepare(reviews, CONFIG)
    assert quiet_calls == ["building the features"], "prepare builds in this process"
    for name in MATRICES:
        a, b = getattr(quiet, name), getattr(local, name)
        assert a.shape == b.shape and a.dtype == b.dtype and (a != b).nnz == 0, name
    assert np.array_equal(quiet.y_train, local.y_train) and np.array_equal(quiet.y_test, local.y_test)
    assert quiet.vectorizer.vectorizer.vocabulary_ == local.vectorizer.vectorizer.vocabulary_
    assert np.array_equal(quiet.vectorizer.column_scale, local.vectorizer.column_scale)
    assert (quiet_base.accuracy, quiet_base.test_loss) == (local_base.accuracy, local_base.test_loss)
    assert [(p.done, p.total) for p in heard] == [(0, PREPARE_STEPS)] + [(d, PREPARE_STEPS) for d in range(4)]
    assert "process of its own" in heard[0].message and "LogisticRegression" in heard[-1].message


def test_a_small_build_stays_in_the_server(monkeypatch):
    monkeypatch.setattr(training, "run_quietly", lambda *a, **k: pytest.fail("a 60-review build went quiet"))
    features, _ = training.prepare_quietly(toy_reviews(60), CONFIG)  # far below QUIET_BUILD_CHARS
    assert features.n_train > 0


def _quiet_child() -> psutil.Process:
    children = multiprocessing.active_children()
    assert children, "no quiet child"
    return psutil.Process(children[0].pid)


def test_the_build_is_stopped_while_a_race_holds_the_cpu_and_goes_on_after(quiet_calls):
    """A race of this server pressed during the build: the build's process is stopped (not merely slowed) until
    the race ends, the page hears that it waits, and what comes back is the matrix it would have built."""
    held, release = threading.Event(), threading.Event()

    def race() -> None:
        with run_job(["cpu"], JobHooks(), label="a race"):
            held.set()
            release.wait(60)

    heard: list[str] = []
    out: dict = {}
    bench = Workbench(reviews=toy_reviews(60), reviews_key="toy", quiet=True)
    racer = threading.Thread(target=race)
    racer.start()
    assert held.wait(10)
    builder = threading.Thread(target=lambda: out.update(
        built=bench.prepared(CONFIG, JobHooks(on_progress=lambda p: heard.append(p.message)))))
    builder.start()
    try:
        wait_until(lambda: multiprocessing.active_children(), 30)
        wait_until(lambda: _quiet_child().status() == psutil.STATUS_STOPPED, 10)
        wait_until(lambda: any("paused while a race" in m for m in heard), 10)
        assert "built" not in out
    finally:
        release.set()
        racer.join(10)
    builder.join(120)
    assert quiet_calls == ["building the features"]
    local, _ = training.prepare(toy_reviews(60), CONFIG)
    assert all((getattr(out["built"][0], name) != getattr(local, name)).nnz == 0 for name in MATRICES)
    assert "LogisticRegression" in heard[-1]


def test_a_stop_ends_the_quiet_build_and_its_process(quiet_calls):
    stop = threading.Event()
    with pytest.raises(JobCancelled, match="building the features was stopped"):
        threading.Timer(0.5, stop.set).start()
        with run_job(["cpu"], JobHooks(), label="a race"):  # holds the child still, so the Stop comes first
            training.prepare_quietly(toy_reviews(60), CONFIG, JobHooks(should_stop=stop.is_set))
    wait_until(lambda: not multiprocessing.active_children(), 10)
