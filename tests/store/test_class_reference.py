"""The room's reference (issue 31 item 3): pinned only with the instructor's access, never by an import or a
payload; shown with its noise; the class's guesses judged against it; on the Class board page."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from core.charts.class_reference import REFERENCE_NAME, with_reference
from core.charts.class_board import spread_figure
from core.errors import DashboardError
from core.matmul.guess import guess_call
from core.results.kinds import read_result
from core.store import database
from core.store.access import INSTRUCTOR, Access
from core.store.class_board import crossover_spread, refresh
from core.store.class_reference import against_reference, judged_guesses, read_reference, tally
from core.store.database import open_store
from pages.shared.result_store import INSTRUCTOR_MODE
from tests.result_samples import as_saved, save_payload, train_payload
from tests.store.test_import_forgeries import SIZES, TWO, honest

STUDENT = Access(instructor=False, owner_token="a student's token")
KEY = "correct horse battery staple"
PAGE = "pages/class_board.py"


def _guessed(text: str) -> dict[str, Any]:
    payload = honest()
    payload["guess"] = ({"what": "no_crossover", "text": text} if text == "no crossover"
                        else {"what": "crossover_n", "value": float(text), "text": text})
    return payload


def _busy() -> dict[str, Any]:
    """The honest race with every size timed while other programs took the CPU: nothing can be called (an import
    judges its verdicts and crossover again from its samples)."""
    payload = honest()
    for point in payload["results"]:
        point["others_cores"] = 2.0
    return payload


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])  # a real server: slow tier
def store(request, tmp_path):
    if request.param == "sqlite":
        return open_store(f"sqlite:///{tmp_path / 'runs.sqlite3'}")
    return open_store(request.getfixturevalue("postgres_url"))


def test_only_the_instructor_pins_and_unpins_and_one_reference_at_a_time(store):
    first, second = save_payload(store, "matmul", honest()), save_payload(store, "matmul", honest())
    training = save_payload(store, "train", train_payload())
    assert store.pinned_reference() is None
    with pytest.raises(DashboardError, match="only the instructor"):
        store.pin_reference(first, STUDENT)
    store.pin_reference(first, INSTRUCTOR)
    store.pin_reference(second, INSTRUCTOR)
    assert store.pinned_reference() == second, "a new pin replaces the old one"
    with pytest.raises(DashboardError, match="is a train run; the room's reference is a Matmul race"):
        store.pin_reference(training, INSTRUCTOR)
    with pytest.raises(DashboardError, match="there is no saved run #999"):
        store.pin_reference(999, INSTRUCTOR)
    with pytest.raises(DashboardError, match="only the instructor"):
        store.unpin_reference(STUDENT)
    assert store.pinned_reference() == second
    assert store.unpin_reference(INSTRUCTOR) and not store.unpin_reference(INSTRUCTOR)
    assert store.pinned_reference() is None and len(store.list_runs()) == 3, "unpinning keeps the run"


def test_deleting_the_pinned_run_unpins_it(store):
    run_id = save_payload(store, "matmul", honest())
    store.pin_reference(run_id, INSTRUCTOR)
    store.delete(run_id)
    assert store.pinned_reference() is None


def test_an_older_store_gets_the_pins_table(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    with monkeypatch.context() as schema_6:
        schema_6.setattr(database, "SCHEMA_VERSION", 6)
        schema_6.setattr(database, "MIGRATIONS", database.MIGRATIONS[:6])
        run_id = save_payload(open_store(url), "matmul", honest())
    store = open_store(url)
    assert store.schema_version() == database.SCHEMA_VERSION == 7
    store.pin_reference(run_id, INSTRUCTOR)
    assert store.pinned_reference() == run_id


def test_neither_an_import_nor_a_payload_can_pin_a_run():
    """A pin lives in a table of its own: an export of a pinned board, or a file that says it is the reference,
    imports as plain runs."""
    store = open_store()
    store.pin_reference(save_payload(store, "matmul", honest()), INSTRUCTOR)
    exported = store.export_json()
    forged = as_saved("matmul", honest())
    for key in ("pinned", "reference", "room_reference", "role"):
        forged[key] = True
    other = open_store(f"sqlite:///{store._target}.other")  # another board, as a student's import reaches it
    other.import_json(exported, owner_token="a student's token")
    try:
        other.import_json(json.dumps(forged).encode(), owner_token="a student's token")
    except DashboardError:
        pass  # a schema that refuses the unknown keys is as good: nothing pinned either way
    assert other.pinned_reference() is None
    assert len(other.list_runs()) >= 1


def test_the_reference_shows_its_noise_and_judges_each_guess():
    store = open_store()
    for name, text in (("Ana", "100"), ("Ben", "1000"), ("Cy", "50"), ("Dee", "no crossover")):
        save_payload(store, "matmul", _guessed(text), label=name)
    save_payload(store, "train", train_payload(), label="Eve")  # no crossover guess: not judged
    reference_id = save_payload(store, "matmul", honest(), label="room")
    assert read_reference(store) is None
    store.pin_reference(reference_id, INSTRUCTOR)
    reference = read_reference(store)
    assert reference is not None and reference.run_id == reference_id
    assert read_reference(store, reference) is reference, "the pin did not move: nothing read again"
    assert "beats" in reference.headline and "between n = 64 and n = 128" in reference.headline
    noise = reference.noise()
    assert [r.n for r in noise] == list(SIZES) and all(r.low is not None and r.high is not None for r in noise)
    assert all(r.call in ("faster", "same", "cannot tell") for r in noise)
    assert reference.noise_summary().startswith(f"{len(SIZES)} sizes: ")
    judged = {j.who.split(" · ")[0]: j.against_reference for j in judged_guesses(refresh(store), reference)}
    assert judged == {"Ana": "right", "Ben": "too large (7.8×)", "Cy": "close, too small (1.3×)",
                      "Dee": "wrong: there is one"}
    assert tally(judged_guesses(refresh(store), reference)) == (
        "4 guesses against it: 1 right, 1 close, 1 too large, 1 wrong")


def test_a_reference_that_cannot_tell_judges_no_guess():
    store = open_store()
    save_payload(store, "matmul", _guessed("100"), label="Ana")
    [busy] = store.import_json(json.dumps(as_saved("matmul", _busy())).encode()).run_ids  # verdicts judged again
    store.pin_reference(busy, INSTRUCTOR)
    reference = read_reference(store)
    assert reference is not None and "cannot tell" in reference.headline
    assert "cannot tell" in reference.noise_summary()
    [judged] = judged_guesses(refresh(store), reference)
    assert judged.against_reference == "cannot tell"
    assert "none judged: the reference cannot tell" in tally([judged])
    spread = crossover_spread(refresh(store))
    names = [trace.name for trace in with_reference(spread_figure(spread, title="t", x_title="n"),
                                                    reference.sweep).data]
    assert f"{REFERENCE_NAME}: cannot tell" in names


def test_the_crossover_chart_draws_the_reference_interval_within_its_axis():
    sweep = read_result("matmul", honest())
    store = open_store()
    save_payload(store, "matmul", _guessed("5000"))
    fig = with_reference(spread_figure(crossover_spread(refresh(store)), title="t", x_title="n"), sweep)
    [band] = [trace for trace in fig.data if trace.name == REFERENCE_NAME]
    assert list(band.x) == [64.0, 128.0]
    low, high = fig.layout.xaxis.range
    assert low <= 1.80 and high >= 3.69, "log10 range holds 64 and the 5000 guess"
    assert guess_call(read_result("matmul", _guessed("5000")).guess, sweep) == "too large (39.1×)"


def _board(app: AppTest, *, instructor: bool = False) -> AppTest:
    if instructor:
        app.session_state[INSTRUCTOR_MODE] = True  # what entering the key on the Matmul race page leaves
    return app.switch_page(PAGE).run()


def _texts(at: AppTest) -> str:
    return "\n".join(str(e.value) for e in [*at.markdown, *at.caption, *at.info, *at.error])


def test_the_board_pins_the_reference_and_a_student_cannot_unpin_it(app, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_INSTRUCTOR_KEY", KEY)
    store = open_store()
    save_payload(store, "matmul", _guessed("1000"), label="Ana")
    save_payload(store, "matmul", _guessed("100"), label="Ben")
    reference_id = save_payload(store, "matmul", honest(), label="room")
    store.pin_reference(reference_id, INSTRUCTOR)
    student = _board(app)
    assert not student.exception
    text = _texts(student)
    assert f"The room's reference** (run #{reference_id}, room · server): " in text
    assert "\n2 guesses against it: 1 right, 1 too large" in text and "*cannot tell* where it does not" in text
    noise, guesses, runs = (frame.value for frame in student.dataframe)  # in the reference's box, then the runs
    assert sorted(guesses["against_reference"]) == ["right", "too large (7.8×)"]
    assert list(noise["n"]) == list(SIZES) and len(runs) == 3
    crossover_chart = next(c for c in student.get("plotly_chart") if REFERENCE_NAME in c.proto.spec)
    assert crossover_chart is not None
    assert not [b for b in student.button if b.key == "cb_unpin"], "only the instructor's session may unpin"

    teacher = _board(AppTest.from_file(app._script_path, default_timeout=120), instructor=True)
    teacher.button(key="cb_unpin").click().run()
    assert not teacher.exception and store.pinned_reference() is None
    assert "The room's reference" not in _texts(teacher)
    student.run()  # what the pin check's next refresh triggers
    assert "The room's reference" not in _texts(student)


def test_without_a_configured_key_a_session_marked_instructor_still_cannot_unpin(app, monkeypatch):
    monkeypatch.delenv("GPU_VS_CPU_INSTRUCTOR_KEY", raising=False)
    store = open_store()
    store.pin_reference(save_payload(store, "matmul", copy.deepcopy(honest())), INSTRUCTOR)
    at = _board(app, instructor=True)
    assert "The room's reference" in _texts(at) and not [b for b in at.button if b.key == "cb_unpin"]
    assert TWO in _texts(at)


def test_a_reference_of_one_series_judges_no_guess():
    full = read_result("matmul", honest())
    one_series = replace(full, results=tuple(p for p in full.results if p.label != TWO), crossovers=(), verdicts=None)
    assert one_series.headline_crossover is None
    assert guess_call(read_result("matmul", _guessed("no crossover")).guess, one_series) == "cannot tell"


def _pinned(store, payload: dict[str, Any] | None = None, **settings: Any):
    payload = copy.deepcopy(payload or honest())
    payload["settings"].update(settings)
    store.pin_reference(save_payload(store, "matmul", payload, label="room"), INSTRUCTOR)
    reference = read_reference(store)
    assert reference is not None
    return reference


def _guess(text: str):
    return read_result("matmul", _guessed(text)).guess


def test_a_students_guess_against_the_reference_is_one_sentence_by_the_boards_judge():
    """The race page's and the CLI's line (core.store.class_reference.against_reference): the board's call in words,
    with when the reference was measured and its budget beside the student's."""
    reference = _pinned(open_store(), budget_s=1.0)
    machine = read_result("matmul", honest()).machine
    same = {**reference.sweep.settings, "budget_s": 0.25}
    now = datetime.fromisoformat(reference.run.created_at.replace("Z", "+00:00"))
    line = against_reference(reference, _guess("500"), same, machine, now=now)
    assert line is not None and line.call.short == guess_call(_guess("500"), reference.sweep) == "too large (3.9×)"
    assert line.text == (f"Against the room's reference (run #{reference.run_id}, measured {now:%H:%M} UTC by the "
                         "instructor, 4× your budget per size): your guess n ≈ 500 is too large by about 3.9×: the "
                         "reference measured a crossover between n = 64 and n = 128.")
    texts = {g: against_reference(reference, _guess(g), same, machine, now=now).text.split("): ", 1)[1]
             for g in ("100", "50", "no crossover")}
    assert texts == {"100": "your guess n ≈ 100 is right: the reference measured a crossover between n = 64 and "
                            "n = 128.",
                     "50": "your guess n ≈ 50 is close, but too small by about 1.3×: the reference measured a "
                           "crossover between n = 64 and n = 128.",
                     "no crossover": 'your guess "no crossover" is wrong: the reference measured a crossover '
                                     "between n = 64 and n = 128."}
    later = now + timedelta(days=1)
    assert f"measured {now:%Y-%m-%d %H:%M} UTC by the instructor, the same budget per size as yours)" in (
        against_reference(reference, _guess("100"), {**same, "budget_s": 1.0}, machine, now=later).text)
    assert ", 1 s per size)" in against_reference(reference, _guess("100")).text, "no race to set it beside"
    assert against_reference(reference, None, same, machine) is None


def test_a_reference_of_other_settings_or_another_machine_says_so():
    reference = _pinned(open_store())
    own = read_result("matmul", honest())
    assert "Note:" not in against_reference(reference, _guess("100"), own.settings, own.machine).text
    other = {**own.settings, "sizes": [16, 32], "threads": [1], "series": ["x"], "budget_s": 9.0}
    elsewhere = replace(own.machine, cpu=replace(own.machine.cpu, name="Lab server CPU"))
    text = against_reference(reference, _guess("100"), other, elsewhere).text
    assert text.endswith(": your guess n ≈ 100 is right: the reference measured a crossover between n = 64 and "
                         "n = 128. Note: it was measured on another machine and with other sizes, CPU threads than "
                         "your race, so it answers another race.")
    assert "Note:" not in against_reference(reference, _guess("100"), {"dtypes": ["float64"]}, None).text, (
        "a setting only one of them recorded is not called different")


def test_a_reference_that_cannot_tell_says_so_to_the_student():
    store = open_store()
    [busy] = store.import_json(json.dumps(as_saved("matmul", _busy())).encode()).run_ids
    store.pin_reference(busy, INSTRUCTOR)
    reference = read_reference(store)
    assert reference is not None
    text = against_reference(reference, _guess("100")).text
    assert text.startswith(f"Against the room's reference (run #{busy}, measured ")
    assert text.endswith("): cannot tell: the reference itself could not call the crossover (a busy or noisy "
                         "machine, or no two series raced), so your guess n ≈ 100 can be neither confirmed nor "
                         "refuted.")
