"""Every Why-parallel section, in page order: the one list the page, the CLI and the benchmark walk.

A new section is a new file under core/parallel/ with its `SECTION` record, and one line here.
"""

from __future__ import annotations

from typing import Any

from core.errors import DashboardError
from core.parallel import chain, first_call, location, marbles, processes, timing_bug
from core.parallel.section import Knob, Section

SECTIONS: tuple[Section[Any, Any], ...] = (
    marbles.SECTION,
    processes.SECTION,
    chain.SECTION,
    timing_bug.SECTION,
    first_call.SECTION,
    location.SECTION,
)


def section(key: str) -> Section[Any, Any]:
    """The section called `key` ('timing_bug') or, as the CLI spells it, 'timing-bug'."""
    found = next((s for s in SECTIONS if key in (s.key, s.name)), None)
    if found is None:
        raise DashboardError(f"no section {key!r}; choose one of {', '.join(s.name for s in SECTIONS)}")
    return found


def knobs(sections: tuple[Section[Any, Any], ...] | None = None) -> tuple[Knob, ...]:
    """Every setting of these sections (default: all) once, in page order, a shared one where first used."""
    return tuple({k.name: k for s in (SECTIONS if sections is None else sections) for k in s.knobs}.values())
