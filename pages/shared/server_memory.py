"""The server gives back the memory a class used: Arrow allocates from the system's malloc, not its own pool,
and that malloc keeps two heaps for all the sessions' threads (core.platform.heap.limit_heap_arenas).

Every st.dataframe goes through pyarrow, whose default pool (mimalloc) keeps what it freed for later. Ten
sessions opening the Results page at once left the server 43 MiB (12 %) above its level before, 30 s and
150 s after they closed; with the system allocator, 9 MiB (2.5 %), and a second class adds 3 MiB
(bench/board_scale.py, 10,000 runs). Tables here are a few hundred rows, so the pool's speed is not missed.
An operator who sets ARROW_DEFAULT_MEMORY_POOL keeps their choice.

Imported by app.py once per server process, before any page has imported pyarrow.
"""

from __future__ import annotations

import os
import sys

from core.platform.heap import limit_heap_arenas

ARROW_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"


def use_system_allocator_for_arrow() -> None:
    """Make pyarrow's default pool the system allocator, unless the operator chose one."""
    if os.environ.get(ARROW_POOL_ENV):
        return
    os.environ[ARROW_POOL_ENV] = "system"  # read by pyarrow when its default pool is first made
    if "pyarrow" in sys.modules:  # imported already (a test, a notebook): switch the pool itself
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())


use_system_allocator_for_arrow()
limit_heap_arenas()
