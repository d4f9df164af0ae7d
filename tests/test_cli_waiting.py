import io
import threading
import time

from core.cli.waiting import print_waiting
from core.platform.device_lock import hold_devices


def test_prints_a_line_when_waiting_and_when_the_line_moves():
    out = io.StringIO()
    release = [threading.Event(), threading.Event()]
    started = [threading.Event(), threading.Event()]

    def job(i):
        with hold_devices(["cpu"], label=f"job {i}"):
            started[i].set()
            release[i].wait(10)

    first = threading.Thread(target=job, args=(0,))
    first.start()
    started[0].wait(5)
    second = threading.Thread(target=job, args=(1,))
    second.start()
    time.sleep(0.3)  # the second job is in line now
    threading.Timer(0.5, release[0].set).start()
    threading.Timer(1.2, release[1].set).start()
    with hold_devices(["cpu"], on_wait=print_waiting(out)):
        pass
    for t in (first, second):
        t.join(10)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("waiting for cpu: 2 ahead") and "now running: job 0" in lines[0]
    assert lines[1].startswith("waiting for cpu: 1 ahead") and "now running: job 1" in lines[1]
    assert len(lines) == 2, "one line per change, not one per poll"
    assert all(line.endswith("(Ctrl+C to leave the line)") for line in lines)
