"""The instructor's *Measure for the class* on the Matmul race page (issue 31 item 3): only with the instructor key,
a longer race that students' Run with the same settings joins, saved and pinned as the room's reference, which
the Class board then shows."""

from __future__ import annotations

import threading

import pytest
import torch
from streamlit.testing.v1 import AppTest

from core.matmul.shared_race import CLASS_BUDGET_FACTOR
from core.store.database import open_store
from tests.lock_helpers import hold_cpu_for, wait_until
from tests.pages.test_app_matmul_race import ROOT_APP, _progress_text, _text, _tiny_settings

KEY = "correct horse battery staple"
BUDGET_S = 0.25  # the tiny race's budget per size; the class's is CLASS_BUDGET_FACTOR times it


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_INSTRUCTOR_KEY", KEY)


def _session(label: str, guess: str) -> AppTest:
    return _tiny_settings(AppTest.from_file(str(ROOT_APP), default_timeout=120), label, guess)


def _keys(at: AppTest) -> set[str]:
    return {w.key for w in [*at.button, *at.text_input] if w.key}


def _instructor() -> AppTest:
    teacher = _session("", "")
    teacher.text_input(key="mm_key").input(KEY).run()
    assert not teacher.exception and "mm_for_class" in _keys(teacher) and "mm_key" not in _keys(teacher)
    return teacher


def test_a_student_sees_a_key_field_but_no_measure_button(no_gpu, keyed):
    student = _session("Ana", "100")
    assert "mm_key" in _keys(student) and "mm_for_class" not in _keys(student)
    student.text_input(key="mm_key").input("a guess at the key").run()
    assert "not the instructor key" in student.error[0].value
    assert "mm_for_class" not in _keys(student)


def test_without_a_configured_key_nobody_may_measure_for_the_class(no_gpu, monkeypatch):
    monkeypatch.delenv("GPU_VS_CPU_INSTRUCTOR_KEY", raising=False)
    at = _session("Ana", "100")
    at.session_state["board_instructor"] = True  # even a session marked so: an open board is nobody's to pin
    at.run()
    assert "mm_for_class" not in _keys(at) and "mm_key" not in _keys(at)
    assert "needs an instructor key: set GPU_VS_CPU_INSTRUCTOR_KEY" in _text(at)


def test_the_instructor_measures_for_the_class_and_it_is_pinned_on_the_board(no_gpu, keyed):
    teacher = _instructor()
    teacher.text_input(key="mm_label").input("Lab server")
    teacher.text_input(key="mm_guess").input("50")  # the reference is a measurement, not a prediction
    teacher.button(key="mm_for_class").click().run()
    assert not teacher.exception and not teacher.error
    final = teacher.session_state["mm_sweep"].final
    assert final.settings["budget_s"] == BUDGET_S * CLASS_BUDGET_FACTOR and final.guess is None
    store = open_store()
    [run] = store.list_runs()
    assert store.pinned_reference() == run.run_id and run.label == "Lab server"
    assert any("Pinned as the room's reference" in s.value for s in teacher.success)

    student = _session("Ana", "100")
    student.button(key="mm_run").click().run()  # a race of her own (nothing to join now), saved with her guess
    [line] = [a for a in _text(student).split("\n") if "room's reference" in a]  # one series: no headline box
    assert (f"Against the room's reference (run #{run.run_id}, measured " in line
            and f"by the instructor, {CLASS_BUDGET_FACTOR}× your budget per size): cannot tell: " in line
            and "so your guess n ≈ 100 can be neither confirmed nor refuted." in line and "Note:" not in line)
    board = AppTest.from_file(str(ROOT_APP), default_timeout=120).switch_page("pages/class_board.py").run()
    assert not board.exception
    text = "\n".join(m.value for m in board.markdown)
    assert f"The room's reference** (run #{run.run_id}, Lab server · " in text
    # the tiny race times one series (1 thread): it compares nothing, so her guess is neither right nor wrong
    assert "1 guess, none judged: the reference cannot tell where the crossover is" in text
    assert list(board.dataframe[1].value["against_reference"]) == ["cannot tell"]


def test_a_students_run_with_the_same_settings_joins_the_class_measurement(no_gpu, keyed):
    from core.platform.shared_jobs import SHARED_JOBS

    teacher, student = _instructor(), _session("Ben", "no crossover")
    holder = hold_cpu_for(1.0)  # the instructor's measurement waits in line, reserved
    runner = threading.Thread(target=lambda: teacher.button(key="mm_for_class").click().run())
    runner.start()
    wait_until(lambda: SHARED_JOBS.active())
    student.button(key="mm_run").click().run()
    runner.join(60)
    holder.join(10)
    assert not teacher.exception and not student.exception and not teacher.error and not student.error
    mine, theirs = teacher.session_state["mm_sweep"].final, student.session_state["mm_sweep"].final
    assert [p.times_s for p in mine.results] == [p.times_s for p in theirs.results], "one measurement"
    assert mine.shared.race == theirs.shared.race and (mine.shared.joined, theirs.shared.joined) == (False, True)
    assert theirs.settings["budget_s"] == BUDGET_S * CLASS_BUDGET_FACTOR, "the student got the longer race"
    assert "one race shared by 2 sessions (you joined it)" in _progress_text(student)
    store = open_store()
    runs = {r.label: r for r in store.list_runs()}
    assert set(runs) == {"", "Ben"} and runs["Ben"].result.guess.what == "no_crossover"
    assert store.pinned_reference() == runs[""].run_id, "the instructor's copy is pinned, not the student's"
    student.run()  # the next rerun: the pin is read, and her guess judged against it with the budget she got
    assert "by the instructor, the same budget per size as yours): " in _text(student)


@pytest.mark.slow  # two races one after the other: over the fast tier's 5 s on a busy 2-core machine
def test_a_student_with_other_settings_waits_its_turn(no_gpu, keyed):
    from core.platform.shared_jobs import SHARED_JOBS

    teacher, student = _instructor(), _session("Cy", "64")
    student.select_slider(key="mm_sizes").set_value((16, 64))  # another race
    holder = hold_cpu_for(1.0)
    runner = threading.Thread(target=lambda: teacher.button(key="mm_for_class").click().run())
    runner.start()
    wait_until(lambda: SHARED_JOBS.active())
    student.button(key="mm_run").click().run()
    runner.join(60)
    holder.join(10)
    assert not student.exception and not teacher.exception
    theirs = student.session_state["mm_sweep"].final
    assert theirs.shared is None and theirs.settings["budget_s"] == BUDGET_S
    assert "after waiting" in _progress_text(student)
