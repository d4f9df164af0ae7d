"""The event lines workers send their launcher: written whole, and read back even when writers mixed them.

Found by two ranks on one core (`taskset -c 0 python -m core matmul --ranks 2`): torchrun starts workers
unbuffered, print() wrote each event's text and newline in two calls, two ranks' events met on one line
('@@gvc-dist {...}@@gvc-dist {...}') and the launcher ended in a JSONDecodeError traceback.
"""

from __future__ import annotations

import io
import json
import os
import sys

import pytest

from core.platform import torchrun
from core.platform.torchrun import EVENT_PREFIX, emit_event, events_in


def test_an_event_is_one_write_of_one_whole_line(monkeypatch, capsys):
    writes: list[bytes] = []
    monkeypatch.setattr(torchrun.os, "write", lambda fd, data: writes.append(bytes(data)) or len(data))
    print("a line print() left buffered", end="")
    emit_event({"event": "joining", "rank": 1})
    assert writes == [(EVENT_PREFIX + json.dumps({"event": "joining", "rank": 1}) + "\n").encode()]
    assert capsys.readouterr().out == "a line print() left buffered"  # flushed before the event


def test_a_large_event_is_written_to_the_end_whatever_each_call_takes(monkeypatch):
    writes: list[bytes] = []

    def short_write(fd: int, data: bytes) -> int:
        writes.append(bytes(data[:1000]))
        return min(1000, len(data))
    monkeypatch.setattr(torchrun.os, "write", short_write)
    emit_event({"event": "result", "run": "x" * 5000})
    line = b"".join(writes).decode()
    assert line.endswith("\n") and json.loads(line[len(EVENT_PREFIX):])["run"] == "x" * 5000


@pytest.mark.parametrize("text, events, rest", [
    (EVENT_PREFIX + '{"event": "a"}\n', [{"event": "a"}], ""),
    (EVENT_PREFIX + '{"event": "a"}' + EVENT_PREFIX + '{"event": "b", "rank": 1}\n', [{"event": "a"},
                                                                                        {"event": "b", "rank": 1}], ""),
    ("W1202 a warning " + EVENT_PREFIX + '{"event": "a"}\n', [{"event": "a"}], "W1202 a warning"),
    (EVENT_PREFIX + '{"event": "a"' + "\n", [], EVENT_PREFIX + '{"event": "a"'),  # cut short: relayed, not fatal
    (EVENT_PREFIX + "[1, 2]\n", [], ""),  # valid JSON, not an event
])
def test_mixed_lines_give_back_every_event_and_the_rest(text, events, rest):
    assert events_in(text) == (events, rest)


def test_a_real_pipe_keeps_two_writers_lines_apart():
    """Two processes on one core emitting into one pipe at once: every line parses on its own (with print()
    in their place, 3,000 events each met on one line within a second)."""
    read, write = os.pipe()
    children = []
    for rank in (0, 1):
        pid = os.fork()
        if pid == 0:  # child: many events, as fast as it can
            os.close(read)
            if hasattr(os, "sched_setaffinity"):  # both on one core, as the ranks that met the bug were
                os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
            os.dup2(write, 1)
            # as torchrun's `python -u` worker has it: fd 1 is the pipe, written through unbuffered
            sys.stdout = io.TextIOWrapper(open(1, "wb", buffering=0, closefd=False), write_through=True)
            try:
                for i in range(3000):
                    emit_event({"event": "progress", "rank": rank, "i": i, "message": "m" * 50})
            finally:
                os._exit(0)
        children.append(pid)
    os.close(write)
    with os.fdopen(read) as pipe:
        lines = pipe.read().splitlines()
    for pid in children:
        os.waitpid(pid, 0)
    assert len(lines) == 6000 and all(events_in(line)[0] and not events_in(line)[1] for line in lines)
