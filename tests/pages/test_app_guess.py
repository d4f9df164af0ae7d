"""AppTests of predict-then-measure: a guess typed in `Your guess` is saved with the run and compared after it."""

import pytest
import torch

from core.store.database import open_store


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def test_matmul_guess_is_saved_and_compared_after_the_run(app, no_gpu):
    app.switch_page("pages/matmul_race.py").run()
    assert app.text_input(key="mm_guess").label == "Your guess"
    app.select_slider(key="mm_sizes").set_value((16, 32))
    app.select_slider(key="mm_budget").set_value(0.25)
    app.text_input(key="mm_guess").set_value("no crossover")
    app.text_input(key="mm_label").set_value("Ana")
    app.button(key="mm_run").click().run()
    assert not app.exception and not app.error
    alerts = [a.value for a in (*app.info, *app.warning, *app.success)]  # in the crossover's box, or its own
    assert any("You guessed no crossover; " in a for a in alerts), alerts
    assert not any("room's reference" in a for a in alerts), "no reference pinned: no line about it"
    saved = open_store().list_runs(kind="matmul")
    assert saved[0].label == "Ana" and saved[0].result.guess.what == "no_crossover"


def test_an_unreadable_matmul_guess_is_one_line_and_nothing_runs(app, no_gpu):
    app.switch_page("pages/matmul_race.py").run()
    app.text_input(key="mm_guess").set_value("soon")
    app.button(key="mm_run").click().run()
    assert not app.exception
    assert [e.value for e in app.error] and "no crossover" in app.error[0].value
    assert app.session_state["mm_sweep"] is None and not open_store().list_runs()


def test_classifier_guess_is_saved_and_compared_after_the_run(app, no_gpu, tmp_path, monkeypatch):
    from tests.review_fixtures import csv_bytes, toy_reviews

    monkeypatch.setenv("GPU_VS_CPU_DATA_ROOTS", str(tmp_path))
    reviews = toy_reviews(40)
    path = tmp_path / "toy.csv"
    path.write_bytes(csv_bytes([(t, str(int(y))) for t, y in zip(reviews.texts, reviews.labels)]))
    app.switch_page("pages/review_classifier.py").run()
    assert app.text_input(key="clf_guess").label == "Your guess"
    app.radio(key="clf_source").set_value("path").run()
    app.text_input(key="clf_path").set_value(str(path))
    app.number_input(key="clf_epochs").set_value(2)
    app.number_input(key="clf_hidden").set_value(4)
    app.number_input(key="clf_batch").set_value(16)
    app.text_input(key="clf_guess").set_value("20x")
    app.button(key="clf_train").click().run()
    assert not app.exception and not app.error
    note = [i.value for i in app.info if i.value.startswith("You guessed")]
    assert note and "one device only" in note[0]  # a speed-up needs the race, which needs a GPU
    saved = open_store().list_runs(kind="train")
    assert saved[0].result.guess.what == "speedup" and saved[0].result.guess.value == 20.0
