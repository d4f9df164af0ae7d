"""The Matmul race page's line about the room's reference (issue 31 item 3): the student's guess judged against
the pinned reference by the Class board's own judge, for the guess typed before a run and the one saved with it
after; nothing when no reference is pinned."""

from __future__ import annotations

import pytest
import torch
from streamlit.testing.v1 import AppTest

from core.store.access import INSTRUCTOR
from core.store.class_reference import ROOM_TITLE
from core.store.database import open_store
from tests.result_samples import save_payload
from tests.store.test_import_forgeries import honest

PAGE = "pages/matmul_race.py"


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def _alerts(at: AppTest) -> list[str]:
    return [str(a.value) for a in (*at.info, *at.warning, *at.success)]


def _tiny(app: AppTest, guess: str) -> AppTest:
    app.switch_page(PAGE).run()
    app.select_slider(key="mm_sizes").set_value((16, 32))
    app.select_slider(key="mm_budget").set_value(0.25)
    return app.text_input(key="mm_guess").input(guess).run()


def test_the_guess_is_judged_against_the_pinned_reference_before_and_after_the_run(app, no_gpu):
    store = open_store()
    payload = honest()  # measured on another machine ("Student Laptop CPU i5"), sizes 64 to 2,048
    payload["settings"]["budget_s"] = 1.0
    reference_id = save_payload(store, "matmul", payload, label="room")
    store.pin_reference(reference_id, INSTRUCTOR)
    _tiny(app, "100")
    assert not app.exception
    [before] = [a for a in _alerts(app) if ROOM_TITLE in a]  # no race yet: the guess as typed
    assert before.startswith(f"{ROOM_TITLE} (run #{reference_id}, measured ")
    assert "by the instructor, 4× your budget per size): your guess n ≈ 100 is right: the reference measured a " \
           "crossover between n = 64 and n = 128. Note: it was measured on another machine and with other sizes" \
           in before

    app.text_input(key="mm_guess").input("500")
    app.button(key="mm_run").click().run()
    assert not app.exception and not app.error
    [after] = [a for a in _alerts(app) if ROOM_TITLE in a]
    assert "You guessed a crossover at n = 500" in after, "in the headline's box, under the run's own comparison"
    assert "your guess n ≈ 500 is too large by about 3.9×: the reference measured a crossover between n = 64 and " \
           "n = 128. Note: it was measured on another machine and with other sizes" in after
    saved = [r for r in store.list_runs() if r.run_id != reference_id]
    assert len(saved) == 1 and store.pinned_reference() == reference_id, "the student's run is no reference"


def test_no_line_without_a_pinned_reference(app, no_gpu):
    store = open_store()
    save_payload(store, "matmul", honest(), label="an earlier run, not pinned")
    _tiny(app, "100")
    assert not app.exception and not [a for a in _alerts(app) if ROOM_TITLE in a]
