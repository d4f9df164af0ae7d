"""Human-readable figures shared by the pages and the CLI."""

from __future__ import annotations

GIB = 2**30
EMPTY = "—"  # a figure not measured (yet)


def gib(n_bytes: int | None) -> str:
    """'12.3 GiB', or 'unknown' where a query failed."""
    return "unknown" if n_bytes is None else f"{n_bytes / GIB:.1f} GiB"


def percent(share: float | None) -> str:
    """An accuracy or other share as '78.2%': the one format the classifier page and Results use."""
    return EMPTY if share is None else f"{share:.1%}"
