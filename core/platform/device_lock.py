"""One timed job per device at a time, across every session of the server and every CLI process.

Two jobs timed at once on one device both get wrong numbers (their kernels interleave, their
threads fight for cores), so each timed job holds a lock per device it uses. A file lock
(`filelock`, which torch already installs) works across threads and processes alike, and the
kernel drops it when the holding process dies, so a crashed job never blocks the class.

Fairness: every waiting job writes a ticket file named by the time it joined the line and only
tries the lock once no older live ticket is left, so jobs run first come, first served and each
waiter can say how many are ahead of it. A ticket carries a heartbeat (its mtime); tickets of dead
processes are swept away and tickets whose heartbeat stopped are not counted.

Length cap: a job may hold its devices for `max_job_s` at most. Timed loops stop themselves at the
cap: `hold_devices` yields a `Job` whose `check()` raises `JobTimedOut` past the deadline, called
between steps (a sweep per size, training per batch).

A turn is a lease, not a kernel lock: the holder file (who runs, for how long at most, a token and
a heartbeat count) *is* the lock, and a short file lock only makes reading and writing it atomic.
The holder renews the lease every HEARTBEAT_S from a thread while its job is within its cap, and
stops renewing past it. A device is free when it has no holder file, when the holder's process is
gone, or when a waiter has seen the heartbeat count stand still for the grace period
(`GPU_VS_CPU_LOCK_GRACE_S`, 30 s): a holder that stopped making progress (suspended with Ctrl+Z or
SIGSTOP, hung past its cap) cannot keep the class waiting. The next job in line then takes the
device, and the old holder, if it wakes up, finds another token in the holder file at its next
`check()` and stops with `JobLost` without timing anything more.

No decision reads the wall clock: the holder times its cap with its own monotonic clock, and a
waiter times the heartbeat's silence with its own, so a clock jump (NTP, a laptop waking up, a
daylight-saving change) neither frees a live holder nor extends a dead one. The wall-clock start is
written for people only. A lock folder removed while a job runs is recreated by the next heartbeat,
with the holder file in it; one that cannot be recreated stops the job with that reason.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import filelock

from core.errors import DashboardError
from core.platform import gpu_ids
from core.platform.paths import lock_dir

POLL_S = 0.1  # how often a waiting job re-checks the line, the lock and its cancel flag
STALE_TICKET_S = 30.0  # a ticket whose heartbeat is older than this no longer counts as waiting
DEFAULT_MAX_JOB_S = 600.0  # 10 min; default sweeps take ~20 s and default training ~30 s on a 2-core CPU
MAX_JOB_ENV = "GPU_VS_CPU_MAX_JOB_S"  # a classroom server can shorten (or lengthen) the cap
LONGEST_JOB_S = 24 * 3600.0  # the cap's own bound: a day; a longer one would hold the class's device indefinitely
DEFAULT_GRACE_S = 30.0  # a holder whose heartbeat stood still this long loses its turn
LONGEST_GRACE_S = 3600.0
MIN_GRACE_S = 1.0  # a few heartbeats: a shorter grace would take the device from a busy but live holder
GRACE_ENV = "GPU_VS_CPU_LOCK_GRACE_S"
HEARTBEAT_S = 0.5  # how often a holder renews its lease (well under any sensible grace period)
TRANSACTION_TIMEOUT_S = 5.0  # the file lock guards a few file reads and writes, never a job

WaitCallback = Callable[[str, int], None]  # (device key, jobs ahead, the running one included)
CancelCheck = Callable[[], bool]

# What this process saw of other processes' heartbeats: (what, key) -> (last value, monotonic time it
# changed). Silence is measured here, on this process's monotonic clock, never from a written time.
_seen: dict[tuple[str, str], tuple[object, float]] = {}
_seen_lock = threading.Lock()

# Devices the current thread holds. Only core's job layer takes devices, once per job, so a second
# hold of a held device in the same thread is a bug that would wait for itself forever: it is
# refused at once instead.
_held_here = threading.local()
# Devices every thread of this process holds, by thread: a GPU cache release (which waits for every GPU of
# the process) asks whether another thread is timing a GPU, and no thread claims one while it runs.
_process_held: dict[int, set[str]] = {}
_process_lock = threading.Lock()


class JobCancelled(DashboardError):
    """The user cancelled a job while it waited for a device."""


class JobTimedOut(DashboardError):
    """A job held its devices longer than its cap and must stop so the next one can run."""


class JobLost(JobTimedOut):
    """The job stalled past its cap plus the grace period and another job took its devices."""


@dataclass(frozen=True)
class Holder:
    """Who holds a device now, as its holder file says, and how long this process has seen it silent."""

    device: str
    pid: int
    label: str  # what runs, e.g. "matmul sweep"
    started_at: float  # seconds since the epoch, for people only: no decision reads it
    max_job_s: float
    running_s: float = 0.0  # the holder's own monotonic seconds since it took the device, at its last heartbeat
    silent_s: float = 0.0  # how long (this process's monotonic clock) its heartbeat has not moved

    @property
    def overdue(self) -> bool:
        return self.running_s > self.max_job_s

    @property
    def expired(self) -> bool:
        """Its heartbeat stood still for the grace period: suspended, hung, or past its cap; it loses its turn."""
        return self.silent_s > grace_s_from_env()


@dataclass(frozen=True)
class Job:
    """The devices a job holds, and its deadline. `check()` between steps enforces the cap."""

    devices: tuple[str, ...]
    max_job_s: float
    started_at: float  # time.monotonic() when the last device was taken
    waited_s: float  # how long the job stood in line
    tokens: tuple[tuple[str, str], ...] = ()  # (device, token) of each turn this job took itself
    lease: _Heartbeat | None = field(default=None, compare=False, repr=False)  # renews the turns while it runs

    @property
    def lost(self) -> bool:
        """True once another job took one of these devices (this one's heartbeat stood still past the grace)."""
        return any(_holder_token(device) not in (token, None) for device, token in self.tokens)

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started_at

    @property
    def remaining_s(self) -> float:
        return self.max_job_s - self.elapsed_s

    @property
    def timed_out(self) -> bool:
        return self.remaining_s <= 0 or self.lost

    @property
    def limit_message(self) -> str:
        """What to tell the user when the job was stopped at its cap (a job that stops itself shows it too)."""
        return (f"this job held {', '.join(self.devices)} for more than {self.max_job_s:g} s, the limit per job, "
                f"and was stopped so the next one can run; choose fewer or smaller sizes or epochs, "
                f"or raise {MAX_JOB_ENV} on the server")

    def check(self) -> None:
        """Raise JobTimedOut once the job has run past its cap (JobLost if it lost its turn); call it between steps."""
        if self.lease is not None and self.lease.problem:
            raise JobLost(self.lease.problem)
        if self.lost and self.lease is not None and self.lease.renewing:
            raise JobLost("another job took this job's device while this one was still renewing its turn (the "
                          "holder file was removed or overwritten: the lock folder deleted?); nothing more was "
                          "timed; run it again")
        if self.lost:
            raise JobLost(f"this job stopped renewing its turn for more than {grace_s_from_env():g} s (it was "
                          "suspended or hung) and the next job took its turn; nothing more was timed; run it again")
        if self.remaining_s <= 0:
            raise JobTimedOut(self.limit_message)


class WaitStatus:
    """The waiting state of one job, fed by `hold_devices`' callbacks; a page renders `message`.

    Pass `status.on_wait` and `status.should_cancel` to `hold_devices`; `cancel()` may be called
    from any thread. `on_change(status)` runs on every poll, so a page can redraw a placeholder
    there (which is also what lets Streamlit stop a waiting script at once).
    """

    def __init__(self, on_change: Callable[[WaitStatus], None] | None = None,
                 should_cancel: CancelCheck | None = None) -> None:
        self._on_change = on_change
        self._extra_cancel = should_cancel
        self._cancelled = False
        self._since: float | None = None
        self.device: str | None = None
        self.ahead = 0
        self.holder: Holder | None = None

    @property
    def waiting(self) -> bool:
        return self.device is not None

    @property
    def waited_s(self) -> float:
        return 0.0 if self._since is None else time.monotonic() - self._since

    @property
    def message(self) -> str:
        """The waiting line with the running job's process id, which a terminal's user can look up."""
        return self.line(pid=True)

    def line(self, *, pid: bool) -> str:
        """'waiting for cpu: 1 ahead (3 s so far); now running: matmul sweep, 12 s of at most 300 s'; the page
        leaves the process id out (`pid=False`): nobody in front of a browser can act on it."""
        if self.device is None:
            return ""
        text = f"waiting for {self.device}: {self.ahead} ahead ({self.waited_s:.0f} s so far)"
        holder = self.holder
        if holder is not None:
            shown_pid = f" (pid {holder.pid})" if pid else ""
            text += f"; now running: {holder.label or 'a job'}{shown_pid}, {holder.running_s:.0f} s"
            text += f" of at most {holder.max_job_s:.0f} s" if not holder.overdue else ", past its time limit"
        return text

    def on_wait(self, device: str, ahead: int) -> None:
        if self._since is None:
            self._since = time.monotonic()
        self.device, self.ahead = device, ahead
        self.holder = current_holder(device)
        if self._on_change is not None:
            self._on_change(self)

    def cancel(self) -> None:
        self._cancelled = True

    def should_cancel(self) -> bool:
        return self._cancelled or (self._extra_cancel is not None and bool(self._extra_cancel()))


def max_job_s_from_env() -> float:
    """The cap per job: GPU_VS_CPU_MAX_JOB_S if set, else DEFAULT_MAX_JOB_S; at most LONGEST_JOB_S."""
    raw = os.environ.get(MAX_JOB_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_JOB_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value <= LONGEST_JOB_S:
        raise DashboardError(f"{MAX_JOB_ENV}={raw[:40]!r} is not a number of seconds above 0 and at most "
                             f"{LONGEST_JOB_S:.0f} (24 h); unset it or use e.g. 600")
    return value


def check_cap(max_job_s: object) -> float:
    """A cap given in code, bounded like the environment's: positive and at most a day."""
    value = (float(max_job_s) if isinstance(max_job_s, (int, float)) and not isinstance(max_job_s, bool)
             else float("nan"))
    if not 0 < value <= LONGEST_JOB_S:
        raise DashboardError(f"max_job_s must be a number of seconds above 0 and at most {LONGEST_JOB_S:.0f} (24 h), "
                             f"not {str(max_job_s)[:40]}")
    return value


def grace_s_from_env() -> float:
    """Seconds of heartbeat silence before a stalled holder loses its turn: GPU_VS_CPU_LOCK_GRACE_S, else 30."""
    raw = os.environ.get(GRACE_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_GRACE_S
    except ValueError:
        value = float("nan")
    if not MIN_GRACE_S <= value <= LONGEST_GRACE_S:
        raise DashboardError(f"{GRACE_ENV}={raw[:40]!r} is not a number of seconds from {MIN_GRACE_S:g} to "
                             f"{LONGEST_GRACE_S:.0f}; "
                             "unset it or use e.g. 30")
    return value


def _silent_for(what: str, key: str, value: object) -> float:
    """Seconds, on this process's monotonic clock, since `value` last changed for (what, key); 0 when it just did."""
    now = time.monotonic()
    with _seen_lock:
        seen = _seen.get((what, key))
        if seen is None or seen[0] != value:
            _seen[(what, key)] = (value, now)
            return 0.0
        return now - seen[1]


def _forget(what: str, keep: set[str]) -> None:
    """Drop what was seen of heartbeats no longer there (a holder gone, a ticket served)."""
    with _seen_lock:
        for gone in [k for k in _seen if k[0] == what and k[1] not in keep]:
            del _seen[gone]


def _slug(device: str) -> str:
    """The file name of a device's line: the physical GPU's, so that every process agrees on it."""
    return physical_name(device).replace(":", "-")


@contextmanager
def devices_held_elsewhere() -> Iterator[set[str]]:
    """The devices other threads of this process hold; for the block no thread takes or lets go of one."""
    me = threading.get_ident()
    with _process_lock:
        yield {d for thread, held in _process_held.items() if thread != me for d in held}


def _note_held(device: str, held: bool) -> None:
    me = threading.get_ident()
    with _process_lock:
        mine = _process_held.setdefault(me, set())
        (mine.add if held else mine.discard)(device)
        if not mine:
            del _process_held[me]


def lock_order(devices: Iterable[str]) -> list[str]:
    """The order a job takes its devices in: by the device's physical name, the same in every process.

    By logical name, a process under CUDA_VISIBLE_DEVICES=0,1 and one under 1,0 wanting the same two GPUs
    would take them in opposite orders, each holding one and waiting for the other.
    """
    return sorted(set(devices), key=lambda d: (physical_name(d), d))


def physical_name(device: str) -> str:
    """'cuda:0' as the GPU it is ('cuda-GPU-5c3e...'), 'cpu', 'mps' and a physical name as they are (a
    torchrun machine's first rank holds its neighbours' GPUs by these names: core.matmul.rank_worker).

    A CUDA index is logical: under CUDA_VISIBLE_DEVICES=1 (a CLI user, a torchrun worker) 'cuda:0' is
    the machine's second GPU, and each MIG slice is a device of its own. Keyed by index, two jobs
    could time one GPU at once while unrelated GPUs blocked each other; the UUID names the device
    itself (else its PCI bus id). Where torch gives neither (an old release, a driver that does not say),
    the index is kept.
    """
    if not device.startswith("cuda") or device.startswith("cuda-"):  # 'cuda-GPU-...': a physical name already
        return device
    found = gpu_ids.physical_id(int(device.partition(":")[2] or 0))
    return device if found is None else f"cuda-{found}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _queue_dir(device: str) -> Path:
    path = lock_dir() / f"{_slug(device)}.queue"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _holder_path(device: str) -> Path:
    return lock_dir() / f"{_slug(device)}.holder.json"


def _touch(ticket: Path, device: str) -> None:
    """Renew a waiting ticket, recreating the line's folder if someone removed the lock folder."""
    try:
        ticket.touch()
    except FileNotFoundError:
        _queue_dir(device)
        ticket.touch()


def _ticket_pid(ticket: Path) -> int | None:
    try:
        return int(ticket.name.split("-")[1])
    except (IndexError, ValueError):
        return None


def _jobs_ahead(queue: Path, ticket: Path) -> int:
    """Live tickets older than ours; a ticket of a dead process is swept away, and one whose heartbeat
    (its mtime) is older than STALE_TICKET_S is not counted. The mtime is the wall clock, but only the
    order in line depends on it: a clock jump misjudges a ticket until its next touch (POLL_S), and
    never frees or holds a device (that is the holder's heartbeat, below)."""
    ahead = 0
    now = time.time()
    try:
        others = list(queue.iterdir())
    except FileNotFoundError:  # the lock folder was removed: no one is in line any more
        return 0
    for other in others:
        if other.name >= ticket.name:
            continue
        pid = _ticket_pid(other)
        if pid is None:
            continue
        if not _pid_alive(pid):
            other.unlink(missing_ok=True)
            continue
        try:
            fresh = abs(now - other.stat().st_mtime) < STALE_TICKET_S
        except FileNotFoundError:  # its job took the lock or gave up meanwhile
            continue
        ahead += fresh
    return ahead


def _read_holder(device: str) -> tuple[Holder, str] | None:
    """The holder file's contents and token, or None when there is none (or it is unreadable)."""
    try:
        raw = json.loads(_holder_path(device).read_text())
        token = str(raw.get("token", ""))
        beat = int(raw.get("beat", 0))
        holder = Holder(device=device, pid=int(raw["pid"]), label=str(raw.get("label", ""))[:200],
                        started_at=float(raw["started_at"]), max_job_s=min(float(raw["max_job_s"]), LONGEST_JOB_S),
                        running_s=min(max(0.0, float(raw.get("running_s", 0.0))), LONGEST_JOB_S),
                        silent_s=_silent_for("holder", f"{device} {token}", beat))
        return holder, token
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError):
        return None


def _holder_token(device: str) -> str | None:
    read = _read_holder(device)
    return None if read is None else read[1]


def current_holder(device: str) -> Holder | None:
    """Who holds `device` now, or None (free, the holder process is gone, or it stalled and lost its turn)."""
    read = _read_holder(device)
    if read is None:
        return None
    holder = read[0]
    return holder if _pid_alive(holder.pid) and not holder.expired else None


def timed_jobs_present() -> bool:
    """Whether any job, of any process, holds a device or waits in line for one (what quiet work yields to)."""
    try:
        entries = list(lock_dir().iterdir())
    except OSError:
        return False
    for entry in entries:
        if entry.name.endswith(".holder.json") and current_holder(entry.name.removesuffix(".holder.json")):
            return True
        if entry.name.endswith(".queue") and _jobs_ahead(entry, entry / "~") > 0:  # '~' sorts after every ticket
            return True
    return False


def _transaction(device: str) -> filelock.BaseFileLock:
    """The short lock that makes one read-decide-write of the holder file atomic across processes
    (lock_dir() creates the folder again if it was removed)."""
    return filelock.FileLock(str(lock_dir() / f"{_slug(device)}.lock"), thread_local=False,
                             timeout=TRANSACTION_TIMEOUT_S)


def _write_holder(device: str, token: str, label: str, max_job_s: float, started_at: float, beat: int,
                  running_s: float) -> None:
    path = _holder_path(device)
    tmp = path.with_name(f"{path.name}.{token}.tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "label": label, "started_at": started_at, "max_job_s": max_job_s,
                               "token": token, "beat": beat, "running_s": running_s}))
    os.replace(tmp, path)


def _try_claim(device: str, label: str, max_job_s: float, token: str) -> bool:
    """Take the device if it is free (no live, unexpired holder); False if it is busy."""
    try:
        with _transaction(device).acquire(timeout=0):
            if current_holder(device) is not None:
                return False
            _write_holder(device, token, label, max_job_s, time.time(), 0, 0.0)
            _forget("holder", {f"{device} {token}"})
            return True
    except filelock.Timeout:  # another process is reading or writing the holder file this instant
        return False


class _Heartbeat:
    """Renews a job's turns every HEARTBEAT_S while the job is within its cap, from a daemon thread.

    A suspended or hung process renews nothing, so a waiter takes over after the grace period. The
    holder file is rewritten as it was (with the next beat), recreated with its folder if someone
    removed them; `problem` says why the job must stop when that fails.
    """

    def __init__(self, tokens: list[tuple[str, str]], label: str, max_job_s: float, started: float) -> None:
        self.tokens, self.label, self.max_job_s, self.started = tokens, label, max_job_s, started
        self.wall_start = time.time()
        self.problem: str | None = None
        self.beat = 0
        self.last_renewed = started
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="device-lease-heartbeat", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            running = time.monotonic() - self.started
            if running > self.max_job_s:
                return  # past the cap: the job should have stopped itself; the grace period starts now
            self.renew(running)

    @property
    def renewing(self) -> bool:
        """True while the heartbeat keeps up: a turn lost now was not lost to silence."""
        return time.monotonic() - self.last_renewed < grace_s_from_env()

    def renew(self, running_s: float) -> None:
        """One heartbeat for every device still ours; a removed folder or file is written again."""
        self.beat += 1
        for device, token in self.tokens:
            try:
                with _transaction(device):
                    current = _holder_token(device)
                    if current not in (token, None):
                        continue  # another job took the turn: check() says so
                    _write_holder(device, token, self.label, self.max_job_s, self.wall_start, self.beat, running_s)
                self.last_renewed = time.monotonic()
            except (OSError, DashboardError, filelock.Timeout) as exc:
                self.problem = (f"the lock folder for {device} was removed and cannot be written again ({exc}); "
                                "this job stopped so two jobs never time the device at once; run it again")


def _release(device: str, token: str) -> None:
    """Remove the holder file if it is still ours (a job that lost its turn leaves the new holder's alone)."""
    try:
        with _transaction(device):
            if _holder_token(device) == token:
                _holder_path(device).unlink(missing_ok=True)
    except filelock.Timeout:  # cannot happen short of a stalled process inside a transaction; the lease ends anyway
        pass


@contextmanager
def _hold_one(device: str, label: str, max_job_s: float, on_wait: WaitCallback | None,
              should_cancel: CancelCheck | None) -> Iterator[str]:
    token = uuid.uuid4().hex
    try:
        queue = _queue_dir(device)
        ticket = queue / f"{time.time_ns():020d}-{os.getpid()}-{token}"
        ticket.touch()
    except OSError as exc:  # a read-only or full lock folder
        raise DashboardError(f"cannot write the device line in {lock_dir()} ({exc.strerror or type(exc).__name__}); "
                             f"set GPU_VS_CPU_LOCK_DIR to a writable folder") from None
    try:
        while True:
            ahead = _jobs_ahead(queue, ticket)
            if ahead == 0 and _try_claim(device, label, max_job_s, token):
                break
            if should_cancel is not None and should_cancel():
                raise JobCancelled(f"cancelled while waiting for {device}")
            if on_wait is not None:
                on_wait(device, 1 + ahead)  # the running job, plus older waiters
            time.sleep(POLL_S)
            _touch(ticket, device)  # heartbeat; also puts back a ticket another process swept by mistake
        try:
            ticket.unlink(missing_ok=True)  # after the claim: waiters always see who runs
            yield token
        finally:
            _release(device, token)
    finally:  # covers BaseExceptions too: Streamlit's StopException/RerunException, KeyboardInterrupt
        ticket.unlink(missing_ok=True)


@contextmanager
def hold_devices(
    devices: Iterable[str],
    *,
    on_wait: WaitCallback | None = None,
    should_cancel: CancelCheck | None = None,
    max_job_s: float | None = None,
    label: str = "",
) -> Iterator[Job]:
    """Hold every named device ('cpu', 'cuda:0', 'mps') for the block, waiting in line if needed.

    Yields a `Job`; call `job.check()` between steps so a job past `max_job_s` (default: the
    GPU_VS_CPU_MAX_JOB_S environment variable, else 600 s) stops with JobTimedOut. `on_wait` is
    called on every poll while waiting; `should_cancel` returning True raises JobCancelled.
    Locks are taken in one order (`lock_order`, by physical GPU) so two jobs wanting the same pair can never
    deadlock, whatever CUDA_VISIBLE_DEVICES numbered them; a nested
    call in the same thread for a device it holds already is a RuntimeError (it would wait for
    itself). Released on any exit:
    finish, error, cancel, Streamlit's stop and rerun, a closed tab's session shutdown; and by the
    kernel when the process dies.
    """
    cap = max_job_s_from_env() if max_job_s is None else check_cap(max_job_s)
    wanted = tuple(sorted(set(devices)))
    held: set[str] = _held_here.__dict__.setdefault("devices", set())
    if held & set(wanted):
        raise RuntimeError(f"this thread already holds {', '.join(sorted(held & set(wanted)))}: a core entry point "
                           "takes its own devices through run_job; pass it JobHooks instead of holding them around it")
    joined = time.monotonic()
    tokens: list[tuple[str, str]] = []
    with ExitStack() as stack:
        for device in lock_order(wanted):
            tokens.append((device, stack.enter_context(_hold_one(device, label, cap, on_wait, should_cancel))))
            held.add(device)
            stack.callback(held.discard, device)
            _note_held(device, True)
            stack.callback(_note_held, device, False)
        started = time.monotonic()
        lease = stack.enter_context(_Heartbeat(tokens, label, cap, started))
        yield Job(devices=wanted, max_job_s=cap, started_at=started, waited_s=started - joined, tokens=tuple(tokens),
                  lease=lease)
