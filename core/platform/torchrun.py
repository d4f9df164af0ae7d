"""Start K worker processes on this machine with PyTorch's own launcher, follow what rank 0 says, end them all.

Both multi-process features (the classifier's data-parallel training, core.classifier.workers, and the
marbles across processes, core.parallel.processes) launch `python -m torch.distributed.run --standalone
--nproc-per-node K -m <module> ...` as a subprocess in its own process group, inside a job that holds
their devices. Rank 0 prints one `EVENT_PREFIX` JSON line per event; every other line (the launcher's
own, the workers' warnings) is relayed to stderr. A Stop, Ctrl+C or any error ends the whole group,
so no worker outlives the job that holds the lock. A launching process that dies without a word (SIGKILL,
an out-of-memory kill) cannot end anything: so the launcher and every worker also die with their parent
(core.platform.parent_watch), the launcher with SIGTERM (torchrun then ends its workers), a worker with
SIGKILL (torch starts each worker in a session of its own, out of reach of the launcher's group).

The worker side lives here too: where a process sits in the job (`worker_env`), the rank-0 printer,
and `exit_now`, the way a finished worker leaves.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

from core.errors import DashboardError
from core.platform.jobs import RunningJob
from core.platform.parent_watch import die_with_parent, guarded_command
from core.results.jsonio import to_jsonable

ROOT = Path(__file__).resolve().parents[2]  # the folder holding `core`: the workers import it from there
EVENT_PREFIX = "@@gvc-dist "  # rank 0's machine-readable lines on stdout; everything else is relayed as is
DEFAULT_TIMEOUT_S = 120.0  # a collective that waits longer than this means a worker hung: fail, do not wait forever
POLL_S = 0.2  # how often a Stop is checked while waiting for the next line
TERMINATE_GRACE_S = 5.0  # SIGTERM first (torchrun forwards it to its workers), then SIGKILL
Event = dict[str, Any]
Emit = Callable[[Event], None]


@dataclass(frozen=True)
class WorkerEnv:
    """Where this process sits in the job, as torchrun's environment says."""

    rank: int  # 0 .. world_size - 1 over all machines
    world_size: int
    local_rank: int  # index among the workers on this machine: picks the GPU (local_gpu_index)


def worker_env(environ: dict[str, str] | None = None) -> WorkerEnv:
    """RANK/WORLD_SIZE/LOCAL_RANK, checked at once: one line naming the variable that is missing or wrong
    (RANK set without WORLD_SIZE was "RANK and WORLD_SIZE are not set"; RANK >= WORLD_SIZE waited out the
    rendezvous timeout)."""
    env = os.environ if environ is None else environ
    how = ("start this module with torchrun (python -m torch.distributed.run), or through the dashboard "
           "or python -m core")
    if missing := [name for name in ("RANK", "WORLD_SIZE") if name not in env]:
        raise DashboardError(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set: {how}")
    values = {name: env.get(name, env["RANK"] if name == "LOCAL_RANK" else "")
              for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    for name, text in values.items():
        if not text.strip().isdecimal() or not text.strip().isascii():
            raise DashboardError(f"{name}={text[:20]!r} is not a whole number >= 0: {how}")
    rank, world, local = (int(values[n]) for n in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    if world < 1 or rank >= world:
        raise DashboardError(f"RANK={rank} with WORLD_SIZE={world}: ranks are numbered 0 to WORLD_SIZE - 1; {how}")
    if local > rank:
        raise DashboardError(f"LOCAL_RANK={local} is above RANK={rank}: a rank's index on its machine cannot exceed "
                             f"its index over all machines; {how}")
    return WorkerEnv(rank, world, local)


def local_gpu_index(local_rank: int, visible: int) -> int | None:
    """The CUDA index of this worker's GPU: 0 where it sees one GPU (a launcher that gives each rank its own,
    through CUDA_VISIBLE_DEVICES, makes every rank's GPU cuda:0, and cuda:LOCAL_RANK an invalid ordinal),
    else its local rank; None when it sees too few GPUs for its local rank."""
    if visible == 1:
        return 0
    return local_rank if 0 <= local_rank < visible else None


def emit_event(event: Event) -> None:
    """One prefixed JSON line for the launcher, written in one system call. The ranks of a job share one
    pipe, and torchrun starts them unbuffered (`python -u`), where print() writes the text and its newline
    in two calls: two ranks on one core interleaved them into '@@a@@b' lines, and the launcher failed on
    the JSON with a traceback. One write() of up to PIPE_BUF bytes reaches the pipe whole."""
    sys.stdout.flush()  # whatever print() left buffered goes first, in order
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # stdout replaced by an object without a descriptor
        fd = 1
    data = (EVENT_PREFIX + json.dumps(to_jsonable(event)) + "\n").encode()
    while data:  # a large event (the whole run) may take more than one call; only rank 0 sends one, at the end
        data = data[os.write(fd, data):]


def rank0_printer(env: WorkerEnv) -> Emit:
    """Rank 0 speaks for the job: one prefixed JSON line per event, at once (emit_event)."""
    def emit(event: Event) -> None:
        if env.rank == 0:
            emit_event(event)
    return emit


def events_in(text: str) -> tuple[list[Event], str]:
    """The events in one line of a worker's output and what else it held: a line mixed by writers that
    did not write whole lines (another program's, an older worker's) loses neither."""
    events: list[Event] = []
    rest: list[str] = []
    head, *chunks = text.split(EVENT_PREFIX)
    rest.append(head)
    decoder = json.JSONDecoder()
    for chunk in chunks:
        try:
            event, end = decoder.raw_decode(chunk)
        except ValueError:
            rest.append(EVENT_PREFIX + chunk)
            continue
        if isinstance(event, dict):
            events.append(event)
        rest.append(chunk[end:])
    return events, "".join(rest).strip()


@contextmanager
def process_group(backend: str, timeout_s: float) -> Iterator[None]:
    """This worker in the job's process group for the block; on a clean exit all wait for each other first,
    so no worker tears its connections down while another still talks to it."""
    import torch.distributed as dist  # here, not at the top: the launching side never needs it

    dist.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
    try:
        yield
        dist.barrier()
    finally:
        dist.destroy_process_group()


def worker_main(body: Callable[[WorkerEnv, Emit], Event]) -> int:
    """Run one worker's body, whose return is rank 0's last event; a DashboardError becomes an 'error' event
    (the launching job's one message) and exit code 2."""
    emit: Emit = lambda event: None  # noqa: E731  (replaced once the rank is known)
    die_with_parent(signal.SIGKILL)  # a launcher killed outright leaves no worker computing on
    try:
        env = worker_env()
        emit = rank0_printer(env)
        emit(body(env, emit))
        return 0
    except DashboardError as exc:
        emit({"event": "error", "message": str(exc)})
        print(f"worker error: {exc}", file=sys.stderr, flush=True)
        return 2


def exit_now(code: int) -> None:
    """Leave without the interpreter's and C++'s exit-time teardown, once everything is said and saved.

    The process group is already destroyed; what would remain is destructors of torch's and gloo's
    static objects racing their own threads, which now and then aborted a finished worker
    ("terminate called without an active exception", exit -6) and made torchrun fail a good run.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def launcher_command(workers: int, module: str, args: Sequence[str]) -> list[str]:
    """torchrun on one machine (`--standalone`: a local rendezvous on a free port) running K copies of `module`."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(workers),
            "-m", module, *args]


def worker_environment(threads: int) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))  # torchrun would otherwise force 1 and warn
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def end_group(proc: subprocess.Popen[str], grace_s: float = TERMINATE_GRACE_S) -> None:
    """End the launcher and every worker: its whole process group, politely, then for sure."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
    try:  # helpers the launcher left in its group; its workers (own sessions) die with it (parent_watch)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass(frozen=True)
class Launched:
    """How a launch ended: the launcher's exit code, or None when a Stop ended it first."""

    code: int | None

    @property
    def stopped(self) -> bool:
        return self.code is None


def _reader(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _dies_with_us(command: list[str]) -> list[str]:
    """`python -m MODULE ARGS` run so that it ends when this process dies (this thread waits for it: follow)."""
    if command[:2] != [sys.executable, "-m"]:
        raise ValueError(f"expected a 'python -m module' command, got {command[:3]}")
    return guarded_command(command[2], command[3:], signal.SIGTERM)


def follow(command: list[str], threads: int, job: RunningJob, on_event: Emit) -> Launched:
    """Run `command` in its own process group, hand rank 0's events to `on_event`, relay the rest.

    Returns when the launcher exits, or at once (having ended every process) when the job's Stop is
    pressed; an exception from `on_event` or a Ctrl+C also ends every process before it propagates.
    """
    proc = subprocess.Popen(_dies_with_us(command), cwd=ROOT, env=worker_environment(threads), stdout=subprocess.PIPE,
                            text=True, start_new_session=True)  # its own group: one killpg ends the launcher
    lines: queue.Queue[str | None] = queue.Queue()
    assert proc.stdout is not None
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    try:
        while True:
            if job.stop_requested():  # between lines, busy or idle: events may arrive faster than POLL_S
                end_group(proc)
                return Launched(None)
            try:
                text = lines.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if text is None:
                break
            if EVENT_PREFIX in text:
                events, other = events_in(text)
                for event in events:
                    on_event(event)
                if other:
                    print(other, file=sys.stderr, flush=True)
            else:
                print(text, end="", file=sys.stderr, flush=True)  # the launcher's and workers' own lines
        return Launched(proc.wait())
    finally:
        end_group(proc)  # Ctrl+C, an error in a hook: nothing outlives the job


def exit_meaning(code: int) -> str:
    """The launcher's exit code in words, for the one error message a failed launch becomes."""
    if code < 0:
        return f"killed by signal {-code}"
    return "a worker died, hung past the process-group timeout, or raised an error" if code else "no result"
