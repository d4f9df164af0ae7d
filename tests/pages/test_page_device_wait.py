"""The pages' job hooks (pages/shared/device_wait.py) and save helper (pages/shared/result_store.py) in AppTests.

`run_job` in these test pages stands in for a core entry point: pages themselves never call it.
"""

from __future__ import annotations

import threading
import time

from streamlit.testing.v1 import AppTest

from core.platform.device_lock import hold_devices
from core.store.database import open_store


def _waiting_page():
    import streamlit as st

    from core.platform.jobs import run_job
    from pages.shared.device_wait import page_job

    with page_job("t") as turn:
        with run_job(["cpu"], turn.hooks, label="test job") as job:
            st.write(f"ran after waiting {job.waited_s:.1f} s, cap {job.lock.max_job_s:.0f} s")
        st.write(f"note: '{turn.waited_note}'")


def _hold_cpu_for(seconds: float) -> threading.Thread:
    held = threading.Event()

    def hold():
        with hold_devices(["cpu"], label="other student's sweep"):
            held.set()
            time.sleep(seconds)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(5)
    return thread


def test_a_free_device_runs_at_once():
    at = AppTest.from_function(_waiting_page, default_timeout=30).run()
    assert not at.exception
    assert at.markdown[0].value == "ran after waiting 0.0 s, cap 600 s"
    assert not at.caption and not at.button, "no line, no Cancel button, no 'waited' note"
    assert at.markdown[1].value == "note: ''"


def test_a_busy_device_waits_in_line_then_runs():
    holder = _hold_cpu_for(2.0)
    at = AppTest.from_function(_waiting_page, default_timeout=30).run()
    holder.join(10)
    assert not at.exception
    waited = float(at.markdown[0].value.split()[3])
    assert 0.5 < waited < 2.5, at.markdown[0].value
    assert at.caption[0].value.startswith("Waited ") and at.caption[0].value.endswith(" s for cpu.")
    assert not at.info, "the waiting note is gone once the job runs"
    assert at.markdown[1].value.startswith("note: ', after waiting ") and at.markdown[1].value.endswith(" s for cpu'")


def test_a_closed_tab_leaves_the_line(monkeypatch):
    import pages.shared.device_wait as device_wait

    monkeypatch.setattr(device_wait, "_tab_closed", lambda: True)
    with hold_devices(["cpu"]):
        at = AppTest.from_function(_waiting_page, default_timeout=30).run()
        assert not at.exception
        assert at.info[0].value == "Left the line; nothing ran."
        assert not at.markdown
    with hold_devices(["cpu"], should_cancel=lambda: True):
        pass  # the line is empty and the lock free


def _saving_page():
    from pages.shared.result_store import save_run
    from dataclasses import replace

    from core.results.kinds import read_result
    from tests.result_samples import train_payload

    save_run(replace(read_result("train", train_payload()), settings={"epochs": 3}), label="from a page")


def test_save_run_from_a_page():
    at = AppTest.from_function(_saving_page, default_timeout=30).run()
    assert not at.exception and not at.warning
    assert [t.value for t in at.toast] == ["Saved as run #1 (see Results)."]
    run = open_store().get(1)
    assert run.label == "from a page" and run.settings == {"epochs": 3}


def test_save_run_with_an_unusable_store_warns(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "mysql://x")
    at = AppTest.from_function(_saving_page, default_timeout=30).run()
    assert not at.exception
    assert at.warning[0].value.startswith("The run was not saved to the Results page:")


def _job_that_stops_itself():
    import streamlit as st

    from core.platform.device_lock import JobCancelled
    from core.platform.jobs import run_job
    from pages.shared.device_wait import page_job

    try:
        with page_job("t") as turn, run_job(["cpu"], turn.hooks, label="test job"):
            raise JobCancelled("stopped by the user; the steps finished so far are kept")
    except JobCancelled as exc:
        st.write(f"the page handles it: {exc}")


def test_a_cancel_raised_by_the_job_itself_is_the_pages_not_left_the_line():
    at = AppTest.from_function(_job_that_stops_itself, default_timeout=30).run()
    assert not at.exception and not at.info
    assert at.markdown[0].value == "the page handles it: stopped by the user; the steps finished so far are kept"


def _two_jobs_with_a_tick():
    import streamlit as st

    from core.platform.jobs import run_job
    from pages.shared.device_wait import page_job

    ticks = []
    with page_job("t", between_steps=ticks.append) as turn:
        for label in ("first", "second"):
            with run_job(["cpu"], turn.hooks, label=label) as job:
                for _ in range(3):
                    job.stop_requested()  # what a training run asks before every batch
    st.write(f"ticks: {ticks}")


def test_between_steps_runs_on_every_stop_question_of_a_running_job_not_while_it_waits():
    holder = _hold_cpu_for(0.8)
    at = AppTest.from_function(_two_jobs_with_a_tick, default_timeout=30).run()
    holder.join(10)
    assert not at.exception, at.exception
    assert at.markdown[0].value == "ticks: [1, 2, 3, 4, 5, 6]", "three per job while it runs, none while it waits"
    assert at.caption[0].value.startswith("Waited ")
