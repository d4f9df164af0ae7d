"""`python -m core ...`: the same as the `gpu-vs-cpu` console script.

core/cli/entry.py says why it exits as it does.
"""

from core.cli.entry import main

main()
