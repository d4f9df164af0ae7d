"""Plain-Python logic behind the GPU-vs-CPU dashboard.

Nothing in this package imports streamlit: pages render, `core` measures.
Run `python -m core --help` for the headless command line.
"""

__all__ = ["DashboardError"]

from core.errors import DashboardError
