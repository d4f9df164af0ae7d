"""Issue 30.6: wrong instructor keys counted per client and per server, in a sliding window, never per session."""

from __future__ import annotations

import threading

from core.store.key_guard import LOCKED, KeyGuard

KEY = "correct horse battery staple"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_five_wrong_keys_lock_that_client_even_for_the_right_key():
    guard = KeyGuard(clock=Clock())
    assert [guard.check(KEY, f"guess {i}", "10.0.0.7") for i in range(5)] == [False] * 5
    assert guard.check(KEY, KEY, "10.0.0.7") is None
    assert guard.check(KEY, KEY, "10.0.0.8") is True, "another client still may"


def test_the_server_locks_after_thirty_wrong_keys_from_many_clients():
    guard = KeyGuard(clock=Clock())
    for i in range(30):
        assert guard.check(KEY, "nope", f"10.0.1.{i}") is False
    assert guard.check(KEY, KEY, "10.0.2.1") is None


def test_the_lock_ends_with_the_window():
    clock = Clock()
    guard = KeyGuard(clock=clock)
    for _ in range(5):
        guard.check(KEY, "nope", "a")
    clock.now += guard.window_s - 1
    assert guard.check(KEY, KEY, "a") is None
    clock.now += 2
    assert guard.check(KEY, KEY, "a") is True


def test_an_unknown_client_is_one_client():
    guard = KeyGuard(clock=Clock())
    for _ in range(5):
        guard.check(KEY, "nope", None)
    assert guard.check(KEY, KEY, None) is None


def test_concurrent_guesses_count_every_one():
    guard = KeyGuard(clock=Clock(), per_client=1000, per_server=1000)
    threads = [threading.Thread(target=lambda: [guard.check(KEY, "nope", "a") for _ in range(50)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(guard._server) == 400


def test_the_message_says_nothing_of_how_to_get_around_it():
    assert "session" not in LOCKED.lower() and "reload" not in LOCKED.lower() and "address" not in LOCKED.lower()


def test_a_client_that_is_no_address_is_the_unknown_client():
    guard = KeyGuard(clock=Clock())
    for client in (None, "", object(), "  ", 7):
        guard.check(KEY, "nope", client)
    assert guard.check(KEY, KEY, None) is None
