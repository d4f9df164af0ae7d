"""End this process when the process that started it dies, for any reason, SIGKILL included.

The torchrun launcher runs in a session of its own (so one killpg ends it), and torch's launcher starts
every worker in a session of its own too: when the process above dies without a word (an out-of-memory
kill, a closed terminal's hard kill), nothing else would end them and they would keep computing for
minutes. Two guards, both set by the process that wants to die with its parent:

- **Linux's parent-death signal** (`prctl(PR_SET_PDEATHSIG)`): the kernel sends it the moment the parent
  goes, even to a process stuck in C code. The kernel ties it to the parent *thread* that forked: a child
  forked by a thread that then ends gets the signal while the parent process lives on. Both forks this
  guards are made by a thread that stays until its child is gone: `torchrun.follow` waits for the
  launcher in the thread that started it, and torch's agent starts and watches its workers from its main
  thread (the real-launch tests would fail at once otherwise).
- **A watchdog thread** that polls `getppid()`: a changed parent means ours is gone (the orphan was handed
  to init or a subreaper). It covers systems without prctl (macOS) and a parent that died before prctl was
  set, and it is the one guard that does not depend on which thread forked.

Run as `python -m core.platform.parent_watch --parent PID --signal TERM -- MODULE ARGS...`, it guards itself and
then runs MODULE as `__main__` in the same process (no extra process): that is how the launcher starts.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import runpy
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
POLL_S = 0.5  # how often the watchdog asks who the parent is: an orphan is found within this
KILL_AFTER_S = 10.0  # after the polite signal, the watchdog makes sure (the launcher ends its workers meanwhile)


def set_death_signal(sig: int) -> bool:
    """Ask the kernel to send `sig` to this process when its parent thread ends; False where there is no prctl."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _orphaned(parent: int) -> bool:
    """The parent is not the one we started with (or we were handed to init at once)."""
    now = os.getppid()
    return now != parent or now == 1


def _end_self(sig: int, kill_after_s: float) -> None:
    os.kill(os.getpid(), sig)
    if sig != signal.SIGKILL:
        time.sleep(kill_after_s)  # a handler (torchrun's) may be ending children meanwhile
        os.kill(os.getpid(), signal.SIGKILL)


def _watch(parent: int, sig: int, poll_s: float, kill_after_s: float) -> None:
    while not _orphaned(parent):
        time.sleep(poll_s)
    _end_self(sig, kill_after_s)


def die_with_parent(sig: int = signal.SIGKILL, *, parent: int | None = None, poll_s: float = POLL_S,
                    kill_after_s: float = KILL_AFTER_S) -> None:
    """Guard this process: `sig` when its parent dies (prctl), and a daemon watchdog for the rest.

    `parent` is the pid this process expects above it (default: the present one); if it is already gone,
    the process ends at once instead of running unwatched.
    """
    expected = os.getppid() if parent is None else parent
    set_death_signal(sig)
    if _orphaned(expected):  # the parent died between our fork and the prctl: the kernel will not tell us
        _end_self(sig, kill_after_s)
    threading.Thread(target=_watch, args=(expected, sig, poll_s, kill_after_s), daemon=True,
                     name="parent-watch").start()


def guarded_command(module: str, args: list[str], sig: int = signal.SIGTERM) -> list[str]:
    """The command that runs `python -m module args` in a process that dies with this one."""
    return [sys.executable, "-m", "core.platform.parent_watch", "--parent", str(os.getpid()),
            "--signal", signal.Signals(sig).name, "--", module, *args]


def main(argv: list[str] | None = None) -> None:
    """`--parent PID --signal NAME -- MODULE ARGS...`: parsed by hand, so MODULE's own flags pass untouched."""
    args = sys.argv[1:] if argv is None else argv
    try:
        split = args.index("--")
        opts = dict(zip(args[:split:2], args[1:split:2]))
        parent, sig = int(opts["--parent"]), signal.Signals[opts.get("--signal", "SIGTERM")]
        module, rest = args[split + 1], args[split + 2:]
    except (ValueError, KeyError, IndexError):
        sys.exit("usage: python -m core.platform.parent_watch --parent PID [--signal SIGTERM] -- MODULE ARGS...")
    die_with_parent(sig, parent=parent)
    sys.argv = [module, *rest]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
