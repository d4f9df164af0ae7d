"""TF32 is process-wide: one job at a time changes it, with the API the running torch wants, and puts it back."""

from __future__ import annotations

import threading

import pytest
import torch

from core.matmul.engine import tf32_matmul
from core.platform import precision

WAIT_S = 5.0  # generous: only a broken lock makes a test wait this long


@pytest.fixture(autouse=True)
def default_precision():
    """Each test starts from torch's default and leaves it so, whatever it set."""
    yield
    if precision.uses_new_api():
        torch.backends.cuda.matmul.fp32_precision = "none"
    torch.set_float32_matmul_precision("highest")


def test_a_job_wanting_the_other_setting_waits_until_the_first_is_done():
    seen: list[tuple[str, bool]] = []
    a_inside, a_may_leave, b_done = threading.Event(), threading.Event(), threading.Event()

    def job_a() -> None:
        with tf32_matmul(True):
            seen.append(("a in", precision.tf32_enabled()))
            a_inside.set()
            a_may_leave.wait(WAIT_S)
            seen.append(("a out", precision.tf32_enabled()))

    def job_b() -> None:
        a_inside.wait(WAIT_S)
        with tf32_matmul(False):
            seen.append(("b in", precision.tf32_enabled()))
        b_done.set()

    threads = [threading.Thread(target=job_a), threading.Thread(target=job_b)]
    for t in threads:
        t.start()
    assert not b_done.wait(0.3), "job b changed TF32 while job a was timing with it on"
    a_may_leave.set()
    for t in threads:
        t.join(WAIT_S)
    assert seen == [("a in", True), ("a out", True), ("b in", False)]
    assert precision.tf32_enabled() is False  # put back as found


def test_jobs_wanting_the_same_setting_share_it_and_the_last_restores():
    inside = threading.Barrier(2, timeout=WAIT_S)  # both must be inside at once, or this breaks

    def job() -> None:
        with tf32_matmul(True):
            inside.wait()
            assert precision.tf32_enabled()

    threads = [threading.Thread(target=job) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert not inside.broken and precision.tf32_enabled() is False


def test_a_block_inside_a_block_with_the_other_setting_is_an_error_not_a_deadlock():
    with tf32_matmul(False):
        with pytest.raises(RuntimeError, match="wait for itself"):
            with tf32_matmul(True):
                pass
        with tf32_matmul(False):  # the same setting nests
            assert precision.tf32_enabled() is False


def test_restored_in_finally_when_the_block_raises():
    with pytest.raises(ZeroDivisionError):
        with tf32_matmul(True):
            1 / 0
    assert precision.tf32_enabled() is False
    with tf32_matmul(False):  # and the lock was let go
        pass


@pytest.mark.skipif(not precision.uses_new_api(), reason="torch < 2.9 has only the legacy flag")
def test_after_set_float32_matmul_precision_the_getter_still_works():
    # torch >= 2.9: the legacy allow_tf32 setter after set_float32_matmul_precision left
    # get_float32_matmul_precision() raising for the rest of the process
    # (the reproduction); the new per-backend setting leaves that getter alone
    torch.set_float32_matmul_precision("high")
    with tf32_matmul(False) as in_effect:
        assert in_effect is False and torch.backends.cuda.matmul.fp32_precision == "ieee"
        assert torch.get_float32_matmul_precision() == "high"  # raised with the legacy setter
    assert torch.get_float32_matmul_precision() == "high"
    assert torch.backends.cuda.matmul.allow_tf32 is True


class LegacyMatmul:
    """torch.backends.cuda.matmul before 2.9: only allow_tf32."""

    def __init__(self) -> None:
        self.allow_tf32 = False

    def __getattr__(self, name: str):
        raise AttributeError(f"Unknown attribute {name}")


def test_older_torch_gets_the_legacy_flag(monkeypatch):
    legacy = LegacyMatmul()
    monkeypatch.setattr(precision, "_matmul_backend", lambda: legacy)
    assert not precision.uses_new_api()
    with tf32_matmul(True) as in_effect:
        assert in_effect is True and legacy.allow_tf32 is True
    assert legacy.allow_tf32 is False
