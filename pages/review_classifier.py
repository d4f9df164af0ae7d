"""Review classifier: the lecture's network on real movie reviews, trained on the CPU or the GPU, loss live."""

from dataclasses import asdict, replace

import streamlit as st

from core.charts.classifier import METRICS, accuracy_curve, loss_curves, overlay
from core.classifier.model import INPUT_MODES, ClassifierConfig
from core.classifier.runs import DONE, RunRecord, interrupted, table_rows
from core.classifier.datasets import BUILTIN_DATASETS, fetch, is_cached, load_source
from core.platform.devices import GET_A_GPU, available_devices, device_key, has_gpu, resolve_device
from core.errors import DashboardError
from core.classifier.loaders import load_uploads
from core.classifier.features import WEIGHTINGS
from core.classifier.training import predict, prepare, train
from pages.shared.device_wait import device_turn
from pages.shared.entry import through_app
from pages.shared.result_store import save_run

through_app()

D = ClassifierConfig()
UPLOAD, PATH = "upload", "path"
TICK_BATCHES = 20  # touch the page every N batches so that Stop takes effect within a few batches
state = st.session_state
state.setdefault("clf_runs", [])
state.clf_runs = interrupted(state.clf_runs)  # a run still 'running' at the top of the script was stopped

st.title("Review classifier")
st.caption("The lecture's network, `Linear(V, hidden) → ReLU → Linear(hidden, 1) → Sigmoid` with BCELoss and SGD, "
           "learns to tell positive from negative movie reviews. Only the device changes between runs.")

# ---- data
choices = {name: f"{name}: {ds.title}" for name, ds in BUILTIN_DATASETS.items()}
choices |= {UPLOAD: "upload a file", PATH: "a folder or file on this server"}
source = st.radio("Reviews", list(choices), format_func=choices.get, key="clf_source", horizontal=True)
uploads, path = [], ""
if source in BUILTIN_DATASETS:
    ds = BUILTIN_DATASETS[source]
    if is_cached(source):
        st.caption(f"{ds.title} ({ds.citation}) is in the cache.")
    elif st.button(f"Download {source} ({ds.approx_mb:g} MB)", key="clf_download", icon=":material/download:"):
        bar = st.progress(0.0, text=f"downloading {source}")
        try:
            fetch(source, progress=lambda done, total: bar.progress(min(1.0, done / total) if total else 0.0,
                                                                   text=f"{done / 2**20:.1f} MiB"))
            st.success(f"{source} downloaded and verified.")
        except DashboardError as exc:
            st.error(str(exc))
    else:
        st.caption(f"Not downloaded yet ({ds.approx_mb:g} MB from {ds.url}); Train downloads it too.")
elif source == UPLOAD:
    uploads = st.file_uploader("A CSV/TSV with a text and a label column (0/1, neg/pos, negative/positive, false/true), "
                               "a .tar.gz of rt-polarity or aclImdb, or rt-polarity.pos + rt-polarity.neg",
                               accept_multiple_files=True, key="clf_upload") or []
else:
    path = st.text_input("Path", key="clf_path", placeholder="/data/rt-polaritydata, aclImdb/, reviews.csv")

# ---- settings
with st.expander("Vectorizer and model settings", expanded=False):
    c1, c2, c3, c4 = st.columns(4)
    weighting = c1.selectbox("Weighting", list(WEIGHTINGS), format_func=WEIGHTINGS.get, key="clf_weighting",
                             help="NB-weighted: binary word and pair features scaled by how strongly each one "
                                  "leans positive or negative in the training reviews (best accuracy here)")
    ngrams = c1.radio("n-grams", [1, 2], index=D.ngrams - 1, key="clf_ngrams", horizontal=True,
                      format_func=lambda n: "words" if n == 1 else "words + pairs")
    max_features = c1.number_input("Vocabulary cap (0: none)", 0, 5_000_000, D.max_features or 0, key="clf_maxf")
    hidden = c2.number_input("Hidden units", 1, 4096, D.hidden, key="clf_hidden")
    epochs = c2.number_input("Epochs", 1, 500, D.epochs, key="clf_epochs")
    batch = c2.number_input("Batch size", 1, 65536, D.batch_size, key="clf_batch")
    lr = c3.number_input("Learning rate", 1e-6, 100.0, D.lr, format="%.4f", key="clf_lr")
    momentum = c3.number_input("Momentum", 0.0, 0.999, D.momentum, key="clf_momentum")
    decay = c3.number_input("Weight decay", 0.0, 1.0, D.weight_decay, format="%.5f", key="clf_decay")
    seed = c4.number_input("Seed", 0, 2**31 - 1, D.seed, key="clf_seed")
    val_share = c4.number_input("Validation share (0: keep the last epoch)", 0.0, 0.5, D.val_fraction,
                                key="clf_val", help="training reviews held back to choose the kept epoch")
    every = c4.number_input("Also report every N batches (0: per epoch)", 0, 100_000, 0, key="clf_every")
    input_mode = c1.selectbox("Input path", list(INPUT_MODES), format_func=INPUT_MODES.get, key="clf_input",
                              help="sparse sums the weights of the words present; dense builds each batch as a "
                                   "full (batch x vocabulary) matrix first: same numbers, more work")
devices = ["auto", *available_devices()] if has_gpu() else ["cpu"]
d1, d2 = st.columns(2)
device = d1.selectbox("Device", devices, key="clf_device")
d2.text_input("Name for the Results page (optional)", key="clf_label", max_chars=200, placeholder="e.g. Ana's laptop",
              help="finished runs are saved for the Results page under this name")
if not has_gpu():
    st.info("No GPU here, so runs use the CPU. With a GPU you could train the same run there and watch the two loss "
            "curves race by wall time below. " + GET_A_GPU, icon=":material/info:")

buttons = st.container(horizontal=True)
go = buttons.button("Train", type="primary", key="clf_train", icon=":material/play_arrow:")
race = buttons.button("Race CPU vs GPU", key="clf_race", icon=":material/sprint:", disabled=not has_gpu(),
                      help="the same run, same seed, on the CPU and then on the GPU; compare them by wall time below")
buttons.button("Stop", key="clf_stop", icon=":material/stop:", help="stops within a few batches; results so far stay")
status, metrics_slot, loss_slot, acc_slot = st.empty(), st.empty(), st.empty(), st.empty()


def _reviews():
    """Load (or reuse) the chosen reviews; kept in the session so a second run reads nothing again."""
    if source == UPLOAD:
        key = ("upload", tuple((f.name, f.size, f.file_id) for f in uploads))
    else:
        key = ("source", source if source in BUILTIN_DATASETS else path)
    if state.get("clf_reviews_key") != key:
        with st.spinner("reading reviews"):
            bar = st.progress(0.0)
            state.clf_reviews = (load_uploads([(f.name, f.getvalue()) for f in uploads]) if source == UPLOAD else
                                 load_source(key[1], progress=lambda d, t: bar.progress(min(1.0, d / t) if t else 0.0)))
            bar.empty()
        state.clf_reviews_key = key
    return state.clf_reviews


def _run(features, baseline, config: ClassifierConfig, data: str) -> None:
    """One training run, drawn live; every report lands in the session first, so Stop loses nothing."""
    state.clf_runs.append(RunRecord(len(state.clf_runs) + 1, data, config, config.device, baseline=baseline))
    slot = len(state.clf_runs) - 1
    line = [f"{features.n_train} training, {features.n_val} validation, {features.n_test} test reviews, "
            f"{features.vocab_size:,} terms: training on {config.device}…"]
    status.info(line[0])
    ticks = [0]

    def on_progress(report):
        state.clf_runs[slot] = rec = state.clf_runs[slot].with_report(report)
        loss_slot.plotly_chart(loss_curves(rec.reports, baseline_loss=baseline.test_loss, epochs=config.epochs),
                               key=f"clf_live_{rec.number}_{len(rec.reports)}")
        line[0] = (f"{rec.label}, epoch {report.epoch}/{config.epochs}: train loss {report.train_loss:.4f}, "
                   f"test accuracy {report.test.accuracy:.3f}, {report.seconds:.2f} s")
        status.info(line[0])

    def tick():  # any page update lets a Stop click end the run here, between batches
        ticks[0] += 1
        if ticks[0] % TICK_BATCHES == 0:
            status.info(f"{line[0]} · {ticks[0]} batches")
        return False

    with device_turn([device_key(resolve_device(config.device))], key="clf", label="training run"):
        result = train(features, config, on_progress=on_progress, should_stop=tick)
    state.clf_runs[slot] = state.clf_runs[slot].finished(result)
    state.clf_model = (state.clf_runs[slot].label, result)
    if result.epochs and not result.stopped:  # a stopped run stays in the history, not on the shared board
        save_run("train", result.to_json(baseline.accuracy), asdict(config), label=state.clf_label.strip())


if go or race:
    try:
        config = ClassifierConfig(weighting=weighting, ngrams=ngrams, max_features=max_features or None, hidden=hidden,
                                  lr=lr, momentum=momentum, weight_decay=decay, batch_size=batch, epochs=epochs,
                                  seed=seed, device=device, report_every=every, val_fraction=val_share,
                                  input_mode=input_mode)
        reviews = _reviews()
        prep_key = (state.clf_reviews_key, config.weighting, config.ngrams, config.max_features, config.seed,
                    config.val_fraction)
        if state.get("clf_prep_key") != prep_key:
            with device_turn(["cpu"], key="clf_prep", label="building features"), \
                    st.spinner("building the document-term matrix and the LogisticRegression baseline"):
                state.clf_prep = prepare(reviews, config)
            state.clf_prep_key = prep_key
        for target in (["cpu", available_devices()[0]] if race else [device]):  # a race: same seed, CPU then GPU
            _run(*state.clf_prep, replace(config, device=target), reviews.source)
        status.empty()
    except DashboardError as exc:
        status.error(str(exc))

# ---- the latest run (from the session, so it survives reruns and Stop)
runs = state.clf_runs
if runs:
    last = runs[-1]
    kept, base = last.kept, last.baseline
    with metrics_slot.container():
        m1, m2, m3, m4 = st.columns(4)
        m1.metric("Test accuracy (kept epoch)", "—" if kept is None else f"{kept.test.accuracy:.1%}",
                  None if kept is None or base is None else f"{kept.test.accuracy - base.accuracy:+.1%} vs baseline")
        m2.metric("Baseline accuracy", "—" if base is None else f"{base.accuracy:.1%}",
                  help="scikit-learn LogisticRegression on the same features and the same split")
        m3.metric("Seconds per epoch", "—" if last.seconds_per_epoch is None else f"{last.seconds_per_epoch:.3f}",
                  help="median over the completed epochs, device-synchronized, evaluation excluded")
        m4.metric("Epochs done", f"{len(last.epochs)} / {last.config.epochs}", f"{last.status} on {last.device}",
                  delta_color="off", delta_arrow="off")
    loss_slot.plotly_chart(loss_curves(last.reports, baseline_loss=base and base.test_loss,
                                       epochs=last.config.epochs if last.status == DONE else None), key="clf_loss")
    acc_slot.plotly_chart(accuracy_curve(last.epochs, baseline_accuracy=base and base.accuracy,
                                         best_epoch=last.best_epoch), key="clf_acc")

# ---- try your own review
st.subheader("Try your own review")
if "clf_model" not in state:
    st.caption("Train a run first; its kept epoch then scores your text.")
else:
    label, model = state.clf_model
    text = st.text_area("Your review", key="clf_review", placeholder="a moving, beautifully acted film")
    if st.button("How positive is it?", key="clf_predict") and text.strip():
        st.metric(f"p(positive), {label}", f"{predict(model, [text])[0]:.1%}")

# ---- run history
if runs:
    st.subheader("Run history")
    h1, h2 = st.columns(2)
    by = h1.radio("x axis", ["seconds", "epoch"], key="clf_by", horizontal=True,
                  format_func=lambda b: "wall time (the race)" if b == "seconds" else "epoch")
    metric = h2.selectbox("Show", list(METRICS), format_func=METRICS.get, key="clf_metric")
    st.plotly_chart(overlay(runs, by=by, metric=metric), key="clf_overlay")
    st.dataframe(table_rows(runs), hide_index=True, key="clf_table")
    if st.button("Clear history", key="clf_clear"):
        state.clf_runs = []
        st.rerun()
