"""Sixty students on one server: the server's own CPU and memory per page view, measured without browsers.

The real server (`streamlit run app.py` on localhost) and N students, each a websocket client of
Streamlit's own protocol (`/_stcore/stream`, the BackMsg/ForwardMsg protobufs the browser sends and
reads): a student opens a page by asking for its script run and reads every message until the run
has finished, exactly what a browser tab does before it draws. What it leaves out: the browser's
own rendering and the static files (served once per browser and cached), so the server's CPU per
view measured here is what a class costs it, and none of it is spent by browsers on the server's
cores. Threads of this process drive the clients; the server is measured from outside (psutil).

For N = 1, 10, 30, 60 students and each page, N sessions open the page at once (a barrier), and
the bench reports: the server's CPU seconds per page view (its CPU time over the round / N), the
median and worst time to the complete render, the server's RSS at the end of the round and after
the sessions are closed (30 s later by default). Then "everyone presses Run" (issue 31's target): in each
of `--rounds` rounds, one student presses Run alone, then K students press Run together on the same race
(the default race, as a student who touches no setting runs it; `--race tiny`: n = 16 to 64 and 0.25 s per
size), and the bench reports the last of the K's waits over the lone student's wait of the same round, and
the server's RSS `--settle` seconds after the K tabs closed over its RSS after the lone race. Last, N students
keep the Class board open with nothing new arriving, each tab asking for the board's fragment rerun
every `run_every` seconds as a browser's timer does: the server's CPU per refresh and in total.

    python bench/classroom_server.py [--students 1,10,30,60] [--pages home,hardware,results] [--run-students 60]
                                     [--race default|tiny] [--rounds 1] [--settle 30] [--board-students 60]
                                     [--board-seconds 60]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from core.cli.output import format_table  # noqa: E402

PAGES = {"home": "", "hardware": "hardware", "matmul": "matmul_race", "classifier": "review_classifier",
         "parallel": "why_parallel", "results": "results", "board": "class_board"}
TINY_RACE = {"mm_sizes": ("16", "64"), "mm_budget": ("0.25",)}  # the size and budget sliders, as a browser sends them
RACES: dict[str, dict[str, tuple[str, ...]]] = {"default": {}, "tiny": TINY_RACE}  # default: no setting touched
TIMEOUT_S = 600.0
EXTRA_FLAGS = [a for a in os.environ.get("CLASSROOM_SERVER_FLAGS", "").split() if a]  # e.g. a config to compare


class Student:
    """One browser tab, without the browser: a websocket session of the real server."""

    def __init__(self, url: str) -> None:
        self._stack = ExitStack()  # websockets wants its connection used as a context manager
        self.ws = self._stack.enter_context(connect(url, origin=url.replace("ws://", "http://").split("/_stcore")[0],
                                                    max_size=None, open_timeout=TIMEOUT_S))
        self.widgets: dict[str, str] = {}  # user key -> the widget's id, from the elements received
        self.progress: list[str] = []  # the progress bar's lines, to check that a sweep finished
        self.auto_rerun: tuple[float, str] | None = None  # (seconds, fragment id) of a st.fragment(run_every=...)
        self.refreshes = 0  # auto-reruns this tab asked for (the Class board's checks)

    def open(self, page: str) -> float:
        """Ask for the page's script run; seconds until the server says it finished."""
        msg = BackMsg()
        msg.rerun_script.page_name = page
        return self._run(msg)

    def refresh(self) -> float:
        """What a browser's timer sends every `run_every` seconds: a rerun of the fragment alone."""
        assert self.auto_rerun is not None, "the page has no self-refreshing fragment"
        msg = BackMsg()
        msg.rerun_script.page_name = PAGES["board"]
        msg.rerun_script.fragment_id = self.auto_rerun[1]
        msg.rerun_script.is_auto_rerun = True
        self.refreshes += 1
        return self._run(msg)

    def idle(self, seconds: float) -> None:
        """Keep the page open for `seconds`, refreshing as the browser would (the first one at a random
        offset: a class opens its boards over a minute, not in step)."""
        interval = self.auto_rerun[0] if self.auto_rerun else seconds
        deadline = time.monotonic() + seconds
        time.sleep(interval * (hash(id(self)) % 1000) / 1000)
        while time.monotonic() < deadline:
            start = time.monotonic()
            self.refresh()
            time.sleep(max(0.0, interval - (time.monotonic() - start)))

    def press_run(self, race: dict[str, tuple[str, ...]]) -> float:
        msg = BackMsg()
        msg.rerun_script.page_name = PAGES["matmul"]
        for key, setting in race.items():
            state = msg.rerun_script.widget_states.widgets.add()
            state.id = self.widgets[key]
            state.string_array_value.data.extend(setting)
        trigger = msg.rerun_script.widget_states.widgets.add()
        trigger.id = self.widgets["mm_run"]
        trigger.trigger_value = True
        self.progress = []
        took = self._run(msg)
        if not any(text.startswith("done in") for text in self.progress):
            raise RuntimeError(f"the sweep did not finish: {self.progress[-1:] or 'no progress shown'}")
        return took

    def _run(self, msg: BackMsg) -> float:
        start = time.perf_counter()
        self.ws.send(msg.SerializeToString())
        while True:
            reply = ForwardMsg()
            reply.ParseFromString(self.ws.recv(timeout=TIMEOUT_S))
            kind = reply.WhichOneof("type")
            if kind == "delta" and reply.delta.WhichOneof("type") == "new_element":
                self._note_widget(reply.delta.new_element)
            elif kind == "delta" and reply.delta.new_element.WhichOneof("type") == "exception":
                raise RuntimeError(reply.delta.new_element.exception.message)
            elif kind == "auto_rerun":
                self.auto_rerun = (reply.auto_rerun.interval, reply.auto_rerun.fragment_id)
            elif kind == "script_finished":
                return time.perf_counter() - start

    def _note_widget(self, element: Any) -> None:
        kind = element.WhichOneof("type")
        if kind == "exception":
            raise RuntimeError(element.exception.message)
        if kind == "progress":
            self.progress.append(element.progress.text)
        widget = getattr(element, kind, None)
        widget_id = getattr(widget, "id", "")
        if widget_id:
            self.widgets[widget_id.rsplit("-", 1)[-1]] = widget_id  # ids end with the user's key

    def close(self) -> None:
        self._stack.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_server(port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                               "--server.address", "127.0.0.1", "--server.headless", "true", *EXTRA_FLAGS],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.3)
    server.kill()
    raise RuntimeError("the server did not start within 120 s")


@contextmanager
def running_server() -> Iterator[tuple[str, psutil.Process]]:
    """`streamlit run app.py` on a free loopback port, with its own store, cache and locks (never the user's
    class board); yields the websocket URL students connect to and the server process."""
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "GPU_VS_CPU_CACHE_DIR": f"{home}/cache", "GPU_VS_CPU_DATA_DIR": f"{home}/data",
               "GPU_VS_CPU_LOCK_DIR": f"{home}/locks"}
        env.pop("DATABASE_URL", None)
        port = _free_port()
        server = _start_server(port, env)
        try:
            yield f"ws://127.0.0.1:{port}/_stcore/stream", psutil.Process(server.pid)
        finally:
            server.terminate()
            server.wait(30)


def _cpu_s(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


def _round(n: int, work: Any) -> list[Any]:
    """`work(i)` in n threads, released together."""
    barrier = threading.Barrier(n)

    def one(i: int) -> Any:
        barrier.wait()
        return work(i)

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(one, range(n)))


def idle_boards(url: str, server: psutil.Process, students: int, seconds: float) -> dict[str, Any]:
    """N students keep the Class board open, nothing new arriving: the server's CPU for their refreshes."""
    tabs = [Student(url) for _ in range(students)]
    _round(students, lambda i: tabs[i].open(PAGES["board"]))
    cpu0, t0 = _cpu_s(server), time.monotonic()
    _round(students, lambda i: tabs[i].idle(seconds))
    cpu, wall = _cpu_s(server) - cpu0, time.monotonic() - t0
    refreshes = sum(tab.refreshes for tab in tabs)
    for tab in tabs:
        tab.close()
    interval = tabs[0].auto_rerun[0] if tabs[0].auto_rerun else None
    row = {"students": students, "seconds": wall, "refresh_every_s": interval, "refreshes": refreshes,
           "server_cpu_ms_per_refresh": cpu / max(refreshes, 1) * 1e3, "server_cores_busy": cpu / wall}
    print(format_table(["idle boards", "seconds", "every s", "refreshes", "server CPU ms / refresh",
                        "server cores busy"], [[students, wall, interval, refreshes, row["server_cpu_ms_per_refresh"],
                                               row["server_cores_busy"]]]), flush=True)
    return row


def press_run(url: str, server: psutil.Process, students: int, race: dict[str, tuple[str, ...]],
              settle_s: float) -> dict[str, Any]:
    """One round of issue 31's target: a student alone presses Run, then `students` together on the same race.
    Their last wait over the lone wait (target: at most 2), and the server's RSS after the class's tabs closed
    over its RSS after the lone race (target: at most 1.1)."""
    alone = Student(url)
    alone.open(PAGES["matmul"])
    one_s = alone.press_run(race)
    alone.close()
    time.sleep(settle_s)
    rss_one = server.memory_info().rss / 2**20
    tabs = [Student(url) for _ in range(students)]
    _round(students, lambda i: tabs[i].open(PAGES["matmul"]))
    cpu0 = _cpu_s(server)
    waits = _round(students, lambda i: tabs[i].press_run(race))
    cpu = _cpu_s(server) - cpu0
    rss_during = server.memory_info().rss / 2**20
    for tab in tabs:
        tab.close()
    time.sleep(settle_s)
    row = {"students": students, "alone_s": one_s, "median_s": statistics.median(waits), "last_s": max(waits),
           "last_over_alone": max(waits) / one_s, "server_cpu_s_per_student": cpu / students,
           "rss_after_one_race_mib": rss_one, "rss_during_mib": rss_during,
           "rss_after_mib": server.memory_info().rss / 2**20}
    row["rss_after_over_one_race"] = row["rss_after_mib"] / rss_one
    print(_run_table([row]), flush=True)
    return row


def _run_table(rows: list[dict[str, Any]]) -> str:
    headers = ["students", "alone s", "median s", "last s", "last / alone", "server CPU s / student",
               "RSS after one race MiB", "RSS after MiB", "RSS after / one race"]
    return format_table(headers, [[r["students"], r["alone_s"], r["median_s"], r["last_s"], r["last_over_alone"],
                                   r["server_cpu_s_per_student"], r["rss_after_one_race_mib"], r["rss_after_mib"],
                                   r["rss_after_over_one_race"]] for r in rows])


def measure(url: str, server: psutil.Process, students: list[int], pages: list[str], run_students: int,
            settle_s: float, board_students: int = 0, board_s: float = 60.0, race: str = "default",
            rounds: int = 1) -> dict[str, Any]:
    first = Student(url)
    first.open(PAGES["home"])  # the first session pays for imports: the class meets a warm server
    first.close()
    time.sleep(settle_s)
    rss_first = server.memory_info().rss / 2**20
    rows: list[dict[str, Any]] = []
    for n in students:
        for page in pages:
            tabs = [Student(url) for _ in range(n)]
            cpu0 = _cpu_s(server)
            renders = _round(n, lambda i: tabs[i].open(PAGES[page]))
            cpu = _cpu_s(server) - cpu0
            rss_during = server.memory_info().rss / 2**20
            for tab in tabs:
                tab.close()
            time.sleep(settle_s)
            rows.append({"students": n, "page": page, "cpu_s_per_view": cpu / n,
                         "render_median_s": statistics.median(renders), "render_max_s": max(renders),
                         "rss_during_mib": rss_during, "rss_after_mib": server.memory_info().rss / 2**20})
            print(_table(rows[-1:]), flush=True)
    board = idle_boards(url, server, board_students, board_s) if board_students else None
    runs = [press_run(url, server, run_students, RACES[race], settle_s) for _ in range(rounds)] if run_students else []
    return {"rows": rows, "rss_after_first_session_mib": rss_first, "settle_s": settle_s, "board": board,
            "race": race, "runs": runs,
            "load_average": os.getloadavg(), "cores": os.cpu_count(),
            "method": "the real server on localhost; each student a websocket client of Streamlit's protocol"}


def _table(rows: list[dict[str, Any]]) -> str:
    headers = ["students", "page", "server CPU s / view", "render median s", "render max s", "RSS during MiB",
               "RSS after MiB"]
    return format_table(headers, [[r["students"], r["page"], r["cpu_s_per_view"], r["render_median_s"],
                                   r["render_max_s"], r["rss_during_mib"], r["rss_after_mib"]] for r in rows])


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--students", default="1,10,30,60")
    parser.add_argument("--pages", default="home,hardware,results")
    parser.add_argument("--run-students", type=int, default=60, help="students pressing Run together (0: skip)")
    parser.add_argument("--race", choices=sorted(RACES), default="default",
                        help="the race they run: the default one, or a tiny one (n = 16-64, 0.25 s per size)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of one student alone, then all together")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds after a round before reading RSS")
    parser.add_argument("--board-students", type=int, default=60,
                        help="students keeping the Class board open, nothing new arriving (0: skip)")
    parser.add_argument("--board-seconds", type=float, default=60.0, help="how long they keep it open")
    args = parser.parse_args()
    with running_server() as (url, server):
        report = measure(url, server, [int(s) for s in args.students.split(",")], args.pages.split(","),
                         args.run_students, args.settle, args.board_students, args.board_seconds, args.race,
                         args.rounds)
    print()
    print(_table(report["rows"]))
    if report["runs"]:
        print(f"everyone presses Run on the {args.race} race (target: last / alone at most 2, RSS after / one race "
              "at most 1.1):")
        print(_run_table(report["runs"]))
    if (board := report["board"]) is not None:
        print(f"Class board, {board['students']} idle sessions refreshing every {board['refresh_every_s']} s: "
              f"{board['server_cpu_ms_per_refresh']:.1f} ms of server CPU per refresh, "
              f"{board['server_cores_busy']:.1%} of one core in total")
    print(f"server RSS after the first session: {report['rss_after_first_session_mib']:.0f} MiB; "
          f"load average {report['load_average'][0]:.2f} on {report['cores']} cores")
    out = ROOT / "bench" / "results" / "classroom_server.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
