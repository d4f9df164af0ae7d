"""Feature sets shared by every session of a server: built once, bounded, stoppable while waiting."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np
import pytest

from core.classifier import workbench
from core.classifier.model import ClassifierConfig
from core.classifier.shared_builds import SharedBuilds, reviews_digest
from core.classifier.workbench import PATH, UPLOAD, DataChoice, Upload, Workbench
from core.platform.device_lock import JobCancelled
from core.platform.jobs import JobHooks
from tests.review_fixtures import csv_bytes, toy_reviews

FAST = ClassifierConfig(hidden=4, lr=0.3, batch_size=16, epochs=1, weighting="binary", ngrams=1, device="cpu")


def test_a_value_is_built_once_and_then_shared():
    store: SharedBuilds[object] = SharedBuilds()
    first = store.get_or_build("k", object)
    assert store.get_or_build("k", lambda: pytest.fail("built twice")) is first
    assert store.builds == 1 and len(store) == 1


def test_the_oldest_value_is_dropped_past_the_bound():
    store: SharedBuilds[str] = SharedBuilds(max_entries=2)
    for key in "abc":
        store.get_or_build(key, lambda key=key: key * 2)
    store.get_or_build("b", lambda: pytest.fail("b was kept"))  # b is now the newest
    store.get_or_build("d", lambda: "dd")
    assert len(store) == 2 and store.builds == 4
    assert store.get_or_build("c", lambda: "rebuilt") == "rebuilt"  # c, the oldest, had gone


def test_sessions_asking_together_wait_for_one_build():
    store: SharedBuilds[int] = SharedBuilds()
    started, release, calls, got = threading.Event(), threading.Event(), [], []

    def slow_build() -> int:
        calls.append(1)
        started.set()
        release.wait(5)
        return 42

    threads = [threading.Thread(target=lambda: got.append(store.get_or_build("k", slow_build))) for _ in range(5)]
    threads[0].start()
    started.wait(5)
    for t in threads[1:]:
        t.start()
    time.sleep(0.3)  # the others are waiting, not building
    release.set()
    for t in threads:
        t.join(5)
    assert got == [42] * 5 and calls == [1]


def test_a_failed_build_stores_nothing_and_the_next_session_builds():
    store: SharedBuilds[int] = SharedBuilds()

    def broken() -> int:
        raise ValueError("bad setting")

    with pytest.raises(ValueError):
        store.get_or_build("k", broken)
    assert len(store) == 0 and store.get_or_build("k", lambda: 7) == 7


def test_stop_while_another_session_builds():
    store: SharedBuilds[int] = SharedBuilds()
    started, release = threading.Event(), threading.Event()

    def slow_build() -> int:
        started.set()
        release.wait(5)
        return 1

    builder = threading.Thread(target=store.get_or_build, args=("k", slow_build))
    builder.start()
    started.wait(5)
    t0 = time.monotonic()
    with pytest.raises(JobCancelled, match="another session"):
        store.get_or_build("k", lambda: pytest.fail("must wait, not build"), should_stop=lambda: True)
    assert time.monotonic() - t0 < 2
    release.set()
    builder.join(5)
    assert store.get_or_build("k", lambda: pytest.fail("kept")) == 1


def test_the_digest_names_the_content_not_the_route():
    reviews = toy_reviews(20)
    same = replace(reviews, texts=tuple(reviews.texts))
    assert reviews_digest(reviews) == reviews_digest(same)
    flipped = replace(reviews, labels=(1 - reviews.labels).astype(np.int8))
    edited = replace(reviews, texts=(reviews.texts[0] + "!",) + reviews.texts[1:])
    split = replace(reviews, is_test=np.arange(reviews.n) % 2 == 0)
    digests = {reviews_digest(r) for r in (reviews, flipped, edited, split, replace(reviews, source="other"))}
    assert len(digests) == 5


@pytest.fixture
def toy_csv(tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(tmp_path))
    reviews = toy_reviews(40)
    path = tmp_path / "toy.csv"
    path.write_bytes(csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]))
    return path


def test_two_sessions_share_one_feature_set_and_train_on_it(toy_csv, monkeypatch):
    built = []
    real = workbench.prepare
    monkeypatch.setattr(workbench, "prepare", lambda *a: built.append(1) or real(*a))
    shared = SharedBuilds()
    ana, ben = Workbench(shared_features=shared), Workbench(shared_features=shared)
    ana.load(DataChoice(PATH, path=str(toy_csv)))
    ben.load(DataChoice(UPLOAD, uploads=(Upload("toy.csv", toy_csv.read_bytes(), "id-1"),)))  # same rows, uploaded
    ben.reviews = replace(ben.reviews, source=ana.reviews.source)  # as two sessions reading one file would name it
    assert ana.prepared(FAST) is ben.prepared(FAST) and built == [1]
    ana.train(FAST, JobHooks())
    ben.train(replace(FAST, lr=0.1), JobHooks())  # a training setting: the same features
    assert built == [1] and [len(b.runs) for b in (ana, ben)] == [1, 1]
    ben.prepared(replace(FAST, seed=3))  # another split: built for ben alone
    assert built == [1, 1] and ana.prep is not ben.prep


def test_other_reviews_never_share_features(toy_csv, tmp_path):
    shared = SharedBuilds()
    other = tmp_path / "other.csv"
    reviews = toy_reviews(30, seed=1)
    other.write_bytes(csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]))
    ana, ben = Workbench(shared_features=shared), Workbench(shared_features=shared)
    ana.load(DataChoice(PATH, path=str(toy_csv)))
    ben.load(DataChoice(PATH, path=str(other)))
    assert ana.prepared(FAST)[0].n_train != ben.prepared(FAST)[0].n_train and shared.builds == 2


def test_a_built_in_data_set_is_read_once_for_every_session(monkeypatch, toy_csv):
    reads = []
    monkeypatch.setattr(DataChoice, "load", lambda self, progress=None: reads.append(self.key) or toy_reviews(20))
    shared: SharedBuilds = SharedBuilds(max_entries=2)
    ana, ben = Workbench(shared_reviews=shared), Workbench(shared_reviews=shared)
    assert ana.load(DataChoice("rt-polarity")) is ben.load(DataChoice("rt-polarity")) and len(reads) == 1
    ana.load(DataChoice(PATH, path=str(toy_csv)))  # a server path or an upload is the session's own
    ben.load(DataChoice(PATH, path=str(toy_csv)))
    assert len(reads) == 3 and ana.reviews is not ben.reviews
