"""The `gpu-vs-cpu` console script and `python -m core`: run the command, then leave without the teardown.

A Python process that used torch spends 0.3-0.5 s of CPU tearing itself down after its last
line, and by then it has released the device lock: on a small CPU that teardown slows the next
student's sweep by 2-3x while it is being timed (bench/classroom.py, "processes-teardown").
Output is flushed here and every store write is committed before `core.cli.main()` returns, so
nothing needs the teardown.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from core.cli import main as cli_main

PIPE_CLOSED = 141  # 128 + SIGPIPE: what a shell reports for a command whose reader left (`| head -2`)


def main() -> NoReturn:
    """Run the command line in sys.argv, flush, and exit with its status (141 if the reader left)."""
    try:
        code = cli_main()
    except BrokenPipeError:  # the reader left while we printed: no traceback
        code = PIPE_CLOSED
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # ... or before the last buffered output went out
            code = code or PIPE_CLOSED
        except OSError:
            pass
    os._exit(code)
