"""Plain-Python logic behind the GPU-vs-CPU dashboard.

Nothing in this package imports streamlit: pages render, `core` measures.
Run `python -m core --help` for the headless command line.

Every package `__init__` in core imports nothing of its own package (tests/pages/test_warmup.py checks): a module
is imported by its own name, so two threads importing from two ends never meet a half-built package.
"""
