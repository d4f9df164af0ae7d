"""The Review classifier's widget layouts: where the reviews come from, the run's settings, the latest run's metrics.

Not a page (app.py does not list it); it starts no job and downloads nothing (the pages do, through core).
Widget keys are `clf_*`; what they mean lives in core (`DataChoice`, `ClassifierConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from core import glossary
from core.classifier.datasets import BUILTIN_DATASETS, is_cached
from core.classifier.baseline import BaselineResult
from core.classifier.features import WEIGHTINGS, Features
from core.classifier.loaders import Reviews
from core.charts.classifier import METRICS, overlay, preset_race_chart
from core.classifier.model import INPUT_MODES, MAX_NB_LOGIT, PRESETS, ClassifierConfig, preset_config
from core.classifier.preset_race import CHAIN_TITLE, PresetRace
from core.classifier.runs import RunRecord, table_rows
from core.classifier.training import predict
from core.classifier.shared_builds import SharedBuilds
from core.classifier.workbench import PATH, UPLOAD, DataChoice, Upload, Workbench
from core.results.guess import TRAIN_EXAMPLE
from core.platform.devices import NEEDS_GPU, available_devices, has_gpu
from core.platform.units import EMPTY, percent, points, readable, seconds
from pages.shared.notices import gpu_badge, load_notice


@st.cache_resource(show_spinner=False)
def server_builds() -> tuple[SharedBuilds[Reviews], SharedBuilds[tuple[Features, BaselineResult]]]:
    """The built-in data sets and the feature sets this server has built, for every session."""
    return SharedBuilds(max_entries=2), SharedBuilds()


def workbench() -> Workbench:
    """This session's Workbench, sharing the server's data sets and feature sets with every other session; a large
    feature set is built as the server's quiet work."""
    bench: Workbench = st.session_state.setdefault("clf_bench", Workbench(quiet=True))
    bench.shared_reviews, bench.shared_features = server_builds()
    return bench


def data_choice(*, offer_download: bool = True) -> DataChoice:
    """The reviews radio, with a Download button (`clf_download`, which the page acts on) for a built-in set not in
    the cache yet, an uploader or a path. Nothing is downloaded here."""
    choices = {name: f"{name}: {ds.title}" for name, ds in BUILTIN_DATASETS.items()}
    choices |= {UPLOAD: "upload a file", PATH: "a folder or file on this server"}
    source = st.radio("Reviews", list(choices), format_func=choices.get, key="clf_source", horizontal=True)
    if source == UPLOAD:
        files = st.file_uploader("A CSV/TSV with a text and a label column "
                                 "(0/1, neg/pos, negative/positive, false/true), "
                                 "a .tar.gz of rt-polarity or aclImdb, or rt-polarity.pos + rt-polarity.neg",
                                 accept_multiple_files=True, key="clf_upload") or []
        return DataChoice(UPLOAD, uploads=tuple(Upload(f.name, f.getvalue(), f.file_id) for f in files))
    if source == PATH:
        return DataChoice(PATH, path=st.text_input("Path", key="clf_path",
                                                   placeholder="/data/rt-polaritydata, aclImdb/, reviews.csv"))
    ds = BUILTIN_DATASETS[source]
    if is_cached(source):
        st.caption(f"{ds.title} ({ds.citation}) is in the cache.")
    elif offer_download:  # pressed: the page reads the reviews, downloading them first (core.classifier.workbench)
        st.button(f"Download {source} ({ds.approx_mb:g} MB)", key="clf_download", icon=":material/download:")
        st.caption(f"Not downloaded yet ({ds.approx_mb:g} MB from {ds.url}); Train downloads it too.")
    else:
        st.caption(f"Not downloaded yet ({ds.approx_mb:g} MB from {ds.url}); the run downloads it first.")
    return DataChoice(source)


@dataclass(frozen=True)
class SettingsForm:
    values: dict[str, Any]  # ClassifierConfig's fields, as the widgets give them
    train: bool  # Train was pressed
    race: bool  # "Race CPU vs GPU" was pressed
    both: bool  # "Both presets" was pressed

    def config(self) -> ClassifierConfig:
        """The run these settings describe; an out-of-range value raises DashboardError."""
        return ClassifierConfig(**self.values)


def settings_form(waiting_for: str = "") -> SettingsForm:
    """The preset, the settings and the device in the sidebar; the guess, the Results name and the Train,
    Race, Both and Stop buttons in one row of the main column, so that at a projector's 1280 × 720 the
    buttons, the progress and the first result fit above the fold.

    Each preset keeps its own widgets (keys `clf_*` for mini-batch, `clf_*_lecture` for the lecture), so
    switching shows that preset's defaults and keeps what was typed for the other. `waiting_for` names
    what the runs still need (an upload that has not reached the server): Train, Race and Both wait."""
    with st.sidebar:
        values = _settings()
    return _action_row(values, waiting_for)


def _settings() -> dict[str, Any]:
    """The preset, the vectorizer and model settings (one column: the sidebar is narrow) and the device."""
    preset = st.radio("Preset", list(PRESETS), format_func=PRESETS.get, key="clf_preset", horizontal=True,
                      help="the lecture: the whole dense matrix on the device, one full-batch update per step (10 in "
                           "all); mini-batch: sparse batches of 64 with momentum and weight decay (the best accuracy)")
    d, lecture = preset_config(preset), preset == "lecture"

    def k(name: str) -> str:
        return f"clf_{name}_lecture" if lecture else f"clf_{name}"

    with st.expander("Vectorizer and model settings", expanded=False):
        c1 = c2 = c3 = c4 = st.container()
        v: dict[str, Any] = dict(
            preset=preset,
            weighting=c1.selectbox("Weighting", list(WEIGHTINGS), list(WEIGHTINGS).index(d.weighting),
                                   format_func=WEIGHTINGS.get, key=k("weighting"),
                                   help=f"{glossary.NB_WEIGHTING} NB-weighted: binary word, pair (and letter-group) "
                                        "features so scaled (best accuracy here); TF-IDF: counts weighted down for "
                                        "words most reviews contain"),
            ngrams=c1.radio("n-grams", [1, 2], index=d.ngrams - 1, key=k("ngrams"), horizontal=True,
                            format_func=lambda n: "words" if n == 1 else "words + pairs"),
            max_features=c1.number_input("Vocabulary cap (0: none)", 0, 5_000_000, d.max_features or 0,
                                         key=k("maxf")) or None,
            hidden=c2.number_input("Hidden units", 1, 4096, d.hidden, key=k("hidden")),
            epochs=c2.number_input("Updates (full-batch steps)" if lecture else "Epochs", 1, 500, d.epochs,
                                   key=k("epochs")),
            lr=c3.number_input("Learning rate", 1e-6, 100.0, d.lr, format="%.4f", key=k("lr")),
            momentum=c3.number_input("Momentum", 0.0, 0.999, d.momentum, key=k("momentum")),
            weight_decay=c3.number_input("Weight decay", 0.0, 1.0, d.weight_decay, format="%.5f", key=k("decay")),
            seed=c4.number_input("Seed", 0, 2**31 - 1, d.seed, key=k("seed")),
            val_fraction=c4.number_input("Validation share (0: keep the last epoch)", 0.0, 0.5, d.val_fraction,
                                         key=k("val"), help="training reviews held back to choose the kept epoch"),
        )
        if not lecture:  # the lecture's batch is every training review, always dense
            v |= dict(
                batch_size=c2.number_input("Batch size", 1, 65536, d.batch_size, key="clf_batch"),
                report_every=c4.number_input("Also report every N batches (0: per epoch)", 0, 100_000, 0,
                                             key="clf_every"),
                nb_logit=c3.number_input("Naive-Bayes weight (0: none)", 0.0, MAX_NB_LOGIT, d.nb_logit,
                                         key="clf_nb_logit",
                                         help="after training, the kept network adds this times the review's "
                                              "naive-Bayes log-odds to its output (two more hidden units; NB-weighted "
                                              "inputs only): NBSVM's blend, +0.9 points in 10-fold cross-validation"),
                input_mode=c1.selectbox("Input path", list(INPUT_MODES), format_func=INPUT_MODES.get, key="clf_input",
                                        help="sparse sums the weights of the words present; dense builds each batch "
                                             "as a full (batch x vocabulary) matrix first: same numbers, more work"),
            )
    v["device"] = st.selectbox("Device", ["auto", *available_devices()] if has_gpu() else ["cpu"], key="clf_device")
    if not has_gpu():
        gpu_badge("runs use the CPU; with a GPU you could race the same run on both and compare them by wall time")
    return {**{f: getattr(d, f) for f in ("batch_size", "input_mode")}, **v}


def _action_row(v: dict[str, Any], waiting_for: str) -> SettingsForm:
    """Your guess, the Results name, and the Train, Race, Both and Stop buttons, side by side."""
    g1, g2 = st.columns(2)
    g1.text_input("Your guess", key="clf_guess", max_chars=40, placeholder=TRAIN_EXAMPLE,
                  help="before you press Train or Race: seconds per epoch, or how many times faster the GPU is. "
                       "Saved with the run; the page compares it with the measurement afterwards")
    g2.text_input("Name for the Results page (optional)", key="clf_label", max_chars=200,
                  placeholder="e.g. Ana's laptop", help="finished runs are saved for the Results page under this name")
    buttons = st.container(horizontal=True)
    wait = f". Waiting for {waiting_for}" if waiting_for else ""
    train = buttons.button("Train", type="primary", key="clf_train", icon=":material/play_arrow:",
                           disabled=bool(waiting_for), help=wait.removeprefix(". ") or None)
    race = buttons.button("Race CPU vs GPU", key="clf_race", icon=":material/sprint:",
                          disabled=not has_gpu() or bool(waiting_for),
                          help="the chosen preset, same seed, on the CPU and then on the GPU; compare them by "
                               "wall time below" + ("" if has_gpu() else f". Disabled: the race {NEEDS_GPU}") + wait)
    both = buttons.button("Both presets", key="clf_both", icon=":material/compare_arrows:", disabled=bool(waiting_for),
                          help="each preset's defaults from this seed on the CPU and the GPU (the CPU alone without "
                               "one): seconds per epoch side by side" + wait)
    buttons.button("Stop", key="clf_stop", icon=":material/stop:",
                   help="stops within a few batches; results so far stay")
    if waiting_for:
        st.caption(f"*Train* and *Both presets* wait for {waiting_for}.")
    if not has_gpu():
        st.caption(f"*Race CPU vs GPU* is off: it {NEEDS_GPU}.")
    return SettingsForm(v, train, race, both)


def preset_race_view(race: PresetRace) -> None:
    """The "both presets" comparison: the runs' seconds per epoch side by side, with why they differ."""
    st.subheader("Both presets, side by side")
    st.plotly_chart(preset_race_chart(race), key="clf_both_chart")
    st.dataframe(readable(race.rows()), hide_index=True, key="clf_both_table")
    st.markdown(race.explanation)
    st.page_link("pages/why_parallel.py", label=f"Why parallel: {CHAIN_TITLE}", icon=":material/call_split:")


def run_metrics(run: RunRecord) -> None:
    """Four numbers for a run: kept epoch's test accuracy (against the baseline), baseline, s/epoch, epochs done."""
    kept, base = run.kept, run.baseline
    m1, m2, m3, m4 = st.columns(4)
    accuracy = None if kept is None else kept.test_accuracy
    m1.metric("Test accuracy (kept epoch)", percent(accuracy),
              None if accuracy is None or base is None else f"{points(accuracy - base.accuracy)} vs baseline",
              help="share of the held-out test reviews the kept epoch labels right; the difference from the "
                   "baseline is in percentage points (78.0% against 77.4% is +0.6 points)")
    m2.metric("Baseline accuracy", percent(None if base is None else base.accuracy),
              help="scikit-learn LogisticRegression on the same features and the same split")
    m3.metric("Time per update" if run.config.preset == "lecture" else "Time per epoch",
              seconds(run.seconds_per_epoch) or EMPTY,
              help="median over the completed epochs, device-synchronized, evaluation excluded")
    m4.metric("Epochs done", f"{len(run.epochs)} / {run.config.epochs}", f"{run.status} on {run.device}",
              delta_color="off", delta_arrow="off")


def run_notes(run: RunRecord) -> None:
    """Under the run's charts: the busy-machine warning and what the kept epoch means when the test loss rose,
    in body text (a sentence the class should read, not a grey caption), below the charts so they stay in view."""
    load_notice(run.load)
    if note := run.overfitting_note:
        st.markdown(note)


SCALING_TEXT = (
    "The marbles across processes: K worker processes (`torch.distributed` over gloo, the library PyTorch uses to "
    "pass data between processes on a CPU) each train on every K-th review of a batch, then add their gradients "
    "(an all-reduce: each worker hands in its gradients and gets back the sum of all of them) so all take the "
    "same step. The compute shares out over K; "
    "the all-reduce does not, and with tiny mini-batch steps it can be most of the epoch, keeping the measured bars "
    "far above the ideal line: Amdahl's law, with communication as the part that does not shrink. The lecture "
    "preset's few big full-batch steps would spend far less of their time adding counts.")


def run_history(bench: Workbench) -> None:
    """Every run of this session on one chart, by epoch or by wall time (the race), and as a table."""
    st.subheader("Run history")
    h1, h2 = st.columns(2)
    by = h1.radio("x axis", ["seconds", "epoch"], key="clf_by", horizontal=True,
                  format_func=lambda b: "wall time (the race)" if b == "seconds" else "epoch")
    metric = h2.selectbox("Show", list(METRICS), format_func=METRICS.get, key="clf_metric")
    st.plotly_chart(overlay(bench.runs, by=by, metric=metric), key="clf_overlay")
    st.dataframe(readable(table_rows(bench.runs)), hide_index=True, key="clf_table")
    if st.button("Clear history", key="clf_clear"):
        bench.runs.clear()
        st.rerun()


def try_your_review(bench: Workbench) -> None:
    """A text box scored by the latest run's kept epoch (or a hint to train first)."""
    st.subheader("Try your own review")
    if bench.model is None:
        st.caption("Train a run first; its kept epoch then scores your text.")
        return
    text = st.text_area("Your review", key="clf_review", placeholder="a moving, beautifully acted film")
    if st.button("How positive is it?", key="clf_predict") and text.strip():
        st.metric(f"p(positive), {bench.model[0]}", f"{predict(bench.model[1], [text])[0]:.1%}")
