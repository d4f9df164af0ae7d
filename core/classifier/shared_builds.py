"""What the Review classifier builds once for every session of a server, not once per student.

A class presses Train on the same reviews with the same settings. Per session, reading a built-in
data set costs its parse (aclImdb: ~65 MB of text) and building the document-term matrices about a
second of CPU under the device lock and ~30 MiB (rt-polarity, the mini-batch preset's 104,903
terms): sixty students would hold sixty identical copies. `SharedBuilds` keeps the few newest
values by what they are built from (a built-in data set's name; the reviews' content and the
feature settings, `features_key`), and builds each at most once at a time: a session that asks
while another builds the same value waits for it (and can still be stopped).

It is an explicit object, made once per server by the page (`st.cache_resource`) and handed to
each session's Workbench; core keeps no hidden global. Training and prediction only read the
values, so sessions on other threads can share them.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from core.classifier.loaders import Reviews
from core.platform.device_lock import JobCancelled
from core.platform.jobs import STOPPED_BY_USER, StopCheck

T = TypeVar("T")
MAX_ENTRIES = 4  # e.g. two presets (the lecture caps its vocabulary) of two data sets; rt-polarity's largest ~30 MiB
WAIT_POLL_S = 0.1  # how often a waiting session asks whether its user pressed Stop


def reviews_digest(reviews: Reviews) -> str:
    """A name for the reviews' content: equal for two sessions that loaded the same rows, whatever the route."""
    h = hashlib.sha256()
    h.update(reviews.source.encode())
    h.update(reviews.labels.tobytes())
    if reviews.is_test is not None:  # aclImdb's own split decides the test rows
        h.update(reviews.is_test.tobytes())
    for text in reviews.texts:
        h.update(text.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


class SharedBuilds(Generic[T]):
    """A bounded, thread-safe store that builds each value at most once at a time."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self.builds = 0  # values built here: a bench and the tests count them
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, T] = OrderedDict()  # oldest first
        self._building: dict[Hashable, threading.Event] = {}

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get_or_build(self, key: Hashable, build: Callable[[], T], should_stop: StopCheck | None = None) -> T:
        """The value for `key`, built by `build` unless kept or being built by another session.

        A build that fails (a Stop, a bad setting) stores nothing and lets the next caller try.
        """
        while True:
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key]
                pending = self._building.get(key)
                if pending is None:
                    pending = self._building[key] = threading.Event()
                    break
            while not pending.wait(WAIT_POLL_S):  # another session builds it: wait, then look again
                if should_stop is not None and should_stop():
                    raise JobCancelled(f"{STOPPED_BY_USER} while another session built the same thing")
        try:
            value = build()
            with self._lock:
                self.builds += 1
                self._items[key] = value
                while len(self._items) > self.max_entries:
                    self._items.popitem(last=False)
            return value
        finally:
            with self._lock:
                del self._building[key]
            pending.set()
