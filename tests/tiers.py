"""The two test tiers, as a pytest plugin (tests/conftest.py loads it).

A bare `python3 -m pytest` (the README's test command) runs the fast tier: every test not marked
`slow`, meant to stay under three minutes on two cores. A `-m` expression or any named path or node
id replaces that choice: `python3 -m pytest -m slow` runs the slow tier, `python3 -m pytest tests`
everything, `python3 -m pytest tests/test_types.py::test_core_type_checks_clean` that one test, slow
or not. (An `addopts = -m "not slow"` could not do the last: it would deselect a slow test named on
its own.) .ci/run runs the README's command, then the slow tier, so CI still runs every test.

Slow means seconds: a real server (streamlit run, PostgreSQL), a browser, another Python process
that imports torch, torchrun, mypy, a notebook run. Browser tests are slow without saying so.

No pytest-xdist: the fast tier is about 140 s of CPU, so two workers on two cores would save at most
a minute while each pays the imports again, and several fast tests time real work or read the
machine's load, which a second worker beside them would disturb.
"""

from __future__ import annotations

import pytest

SLOW_HINT = "python3 -m pytest -m slow"
FAST_LIMIT_S = 5.0  # an unmarked test slower than this is named at the end: make it faster or mark it slow

_SLOW_LEFT_OUT = pytest.StashKey[int]()
_over_limit: list[tuple[str, float]] = []  # (node id, seconds) of unmarked tests past FAST_LIMIT_S


def _fast_tier(config: pytest.Config) -> bool:
    """A bare run: no path, no node id, no -m (pytest fell back to the testpaths of pyproject.toml)."""
    return config.args_source is pytest.Config.ArgsSource.TESTPATHS and not config.option.markexpr


@pytest.hookimpl(tryfirst=True)  # before -m filters, so `-m slow` sees the mark added to browser tests
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Browser tests are slow tests; a bare run leaves every slow test out."""
    for item in items:
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.slow)
    if not _fast_tier(config):
        return
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]
    config.stash[_SLOW_LEFT_OUT] = len(slow)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Note unmarked tests that took seconds: the fast tier stays fast only if they are seen."""
    if report.when == "call" and "slow" not in report.keywords and report.duration > FAST_LIMIT_S:
        _over_limit.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    left_out = config.stash.get(_SLOW_LEFT_OUT, None)
    if left_out is not None:
        terminalreporter.write_line(f"fast tier: {left_out} slow tests left out; `{SLOW_HINT}` runs them "
                                    "(CONTRIBUTING.md, Tests)")
    if _over_limit:
        terminalreporter.write_line(f"not marked slow but over {FAST_LIMIT_S:.0f} s (make it faster or mark it slow):")
        for nodeid, took in sorted(_over_limit, key=lambda row: -row[1]):
            terminalreporter.write_line(f"  {took:5.1f} s  {nodeid}")
