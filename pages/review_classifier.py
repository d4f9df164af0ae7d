"""Review classifier: the lecture's network on real movie reviews, trained on the CPU or the GPU, loss live."""

import streamlit as st

from core.charts.classifier import accuracy_curve, loss_curves
from core.classifier.runs import DONE
from core.errors import DashboardError
from core.plain_text import message_markdown
from core.results.guess import parse_train_guess
from pages.shared.classifier_widgets import (
    data_choice, preset_race_view, run_history, run_metrics, run_notes, settings_form, try_your_review, workbench,
)
from pages.shared.device_wait import page_job
from pages.shared.entry import through_app
from pages.shared.result_store import save_run

through_app()
TICK_BATCHES = 20  # touch the page every N batches so that Stop takes effect within a few batches
bench = workbench()
bench.mark_interrupted()  # a run still 'running' at the top of the script was stopped

st.title("Review classifier")
st.caption("The lecture's network, `Linear(V, hidden) → ReLU → Linear(hidden, 1) → Sigmoid` with BCELoss and SGD, "
           "learns to tell positive from negative movie reviews. Only the device changes between runs.")
with st.sidebar:  # the settings; the main column keeps the buttons and what they produce (a projector's 720 rows)
    choice = data_choice()
settings = settings_form(waiting_for=choice.waiting_for)
status, guess_slot, race_slot, metrics_slot, loss_slot, acc_slot = (st.empty() for _ in range(6))

download = st.session_state.get("clf_download", False)  # Download pressed: read the reviews (downloaded first), no run
if settings.train or settings.race or settings.both or download:
    def on_progress(step) -> None:
        status.info(step.message)
        if step.item is not None:
            rec = bench.runs[-1]
            loss_slot.plotly_chart(loss_curves(rec.reports, baseline_loss=rec.baseline.test_loss,
                                               epochs=rec.config.epochs, run=rec.label),
                                   key=f"clf_live_{rec.number}_{len(rec.reports)}")

    def tick(batches: int) -> None:  # any page update lets a Stop click end the run here, between batches
        if batches % TICK_BATCHES == 0:
            status.info(f"{bench.status} · {batches} batches")

    def save(run) -> None:  # a run that finished all its epochs goes to the Results page
        save_run(run, label=st.session_state.clf_label.strip())

    try:
        config = settings.config()
        guess = parse_train_guess(st.session_state.clf_guess)  # an unreadable guess is refused before anything runs
        if bench.needs_loading(choice):
            with st.spinner("reading reviews"):  # the bar in the status line: a refusal there replaces it
                bar = status.progress(0.0)
                bench.load(choice, progress=lambda d, t: bar.progress(min(1.0, d / t) if t else 0.0))
                bar.empty()
        if download:
            status.success(f"{choice.source} downloaded, verified and read.")
        else:
            with page_job("clf", on_progress=on_progress, between_steps=tick) as turn:
                if bench.needs_prepare(config):
                    with st.spinner("building the document-term matrix and the LogisticRegression baseline"):
                        bench.prepared(config, turn.hooks)
                bench.train(config, turn.hooks, race=settings.race, both=settings.both, on_done=save, guess=guess)
            status.empty()
    except DashboardError as exc:
        status.error(message_markdown(exc))  # it may name an uploaded file (escaped); its `code` shows as code

if bench.guess_note:  # ---- the guess beside the measurement, right under the buttons
    guess_slot.info(bench.guess_note, icon=":material/psychology_alt:")
if (race := bench.preset_race) is not None and bench.race_is_latest:  # ---- "Both presets" just ran: first
    with race_slot.container():
        preset_race_view(race)
if bench.runs:  # ---- the latest run (from the session, so it survives reruns and Stop)
    last, base = bench.runs[-1], bench.runs[-1].baseline
    with metrics_slot.container():
        run_metrics(last)
    loss_slot.plotly_chart(loss_curves(last.reports, baseline_loss=base and base.test_loss,
                                       epochs=last.config.epochs if last.status == DONE else None,
                                       kept_epoch=last.best_epoch, run=last.label), key="clf_loss")
    acc_slot.plotly_chart(accuracy_curve(last.epochs, baseline_accuracy=base and base.accuracy,
                                         best_epoch=last.best_epoch, run=last.label), key="clf_acc")
    run_notes(last)  # the busy warning and the kept epoch's meaning, under the charts
if bench.preset_race is not None and not bench.race_is_latest:  # ---- an earlier "both presets" comparison
    preset_race_view(bench.preset_race)
st.page_link("pages/classifier_scaling.py", label="More workers: data-parallel scaling", icon=":material/lan:")

try_your_review(bench)  # ---- with the latest run's kept epoch
if bench.runs:  # ---- run history: every run of this session, overlaid
    run_history(bench)
