"""Train the lecture's classifier on one device, reporting as it goes, stoppable between batches.

Only the device changes between a CPU run and a GPU run: the same seed gives the same initial
weights (built on the CPU, then moved) and the same batch order (shuffled by a seeded CPU
generator), so two runs differ only in where the arithmetic happens. The loop itself is
core.classifier.fit's; this module holds the device for it and picks the batch plan: mini-batches
cut from the sparse matrix, or the lecture preset's dense full batch (core.classifier.fullbatch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import torch

from core.classifier.baseline import (
    PREPARE_STEPS, BaselineResult, baseline_step, features_and_baseline, logistic_regression,
)
from core.classifier.features import BUILD_STEPS, Features, StepReport, build_features
from core.classifier.fit import EVAL_BATCH, Fitted, MiniBatches, Plan, fit
from core.classifier.fullbatch import FullBatch, check_dense_fits, dense_size, full_batch_plan, warm_up
from core.classifier.loaders import Reviews
from core.classifier.model import (
    ClassifierConfig, build_model, check_model_fits, forward, make_batch, resolve_input_mode,
)
from core.classifier.reports import DeviceComparison, TrainResult, compare, run_record
from core.errors import DashboardError
from core.platform.devices import device_key, resolve_device
from core.platform.jobs import JobHooks, Progress, RunningJob, run_job
from core.platform.machine_load import default_threads
from core.platform.quiet_work import Listeners, run_quietly
from core.platform.timing import torch_threads

def feature_settings(config: ClassifierConfig) -> dict[str, Any]:
    """What `build_features` takes from a config, as plain values (they travel to a quiet child process)."""
    return dict(weighting=config.weighting, ngrams=config.ngrams, max_features=config.max_features,
                test_size=config.test_size, val_fraction=config.val_fraction, seed=config.seed)


def features_for(reviews: Reviews, config: ClassifierConfig, progress: StepReport | None = None) -> Features:
    """The split and the document-term matrices this config asks for (`progress`: build_features')."""
    return build_features(reviews, **feature_settings(config), progress=progress)


QUIET_BUILD_CHARS = 200_000  # reviews of this much text and more are prepared as quiet work by a server (rt-polarity:
# 1.2 M characters, ~2 s; a spawned process costs ~1-2 s of CPU more, which a 60-review upload need not pay)


def prepare(reviews: Reviews, config: ClassifierConfig,
            hooks: JobHooks | None = None) -> tuple[Features, BaselineResult]:
    """The document-term matrices and the LogisticRegression baseline, built while holding the CPU.

    Nothing here is timed, but it keeps both cores busy for seconds, which would skew a
    classmate's CPU sweep running at the same moment. Two steps, each one library call that cannot
    be interrupted: a Stop or the per-job cap takes effect between them (JobCancelled/JobTimedOut),
    and a step that overruns the cap by the lock's grace period loses the CPU to the next job.
    What a server's sessions call is `prepare_quietly`.
    """
    with run_job(["cpu"], hooks, label="building features") as job:
        def step(done: int, _steps: int, message: str) -> None:  # between library calls: a Stop ends it here
            job.check()
            job.report(Progress(done, PREPARE_STEPS, message))

        features = features_for(reviews, config, step)
        step(BUILD_STEPS, PREPARE_STEPS, baseline_step(features))
        return features, logistic_regression(features)


QUIET_BUILD_CHARS = 200_000  # from this much text a server prepares as quiet work (rt-polarity: 1.2 M characters)


def prepare_quietly(reviews: Reviews, config: ClassifierConfig,
                    hooks: JobHooks | None = None) -> tuple[Features, BaselineResult]:
    """`prepare` as a server does it for its sessions: from QUIET_BUILD_CHARS of text on, as quiet work
    (core.platform.quiet_work), smaller sets (a 60-review upload: milliseconds, less than a process's start)
    as `prepare` does.

    Quiet: a process of its own, stopped while any timed job of any session or process holds
    or waits for a device, so a race never waits in line behind a build (as it did behind `prepare`'s hold on
    the CPU) and never runs beside one. Its steps, and its pauses, reach `hooks.on_progress`;
    `hooks.should_stop` ends it at once (JobCancelled). The price, on rt-polarity's size with the default
    settings on the loaded 2-core VM: the child's imports (~1.4 s of CPU) and the result's way back (a 5.5 MiB
    pickle, ~0.2 s each way) over a build of ~1.3 s of CPU (docs/classifier.md).
    """
    if sum(map(len, reviews.texts)) < QUIET_BUILD_CHARS:
        return prepare(reviews, config, hooks)
    return _prepare_quietly(reviews, config, hooks or JobHooks())


def _prepare_quietly(reviews: Reviews, config: ClassifierConfig,
                     hooks: JobHooks) -> tuple[Features, BaselineResult]:
    shown = Progress[Any](0, PREPARE_STEPS,
                          "document-term matrix: starting a process of its own (paused while a race runs)")

    def tell(step: Progress[Any]) -> None:
        if hooks.on_progress is not None:
            hooks.on_progress(step)

    def step(done: int, total: int, message: str) -> None:
        nonlocal shown
        shown = Progress(done, total, message)
        tell(shown)

    def paused(now: bool) -> None:
        tell(replace(shown, message=f"{shown.message} · paused while a race or run holds a device") if now else shown)

    tell(shown)
    return run_quietly(features_and_baseline, reviews, feature_settings(config), what="building the features",
                       listeners=Listeners(on_step=step, on_pause=paused, should_stop=hooks.should_stop))


def train(features: Features, config: ClassifierConfig, hooks: JobHooks | None = None) -> TrainResult:
    """Train on `config.device` while holding it; returns the kept epoch's weights.

    `hooks.on_progress` gets a Progress (item: a TrainEpoch) after every epoch and every
    `report_every` batches; `hooks.should_stop` is asked before every batch (a page can redraw
    there, which is what lets a Stop click end the run between batches); the per-job cap ends a
    run like Stop does. A stopped run keeps its finished epochs, marked stopped.
    """
    device = resolve_device(config.device)
    if features.n_train == 0:
        raise DashboardError("no training reviews; add reviews or lower the test share")
    lecture = config.preset == "lecture"  # the whole dense matrix on the device, full-batch steps
    if lecture:
        check_dense_fits(dense_size(features, config.hidden), device)
    else:
        check_model_fits(features.vocab_size, config.hidden, device)
    label = "training run (lecture preset)" if lecture else "training run"
    with run_job([device_key(device)], hooks, label=label, measure_load=True) as job:
        with torch_threads(default_threads(config.threads, job.load)) as threads:
            # the thread count decides the CPU's seconds per epoch (1 or 2 free cores on a shared machine): say it
            job.report(Progress(0, 0, f"training on {device_key(device)} with {threads} CPU "
                                      f"thread{'s' if threads != 1 else ''}"))
            result = _train_locked(features, config, device, job)
        return replace(result, run=replace(result.run, load=job.load), threads=threads)


def _train_locked(features: Features, config: ClassifierConfig, device: torch.device, job: RunningJob) -> TrainResult:
    """Build the plan and the network on `device` (held by the caller), then run the one loop."""
    lecture = config.preset == "lecture"
    mode = "dense" if lecture else resolve_input_mode(config.input_mode, device)
    plan: Plan = (full_batch_plan(features, config, device, job) if lecture
                  else MiniBatches(features, config, device, mode))
    model = build_model(features.vocab_size, config.hidden, config.seed).to(device)
    if isinstance(plan, FullBatch):
        warm_up(model, plan)  # cuBLAS's set-up outside the first update's time
    fitted = fit(partial(forward, model), model, plan, job, config, word="update" if lecture else "epoch")
    return _result(fitted, features, config, device, mode)


def _result(fitted: Fitted, features: Features, config: ClassifierConfig, device: torch.device,
            mode: str) -> TrainResult:
    dense_mb = dense_size(features, config.hidden).matrix_mb if config.preset == "lecture" else None
    run = run_record(features, config, device_key(device), fitted.epochs, fitted.best_epoch, stopped=fitted.stopped,
                     dense_matrix_mb=dense_mb)
    return TrainResult(run, config, mode, fitted.best_epoch, fitted.kept, features.vectorizer, features.n_val)


def predict(result: TrainResult, texts: Sequence[str]) -> np.ndarray:
    """p(positive) for new reviews, with the kept epoch's weights, on the CPU."""
    texts = list(texts)
    if not texts:
        return np.zeros(0, dtype=np.float32)
    x = result.vectorizer.transform(texts)
    cpu = torch.device("cpu")
    out = []
    with torch.no_grad():
        for start in range(0, x.shape[0], EVAL_BATCH):
            out.append(forward(result.model, make_batch(x[start:start + EVAL_BATCH], "sparse").to(cpu)).numpy())
    return np.concatenate(out)


LOSS_TOLERANCE = 1e-3  # float32 sums in a different order on a GPU: differences ~1e-6, not ~1e-3


def compare_devices_same_seed(
    features: Features, config: ClassifierConfig, devices: tuple[str, str] = ("cpu", "cuda"), *, epochs: int = 2,
    hooks: JobHooks | None = None,
) -> DeviceComparison:
    """Train `epochs` epochs from the same seed on each of two devices and line up the losses.

    For the GPU self-check: a CUDA run must follow the CPU run's losses closely; a large gap means
    a broken device, driver or kernel, not a different model.
    """
    runs = []
    for name in devices:
        cfg = ClassifierConfig(**{**config.to_dict(), "device": name, "epochs": epochs, "report_every": 0})
        runs.append(train(features, cfg, hooks))
    return compare(runs[0], runs[1])
