import threading
import time

import pytest

from core.device_lock import JobCancelled, hold_devices


def test_two_jobs_on_one_device_never_overlap():
    spans: list[tuple[float, float]] = []
    waited: list[int] = []

    def job():
        with hold_devices(["cpu"], on_wait=lambda device, ahead: waited.append(ahead)):
            start = time.perf_counter()
            time.sleep(0.2)
            spans.append((start, time.perf_counter()))

    threads = [threading.Thread(target=job) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    spans.sort()
    assert len(spans) == 2, "both jobs finish"
    assert spans[0][1] <= spans[1][0], f"timed regions overlap: {spans}"
    assert waited and min(waited) >= 1, "the second job saw it was waiting"


def test_cancelled_waiter_leaves_the_lock_free():
    with hold_devices(["cuda:0"]):
        with pytest.raises(JobCancelled):
            with hold_devices(["cuda:0"], should_cancel=lambda: True):
                pass
    done = threading.Event()

    def later():
        with hold_devices(["cuda:0"]):
            done.set()

    t = threading.Thread(target=later)
    t.start()
    t.join(5)
    assert done.is_set()


def test_released_after_an_exception():
    with pytest.raises(ValueError):
        with hold_devices(["cpu"]):
            raise ValueError("job failed")
    with hold_devices(["cpu"], should_cancel=lambda: True):
        pass  # would raise JobCancelled if the lock were still held
