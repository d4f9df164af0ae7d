"""The hooks a page hands to a core job: the device line with a Cancel button, the tab-closed check, "Waited N s".

Not a page (app.py does not list it). Pages never lock: core entry points wait in line through
`core.platform.jobs.run_job` and call these hooks. `on_wait` redraws "waiting for cuda:0: 2 ahead"
on every poll, and that redraw is what lets Streamlit stop a waiting script at once when the user
presses Cancel (or Stop, or anything else that reruns): the stop exception is raised there, and
the job leaves the line. A closed tab makes `should_stop` true, which leaves the line too
(`WaitCancelled`: "Left the line; nothing ran.") or stops a running job between steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import streamlit as st

from core.platform.device_lock import Job, WaitStatus
from core.platform.jobs import JobHooks, ProgressCallback, WaitCancelled


def _tab_closed() -> bool:
    """True once this browser session has gone (tab closed), so a waiting job leaves the line."""
    try:
        from streamlit import runtime
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        return runtime.exists() and ctx is not None and not runtime.get_instance().is_active_session(ctx.session_id)
    except Exception:  # noqa: BLE001 - an internal API that may change; never block a job on it
        return False


class PageJob:
    """One page's `hooks` for its core calls (one or several in a row), and what the page learns meanwhile.

    `between_steps(n)` runs each time a running job asks whether to stop (every batch of a training
    run; n counts them): a page redraws something there, which is what lets a Stop click end the
    run promptly.
    """

    def __init__(self, key: str, on_progress: ProgressCallback | None = None,
                 between_steps: Callable[[int], Any] | None = None) -> None:
        self._key = key
        self._box = st.empty()
        self._note: Any = None  # the waiting line's placeholder while a job waits
        self._lines = 0  # waiting lines drawn in this script run: each Cancel button needs its own key
        self._between_steps = between_steps
        self._steps = 0
        self.job: Job | None = None  # the latest job's hold on its devices, once it runs
        self.waited = False  # the latest job stood in line before it ran
        self.hooks = JobHooks(on_progress=on_progress, on_wait=self._on_wait, on_start=self._on_start,
                              should_stop=self._should_stop)

    @property
    def waited_note(self) -> str:
        """', after waiting 3 s for cpu' when the latest job waited, else ''."""
        if self.job is None or not self.waited:
            return ""
        return f", after waiting {self.job.waited_s:.0f} s for {', '.join(self.job.devices)}"

    def _on_wait(self, status: WaitStatus) -> None:
        if self._note is None:
            self.job, self.waited = None, True
            with self._box.container(border=True):
                self._note = st.empty()
                suffix = f"_{self._lines}" if self._lines else ""
                st.button("Cancel", key=f"{self._key}_cancel_wait{suffix}", icon=":material/cancel:",
                          help="leave the line; nothing runs")
            self._lines += 1
        self._note.info(status.line(pid=False), icon=":material/hourglass_top:")

    def _on_start(self, job: Job) -> None:
        self._box.empty()
        self.job = job
        if self._note is not None:
            self._note = None
            st.caption(f"Waited {job.waited_s:.0f} s for {', '.join(job.devices)}.")
        else:
            self.waited = False

    def left_the_line(self) -> None:
        self._box.empty()
        st.info("Left the line; nothing ran.", icon=":material/cancel:")

    def _should_stop(self) -> bool:
        if self.job is not None and self._between_steps is not None:
            self._steps += 1
            self._between_steps(self._steps)
        return _tab_closed()


@contextmanager
def page_job(key: str, *, on_progress: ProgressCallback | None = None,
             between_steps: Callable[[int], Any] | None = None, end_run: bool = True) -> Iterator[PageJob]:
    """Hooks for the core calls in the block; a job that left the line says so and ends the script run.

    `key` names this page's widgets (the Cancel button is `{key}_cancel_wait`). With `end_run=False`
    the rest of the page still draws after "Left the line" (a page of several independent sections).
    """
    turn = PageJob(key, on_progress, between_steps)
    try:
        yield turn
    except WaitCancelled:
        turn.left_the_line()
        if end_run:
            st.stop()

