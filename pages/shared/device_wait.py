"""Page-side view of the device line: "waiting for cuda:0: 2 ahead" and a Cancel button.

Not a page (app.py does not list it). The waiting state lives in core (`WaitStatus`, fed by
`hold_devices`' callbacks); this draws it. The message is redrawn on every poll, and that redraw is
what lets Streamlit stop a waiting script at once when the user presses Cancel (or Stop, or
anything else that reruns): the stop exception is raised there, and `hold_devices` leaves the line.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager

import streamlit as st

from core.platform.device_lock import Job, JobCancelled, WaitStatus, hold_devices


def _tab_closed() -> bool:
    """True once this browser session has gone (tab closed), so a waiting job leaves the line."""
    try:
        from streamlit import runtime
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        ctx = get_script_run_ctx()
        return runtime.exists() and ctx is not None and not runtime.get_instance().is_active_session(ctx.session_id)
    except Exception:  # noqa: BLE001 - an internal API that may change; never block a job on it
        return False


@contextmanager
def device_turn(devices: Iterable[str], *, key: str, label: str = "", max_job_s: float | None = None) -> Iterator[Job]:
    """Wait in line for `devices` (showing who is ahead, with a Cancel button), then hold them.

    Yields core's `Job`: call `job.check()` between steps (or pass `job.timed_out` into a stop
    callback) so the per-job time cap holds. `key` names this page's widgets.
    """
    box = st.empty()
    parts: dict[str, object] = {}

    def draw(status: WaitStatus) -> None:
        if not parts:
            with box.container(border=True):
                parts["note"] = st.empty()
                st.button("Cancel", key=f"{key}_cancel_wait", icon=":material/cancel:",
                          help="leave the line; nothing runs")
        parts["note"].info(status.message, icon=":material/hourglass_top:")

    status = WaitStatus(on_change=draw, should_cancel=_tab_closed)
    with ExitStack() as stack:
        try:  # only a cancel while waiting means "left the line"; one raised by the job itself is the caller's
            job = stack.enter_context(hold_devices(devices, on_wait=status.on_wait, should_cancel=status.should_cancel,
                                                   max_job_s=max_job_s, label=label))
        except JobCancelled:
            box.empty()
            st.info("Left the line; nothing ran.", icon=":material/cancel:")
            st.stop()
        box.empty()
        if status.waiting:
            st.caption(f"Waited {job.waited_s:.0f} s for {', '.join(job.devices)}.")
        yield job
