import io
import threading

from core.cli.waiting import cli_hooks
from core.platform.device_lock import hold_devices
from core.platform.jobs import run_job
from tests.lock_helpers import tickets, wait_until



def _messages(out: io.StringIO) -> list[str]:
    """The waiting lines as messages: each is wrapped at 100 columns, its continuation lines indented by two."""
    lines = out.getvalue().splitlines()
    assert all(len(line) <= 100 for line in lines), lines
    messages: list[str] = []
    for line in lines:
        if line.startswith("  ") and messages:
            messages[-1] += " " + line.strip()
        else:
            messages.append(line)
    return messages

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
    wait_until(lambda: len(tickets("cpu")) == 1)  # the second job is in line now

    def let_go_as_lines_appear():
        """Each job ahead lets go once the CLI has printed the line that names it."""
        for i in range(2):
            wait_until(lambda: len(_messages(out)) > i)
            release[i].set()

    releaser = threading.Thread(target=let_go_as_lines_appear)
    releaser.start()
    with run_job(["cpu"], cli_hooks(stream=out), label="cli test"):
        pass
    for t in (first, second, releaser):
        t.join(10)
    lines = _messages(out)
    assert lines[0].startswith("waiting for cpu: 2 ahead") and "now running: job 0" in lines[0]
    assert lines[1].startswith("waiting for cpu: 1 ahead") and "now running: job 1" in lines[1]
    assert len(lines) == 2, "one line per change, not one per poll"
    assert all(line.endswith("(Ctrl+C to leave the line)") for line in lines)


def test_cli_hooks_print_the_line_for_a_core_job_and_pass_progress_on():
    from core.platform.jobs import Progress, run_job
    from tests.lock_helpers import hold_cpu_for

    out, seen = io.StringIO(), []
    holder = hold_cpu_for(0.5, "a student's sweep")
    with run_job(["cpu"], cli_hooks(on_progress=seen.append, stream=out), label="cli test") as job:
        job.report(Progress(1, 2, "half"))
    holder.join(10)
    [line] = _messages(out)
    assert line.startswith("waiting for cpu: 1 ahead") and "now running: a student's sweep" in line
    assert line.endswith("(Ctrl+C to leave the line)") and [p.message for p in seen] == ["half"]
