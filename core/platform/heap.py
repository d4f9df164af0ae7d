"""This process's C heap (glibc's malloc): how many heaps its threads share, and handing freed pages back.

A module without torch: the server sets its heap limit from app.py's first import, before a page has
imported torch (pages/shared/server_memory.py). Off glibc (macOS, musl, Windows) every call does nothing
and says so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections.abc import Callable
from functools import cache

M_ARENA_MAX = -8  # mallopt's parameter number for the most malloc arenas (glibc's malloc.h)
ARENA_ENV = "MALLOC_ARENA_MAX"
SERVER_ARENAS = 2


@cache
def _glibc(name: str, *argtypes: type) -> Callable[..., int] | None:
    """glibc's function `name` (malloc_trim, mallopt) taking `argtypes`, or None where the C library is
    another or cannot be loaded."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = list(argtypes), ctypes.c_int
    return function


def trim() -> bool:
    """glibc's malloc_trim(0): the free pages of every heap back to the system; True if it ran. It locks each
    heap in turn, so a caller that times other threads' work calls it between measurements
    (core.platform.memory.give_back_heap)."""
    malloc_trim = _glibc("malloc_trim", ctypes.c_size_t)
    if malloc_trim is None:
        return False
    malloc_trim(0)
    return True


def limit_heap_arenas(arenas: int = SERVER_ARENAS) -> bool:
    """Let glibc's malloc make at most `arenas` heaps for all of this process's threads; True if set.

    A Streamlit server runs every session's script in a thread of its own, and glibc gives threads up to
    8 heaps per core, each keeping what it freed. Sixty students pressing Run left the server 11 % above its
    level after one race (the 60 sessions gone) with the default; with two heaps, 1 % below, and their
    sixty script runs took 0.33 s of server CPU each instead of 0.43 (bench/classroom_server.py,
    docs/classroom.md). Python's threads allocate under its GIL, so they seldom wait on a shared heap. Call
    it before the threads are many: it applies to heaps made after it. An operator's MALLOC_ARENA_MAX wins.
    """
    if os.environ.get(ARENA_ENV):
        return False
    mallopt = _glibc("mallopt", ctypes.c_int, ctypes.c_int)
    return mallopt is not None and bool(mallopt(M_ARENA_MAX, arenas))
