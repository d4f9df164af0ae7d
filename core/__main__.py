"""`python -m core ...`: run the command, then leave without the interpreter's teardown.

A Python process that used torch spends 0.3-0.5 s of CPU tearing itself down after its last
line, and by then it has released the device lock: on a small CPU that teardown slows the next
student's sweep by 2-3x while it is being timed (bench/classroom.py, "processes-teardown").
Output is flushed here and every store write is committed before `main()` returns, so nothing
needs the teardown.
"""

import os
import sys

from core.cli import main

try:
    code = main()
except BrokenPipeError:  # `python -m core devices | head -2`: the reader left; no traceback
    code = 141  # 128 + SIGPIPE, what a shell reports for a command whose pipe closed
for stream in (sys.stdout, sys.stderr):
    try:
        stream.flush()
    except (BrokenPipeError, OSError):  # e.g. `| head` closed the pipe: nothing left to say
        pass
os._exit(code)
