"""How many wrong instructor keys a server takes: per client and for the whole server, not per session.

The lock was per browser session and its message said "Open a new session", so every reload gave five
more guesses (issue 30). Now the server (one process: the Streamlit app) counts wrong keys in a sliding
window per client (its IP address as the server sees it) and over all clients: five wrong keys from one
client, or thirty from all together, lock the key field for every session they come from, for the rest of
the window, whatever is typed, the right key included. A class behind one proxy shares one address, so
one student's guessing locks the field for the room: the instructor then deletes from the command line,
which needs no key. The message says the field is locked, never how to get around it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from core.store.access import key_matches

PER_CLIENT = 5  # wrong keys one client may type in a window
PER_SERVER = 30  # wrong keys all clients together may type in a window
WINDOW_S = 15 * 60.0
MAX_CLIENTS = 10_000  # clients remembered; the oldest are forgotten first (their tries still count for the server)
UNKNOWN_CLIENT = "unknown client"
LOCKED = "Too many wrong keys; the key field is locked for a while."


@dataclass
class KeyGuard:
    """Wrong-key counts in a sliding window, per client and for the server; safe to share between threads."""

    per_client: int = PER_CLIENT
    per_server: int = PER_SERVER
    window_s: float = WINDOW_S
    clock: Callable[[], float] = time.monotonic
    _clients: OrderedDict[str, deque[float]] = field(default_factory=OrderedDict)
    _server: deque[float] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _prune(self, now: float, tries: deque[float]) -> deque[float]:
        while tries and tries[0] <= now - self.window_s:
            tries.popleft()
        return tries

    def locked(self, client: str) -> bool:
        """True while `client`, or the server as a whole, has used up its wrong keys in the window."""
        with self._lock:
            now = self.clock()
            mine = self._prune(now, self._clients.get(client, deque()))
            return len(mine) >= self.per_client or len(self._prune(now, self._server)) >= self.per_server

    def wrong(self, client: str) -> None:
        with self._lock:
            now = self.clock()
            tries = self._clients.pop(client, deque())
            self._clients[client] = self._prune(now, tries)  # most recent last
            self._clients[client].append(now)
            self._server.append(now)
            while len(self._clients) > MAX_CLIENTS:
                self._clients.popitem(last=False)

    def check(self, configured: str | None, entered: str, client: object) -> bool | None:
        """True: the right key; False: a wrong one (counted); None: locked, the key not even compared.
        `client`: its address; anything but a non-empty string (None on localhost) is the one unknown client."""
        who = client.strip()[:64] if isinstance(client, str) and client.strip() else UNKNOWN_CLIENT
        if self.locked(who):
            return None
        if key_matches(configured, entered):
            return True
        self.wrong(who)
        return False


SERVER_GUARD = KeyGuard()  # one per server process: every session of the app shares it
