"""The review classifier's defaults, measured: accuracy against simple baselines, speed, memory.

Part 1 (rt-polarity, when ../shared/data/rt-polaritydata or --data is there): the default config on
the CPU, on the fixed stratified 80/20 split (seed 0), against MultinomialNB on binary 1-2-gram counts
and LogisticRegression (C=10) on TF-IDF 1-2-grams fitted on the same 80% and scored on the same 20%,
and against LogisticRegression on the network's own features and rows. Target: the network's test
accuracy (at the epoch the validation rows chose) at least the best reference baseline; training
under 30 s. Also seconds per epoch, reviews per second and peak RSS.
Part 2: the two input paths on the same data and seed, one epoch each in turn, five rounds: sparse
(the Linear's weight columns of the words present) against densifying each batch; seconds per epoch (minimum and
median), their ratio, the bytes of one batch.
Part 4 (rt-polarity): 10-fold cross-validation, the protocol of the published table (Wang & Manning
2012, Kim 2014): the network's default preset, MNB-bi and NBSVM-bi (core.classifier.crossval), each
fitted on nine folds and scored on the tenth, nothing tuned on a test fold (the defaults were chosen on
validation folds of the fixed split's training 80%: VALIDATION below), beside the published figures
(MNB-bi 79.0, NBSVM-bi 79.4, CNN-non-static 81.5). Target (issue 19): the network at least 79.5: 79.78 with
the naive-Bayes log-odds added to the kept network's logit (nb_logit 0.3, chosen on inner validation folds and
looked at once on the 10 folds; 78.90 without it; see VALIDATION_INNER10 and ROUND3). Also the lecture preset's
seconds per full-batch update on the fixed split.
Part 3 (a child process, so its peak RSS is its own): a synthetic IMDB-scale run, 50,000 documents x
50,000-term vocabulary with ~230 non-zeros per row, one epoch. Target: peak RSS under 2 GB, where the
dense float32 matrix alone would be 10 GB.

    python bench/classifier.py [--data PATH] [--epochs N] [--skip-synthetic] [--folds N | --skip-cv]

Prints a table and writes JSON to bench/results/classifier.json. The machine may be shared: the
load average is recorded with the figures, and ratios come from runs taken in turn in one process.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from core.classifier.baseline import BaselineResult, reference_baselines  # noqa: E402
from core.classifier.crossval import PUBLISHED, cross_validate, default_scorers  # noqa: E402
from core.classifier.model import ClassifierConfig, nb_logit_weight, preset_config  # noqa: E402
from core.classifier.reports import TrainResult  # noqa: E402
from core.results.train import TrainEpoch  # noqa: E402
from core.platform.jobs import JobHooks, Progress  # noqa: E402
from core.cli.output import format_table  # noqa: E402
from core.classifier.loaders import load_path  # noqa: E402
from core.classifier.features import Features, split_rows, synthetic_features  # noqa: E402
from core.classifier.training import features_for, prepare, train  # noqa: E402

RT_POLARITY = ROOT.parent / "shared" / "data" / "rt-polaritydata"
RESULTS = ROOT / "bench" / "results"
TRAIN_TARGET_S = 30.0  # the issue: rt-polarity trains in under 30 s on a 2-core CPU
RSS_TARGET_BYTES = 2 * 10**9  # 2 GB for the IMDB-scale synthetic run
SYNTH_DOCS, SYNTH_VOCAB, SYNTH_NNZ = 50_000, 50_000, 230  # IMDB: 50k reviews, ~230 distinct terms each
MODE_ROUNDS = 5  # one epoch per input path per round, in turn; the machine may be shared, so the minimum
#   over rounds estimates each path's own cost, and the median shows what a user would see

# How today's defaults were chosen (issue 19, item 7), before any 10-fold run with them: validation only.
# Rows: the fixed split's training 80% (8,529 reviews; its test 20% and the 10 folds untouched), cut into
# 5 stratified folds (seed 1); each candidate trained on 4 and scored on the 5th, the same loop and seed as
# the network's, mean accuracy over the first 3 such folds (5 where named) after every epoch. Changes are
# from the old defaults (nb weighting, hidden 16, SGD lr 0.03, momentum 0.9, weight decay 1e-3, batch 64,
# 10 epochs, last kept). Chosen then: nbchars, everything else as it was (10 epochs, the last kept).
VALIDATION = (  # (candidate, validation accuracy at epoch 10, best over the epochs run @ epoch)
    ("old defaults (nb weighting)", 0.7737, "0.7755 @ 6"),
    ("old defaults, all 5 folds", 0.7816, "0.7822 @ 6"),
    ("input dropout 0.3 (non-zeros dropped, rest scaled)", 0.7765, "0.7776 @ 8"),
    ("input dropout 0.5", 0.7694, "0.7726 @ 6"),
    ("weight decay 3e-3", 0.7737, "0.7757 @ 6"),
    ("weight decay 3e-4", 0.7749, "0.7751 @ 6"),
    ("NB smoothing alpha 0.5", 0.7767, "0.7775 @ 9"),
    ("batch 256", 0.7612, "0.7759 @ 20"),
    ("batch 256, lr 0.1", 0.7724, "0.7776 @ 7"),
    ("lr 0.01", 0.7720, "0.7780 @ 18"),
    ("hidden 64, input dropout 0.3", 0.7755, "0.7776 @ 8"),
    ("nbchars: + letter groups of 2-4 (chosen, then dropped)", 0.7855, "0.7864 @ 6"),
    ("nbchars, all 5 folds", 0.7872, "0.7878 @ 7"),
    ("nbchars, batch 256, lr 0.1", 0.7833, "0.7862 @ 9"),
    ("nbchars, input dropout 0.3", 0.7767, "0.7816 @ 2"),
    ("nb + letter groups of 3-5", 0.7829, "0.7835 @ 12"),
)
# Linear models on the same 5 validation folds picked the features to try (accuracy, mean of 5):
# LogisticRegression C=1 on nb 1-2-grams 0.7802, on nb 1-3-grams 0.7807, nb 1-grams 0.7716, nb with
# alpha 0.5 0.7820; on nbchars (2-4) 0.7895, nb + letters 3-5 0.7868. NBSVM (C=1, beta 0.25): nb 0.7773,
# nbchars 0.7899.
# The 10-fold protocol was then run ONCE with nbchars as the default (load 5-6): the network 78.92 (stdev
# 0.91; the nb defaults had 78.93), NBSVM on the same nbchars features 79.37 (NBSVM-bi 79.35, MNB-bi 78.80);
# the fixed split's test accuracy 0.7820 (nb: 0.7825); an epoch ~1.7 s against ~0.9 s taken in turn (load
# 3.5), features 7.6 s against 1.4 s. The validation gain did not carry to the folds, for the linear model
# either, so the default went back to nb; no other candidate has been run on the 10 folds.

# Second round (helper ACCURACY2), on the advice above: inner 10 folds of the same 8,529 training rows
# (StratifiedKFold seed 1, 7.7k rows to train, closer to the outer folds' 9.6k), every fold, the default
# loop and seed; figures are mean validation accuracy. One run records, after every epoch, the weights'
# own accuracy and that of the mean of the epoch-end weights over every window of epochs (fit.EpochAverage),
# so the windows are not separate runs: the chosen rule is a fixed one (the second half, epochs 5-10),
# not the best window of the table (3-12, 0.7913). Chosen then: average_from 5, all else as it was.
VALIDATION_INNER10 = (  # (candidate, the epoch's own weights at epoch 10, mean of epochs 5-10's weights)
    ("defaults before (nb, lr 0.03, wd 1e-3, 10 epochs, last kept)", 0.7874, 0.7904),
    ("  the same run at epoch 12 / 14 (mean of 6-12 / 7-14)", "0.7888 / 0.7871", "0.7899 / 0.7901"),
    ("  Polyak: the mean of every step's weights from epoch 3", 0.7885, None),
    ("cosine learning-rate decay to 0 over 10 epochs", 0.7877, 0.7865),
    ("weight decay 3e-3 (12 epochs)", 0.7867, "best window 4-11 0.7901"),
    ("two hidden units start as naive Bayes (x 0.5; flat at 0.787 from epoch 1)", 0.7874, 0.7871),
    ("the network's logit + 0.3 x NB log-odds (NBSVM's interpolation, after training)", 0.7907, 0.7920),
    ("label smoothing 0.1 (stopped after 2 folds: -1.2 and -0.7 points)", None, None),
    ("+ one input: out-of-fold NB log-odds (stopped after 4 folds: the first 0.633)", None, None),
)
# The interpolation with naive Bayes added 0.15 points over the average alone on these folds, within their
# noise, at the cost of two hidden units kept out of training and a post-hoc change of weights: not taken then
# (taken in the third round: VALIDATION_ROUND3).
# The 10-fold protocol was then run ONCE with average_from 5 (this file, load 1.9-4.6): the network 78.90
# (stdev 1.21; 78.93 without the average), NBSVM-bi 79.35, MNB-bi 78.80; the fixed split's test accuracy
# 0.7825 (the same as without), ~1.07 s an epoch. The +0.3 on inner folds did not carry to the outer folds
# (-0.03 there, 3 reviews of 10,662): the target of 79.5 is missed. The average stays the default, as the
# validation folds chose it and the fixed split is unchanged; no other candidate has seen the 10 folds.

# Third round (helper ACCURACY3, /tmp/acc3/exp3.py): the same inner 10 folds and loop (the defaults reproduce
# 0.7904 exactly), every run saving its validation logits, so ensembles and blends are scored without retraining.
# Figures: mean validation accuracy of the kept network (the mean of epochs 5-10's weights), seed 0 unless named.
VALIDATION_ROUND3 = (  # (candidate, mean validation accuracy over the inner 10 folds, note)
    ("defaults (nb, hidden 16, 10 epochs, mean of 5-10), seeds 0 / 1 / 2", "0.7904 / 0.7895 / 0.7892", None),
    ("mean logit of 2 / 3 seeds' networks (one network 32 / 48 wide)", "0.7897 / 0.7895", "no gain: dropped"),
    ("+ 0.3 x NB log-odds added to the logit after training, seeds 0 / 1 / 2 (chosen)", "0.7920 / 0.7911 / 0.7904",
     "+0.16 on seed 0; 5 folds up, 4 down"),
    ("  the same on the 3-seed ensemble (x 0.2 / 0.3)", "0.7914 / 0.7913", None),
    ("NB log-odds x 0.3 added during training too (the network learns the rest)", 0.7875, "-0.29"),
    ("1-3-grams, NB-weighted", 0.7884, "-0.20"),
    ("sublinear counts (1 + log tf) x NB ratio", 0.7890, "-0.14"),
    ("hidden 64, dropout 0.5 on the hidden layer", 0.7902, "-0.02, 4x the time"),
    ("MNB-bi / NBSVM-bi on the same folds", "0.7856 / 0.7847", "blends with them: at most 0.7921"),
    ("learning curve: 80% of each training fold (6.1k): network / MNB / NBSVM", "0.7756 / 0.7768 / 0.7745",
     "the network gains more from data"),
)
# Chosen: the NB log-odds added after training with weight 0.3 (the weight the second round's blend table picked
# on these folds; the rest changes nothing). Built into the model as two more hidden units, relu(s) and relu(-s)
# with s the sum of the NB-scaled inputs, weighed +0.3 and -0.3 by the output (model.with_nb_logit): the kept
# network keeps the lecture's shape, 18 hidden units of which 16 trained. The 10-fold protocol was then looked at
# ONCE with it (exp3's loop, /tmp/acc3/outer.py, load 3.0-4.8): 79.78 (stdev 0.88; 9 folds of 10 up), the
# defaults before 78.90 fold for fold as the bench had them; then the bench with the change in core (this file,
# its load in bench/results/classifier.json) gave the same folds. The gain on the outer folds (+0.88) is far above
# the inner folds' (+0.16): these comparisons are noisy at the scale of a few tenths, so the margin over 79.5 is
# small against that noise. The fixed split's test accuracy: 0.7872 (0.7825 without). Median seconds per epoch,
# 10-epoch runs taken in turn on one thread, (with, without) per round at load 3.7-5.5: (4.61, 1.24), (1.22,
# 1.25), (2.22, 2.73), the first including the process's warm-up: the load decides, a cost cannot be told (the
# copy with two more units is made once per report, outside the timed steps).


def peak_rss_bytes() -> int:
    """This process's peak resident set size.

    Linux's VmHWM belongs to the current memory map, so a child started by fork+exec reports only its
    own peak; ru_maxrss would carry over the parent's RSS at the fork (the fallback elsewhere).
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # macOS reports bytes, Linux KiB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


@dataclass
class FirstEpoch:
    """A run timed as after pressing Train on cached data: read, features, the baseline, then training."""

    latency_s: float  # from reading the files to the first epoch's report
    features_s: float  # reading and building the features (the baseline excluded)
    features: Features
    baseline: BaselineResult
    result: TrainResult


def first_epoch_after(path: Path, config: ClassifierConfig) -> FirstEpoch:
    start = time.perf_counter()
    features, baseline = prepare(load_path(path), config)  # the page's and the CLI's path
    features_s = time.perf_counter() - start - baseline.fit_seconds
    first: list[float] = []

    def heard(step: Progress[TrainEpoch]) -> None:
        if step.item is not None and not first:
            first.append(time.perf_counter() - start)

    result = train(features, config, JobHooks(on_progress=heard))
    return FirstEpoch(first[0], features_s, features, baseline, result)


def rt_polarity(path: Path, epochs: int | None) -> dict:
    config = ClassifierConfig(device="cpu") if epochs is None else ClassifierConfig(device="cpu", epochs=epochs)
    cold = first_epoch_after(path, config)
    # a server trains many times in one process: torch.optim's first optimizer imports torch._dynamo once
    warm = first_epoch_after(path, replace(config, epochs=1))
    features, lr_same, result = cold.features, cold.baseline, cold.result
    reviews = load_path(path)
    # the references see the whole 80% (train + validation rows), as the issue measured them
    split = split_rows(reviews, test_size=config.test_size, val_fraction=0.0, seed=config.seed)
    texts = np.array(reviews.texts, dtype=object)
    nb, lr_ref = reference_baselines(texts[split.train], reviews.labels[split.train], texts[split.test],
                                     reviews.labels[split.test])
    best_reference = max(nb.accuracy, lr_ref.accuracy)
    return {
        "config": config.to_dict(),
        "n_train": features.n_train, "n_val": features.n_val, "n_test": features.n_test,
        "vocab_size": features.vocab_size, "nnz_per_row": features.nnz_per_row,
        "features_seconds": cold.features_s, "baseline_fit_seconds": lr_same.fit_seconds,
        "first_epoch_latency_s": cold.latency_s, "first_epoch_latency_warm_s": warm.latency_s,
        "epochs": [{**e.to_json(), "val_loss": e.val_loss, "val_accuracy": e.val_accuracy}
                   for e in result.epochs],
        "kept_epoch": result.best_epoch,
        "kept_by": ("the mean of the epoch-end weights from epoch " + str(config.average_from)
                    if config.average_from and config.average_from <= config.epochs else
                    "lowest validation loss" if features.n_val else "last epoch (no validation rows)")
                   + (f", + {nb_logit_weight(config):g} x NB log-odds" if nb_logit_weight(config) else ""),
        "test_accuracy": result.test_accuracy,
        "train_seconds": result.train_seconds,
        "seconds_per_epoch": result.seconds_per_epoch,
        "samples_per_s": result.samples_per_s,
        "baselines": {
            "MultinomialNB, binary 1-2-gram counts (80%)": nb.accuracy,
            "LogisticRegression C=10, TF-IDF 1-2-grams (80%)": lr_ref.accuracy,
            f"LogisticRegression, the network's features ({features.weighting}, same rows)": lr_same.accuracy,
        },
        "best_reference_accuracy": best_reference,
        "meets_accuracy_target": result.test_accuracy >= best_reference,
        "meets_time_target": result.train_seconds < TRAIN_TARGET_S,
        "peak_rss_bytes": peak_rss_bytes(),
        "_features": features,
    }


def input_modes(features: Features, rounds: int = MODE_ROUNDS) -> dict:
    """Sparse and dense input on the same data and seed, one epoch each, in turns."""
    secs: dict[str, list[float]] = {"sparse": [], "dense": []}
    losses: dict[str, list[float]] = {}
    for _ in range(rounds):
        for mode in secs:
            cfg = ClassifierConfig(device="cpu", epochs=1, input_mode=mode, val_fraction=0.0)
            result = train(replace(features, x_val=features.x_val[:0], y_val=features.y_val[:0]), cfg)
            secs[mode] += [e.seconds for e in result.epochs]
            losses[mode] = [e.train_loss for e in result.epochs]
    best = {mode: min(v) for mode, v in secs.items()}
    median = {mode: float(np.median(v)) for mode, v in secs.items()}
    batch = ClassifierConfig().batch_size
    return {
        "seconds_per_epoch": best,
        "seconds_per_epoch_median": median,
        "all_seconds": secs,
        "dense_over_sparse": best["dense"] / best["sparse"],
        "dense_over_sparse_median": median["dense"] / median["sparse"],
        "same_losses": bool(np.allclose(losses["sparse"], losses["dense"], atol=1e-4)),
        "dense_batch_bytes": batch * features.vocab_size * 4,
        # int64 ids + float32 values + offsets
        "sparse_batch_bytes": int(batch * features.nnz_per_row * (8 + 4)) + batch * 8,
    }


def lecture_preset(path: Path) -> dict:
    """The lecture preset on the fixed split, on the CPU: its dense matrix, seconds per update, accuracy."""
    config = preset_config("lecture", device="cpu")
    features = features_for(load_path(path), config)
    result = train(features, config)
    return {"config": config.to_dict(), "vocab_size": features.vocab_size, "dense_matrix_mb": result.dense_mb,
            "seconds_per_update": result.seconds_per_epoch, "train_losses": [e.train_loss for e in result.epochs],
            "test_accuracy": result.test_accuracy}


def ten_fold(path: Path, folds: int) -> dict:
    """Part 4: every model on every fold, in turn, with the published figures beside them."""
    def heard(name: str, fold: int, accuracy: float) -> None:
        print(f"  {name}: fold {fold}/{folds} {accuracy:.4f}", file=sys.stderr, flush=True)

    cv = cross_validate(load_path(path), default_scorers(ClassifierConfig(device="cpu")), folds=folds, on_fold=heard)
    return {"folds": folds, "seed": cv.seed, "n_reviews": cv.n_reviews, "published": PUBLISHED,
            "models": [{"name": m.name, "accuracies": m.accuracies, "mean": m.mean, "stdev": m.stdev,
                        "seconds": m.seconds} for m in cv.models],
            "table": cv.table()}


def synthetic_child() -> dict:
    """Runs in its own process: an IMDB-sized sparse matrix, one epoch of the default network."""
    features = synthetic_features(SYNTH_DOCS, SYNTH_VOCAB, SYNTH_NNZ)
    x = sp.vstack([features.x_train, features.x_test])
    result = train(features, ClassifierConfig(device="cpu", epochs=1, val_fraction=0.0))
    return {
        "n_docs": x.shape[0], "vocab_size": x.shape[1], "nnz": int(x.nnz), "nnz_per_row": x.nnz / x.shape[0],
        "sparse_matrix_bytes": int(x.data.nbytes + x.indices.nbytes + x.indptr.nbytes),
        "dense_matrix_bytes": x.shape[0] * x.shape[1] * 4,
        "test_accuracy": result.test_accuracy,
        "seconds_per_epoch": result.seconds_per_epoch,
        "samples_per_s": result.samples_per_s,
        "peak_rss_bytes": peak_rss_bytes(),
    }


def synthetic() -> dict:
    proc = subprocess.run([sys.executable, __file__, "--synthetic-child"], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"synthetic run failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["meets_rss_target"] = out["peak_rss_bytes"] < RSS_TARGET_BYTES
    return out


def render(report: dict) -> str:
    lines = [f"load average at start {report['load_average'][0]:.2f} (2-core machine, may be shared)", "",
             "how the defaults were chosen: inner validation folds of the fixed split's training 80% only "
             "(VALIDATION in this file), mean accuracy:",
             format_table(["candidate", "at epoch 10", "best @ epoch"], [list(row) for row in VALIDATION]), "",
             "second round: inner 10 folds of the same training rows, mean validation accuracy "
             "(VALIDATION_INNER10):",
             format_table(["candidate", "epoch 10's weights", "mean of epochs 5-10"],
                          [list(row) for row in VALIDATION_INNER10]), "",
             "third round: the same inner 10 folds, mean validation accuracy (VALIDATION_ROUND3):",
             format_table(["candidate", "validation accuracy", "note"], [list(row) for row in VALIDATION_ROUND3]), ""]
    rt = report.get("rt_polarity")
    if rt:
        rows = [[f"network (defaults), kept: {rt['kept_by']} (epoch {rt['kept_epoch']})", rt["test_accuracy"]]]
        rows += [[name, acc] for name, acc in rt["baselines"].items()]
        lines += [f"rt-polarity: {rt['n_train']} train / {rt['n_val']} validation / {rt['n_test']} test reviews, "
                  f"{rt['vocab_size']:,} terms", format_table(["model", "test accuracy"], rows), ""]
        lines += [format_table(
            ["train s", "s / epoch", "reviews / s", "peak RSS MB", "acc >= best ref", "train < 30 s"],
            [[rt["train_seconds"], rt["seconds_per_epoch"], rt["samples_per_s"], rt["peak_rss_bytes"] / 1e6,
              "yes" if rt["meets_accuracy_target"] else "NO", "yes" if rt["meets_time_target"] else "NO"]]),
            f"first epoch reported {rt['first_epoch_latency_s']:.2f} s after reading the files began, as after "
            f"pressing Train on cached data (reading and features {rt['features_seconds']:.2f} s of it, the "
            f"LogisticRegression baseline {rt['baseline_fit_seconds']:.2f} s, torch.optim's one-time import of "
            f"torch._dynamo the rest beyond the epoch); {rt['first_epoch_latency_warm_s']:.2f} s the second time in "
            "the same process, as on a server that has trained before", ""]
    lecture = report.get("lecture_preset")
    if lecture:
        lines += [f"lecture preset (CPU): dense matrix {lecture['dense_matrix_mb']:.0f} MB, "
                  f"{lecture['seconds_per_update']:.3f} s per full-batch update (median of 10), train loss "
                  f"{lecture['train_losses'][0]:.3f} -> {lecture['train_losses'][-1]:.3f}, test accuracy "
                  f"{lecture['test_accuracy']:.4f}", ""]
    cv = report.get("ten_fold")
    if cv:
        lines += [f"rt-polarity, {cv['folds']}-fold cross-validation (stratified, seed {cv['seed']}), accuracy in %:",
                  format_table(["model", "mean", "stdev", "seconds"], cv["table"]), ""]
    modes = report.get("input_modes")
    if modes:
        s = modes["seconds_per_epoch"]
        m = modes["seconds_per_epoch_median"]
        lines += [format_table(
            ["input path", "min s / epoch", "median s / epoch", "one batch MB"],
            [["sparse (words present)", s["sparse"], m["sparse"], modes["sparse_batch_bytes"] / 1e6],
             ["dense per batch", s["dense"], m["dense"], modes["dense_batch_bytes"] / 1e6]]),
            f"dense / sparse = {modes['dense_over_sparse']:.2f}x by the minimum, "
            f"{modes['dense_over_sparse_median']:.2f}x by the median, over {MODE_ROUNDS} epochs each taken in turn; "
            f"same losses: {modes['same_losses']}", ""]
    syn = report.get("synthetic")
    if syn:
        lines += [format_table(
            ["synthetic", "nnz / row", "sparse MB", "dense would be MB", "s / epoch", "peak RSS MB", "< 2 GB"],
            [[f"{syn['n_docs']:,} x {syn['vocab_size']:,}", syn["nnz_per_row"], syn["sparse_matrix_bytes"] / 1e6,
              syn["dense_matrix_bytes"] / 1e6, syn["seconds_per_epoch"], syn["peak_rss_bytes"] / 1e6,
              "yes" if syn["meets_rss_target"] else "NO"]])]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=RT_POLARITY, help="rt-polarity folder (default: ../shared/...)")
    parser.add_argument("--epochs", type=int, default=None, help="override the default number of epochs")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--folds", type=int, default=10, help="folds of the cross-validation (default 10)")
    parser.add_argument("--skip-cv", action="store_true", help="skip part 4, the cross-validation (minutes)")
    parser.add_argument("--synthetic-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.synthetic_child:
        print(json.dumps(synthetic_child()))
        return 0
    report: dict = {"load_average": os.getloadavg(), "cpu_count": os.cpu_count()}
    if (args.data / "rt-polarity.pos").exists():
        rt = rt_polarity(args.data, args.epochs)
        features = rt.pop("_features")
        report["rt_polarity"] = rt
        report["input_modes"] = input_modes(features)
        report["lecture_preset"] = lecture_preset(args.data)
        if not args.skip_cv:
            report["ten_fold"] = ten_fold(args.data, args.folds)
    else:
        print(f"rt-polarity not found at {args.data}; skipping parts 1, 2 and 4", file=sys.stderr)
    if not args.skip_synthetic:
        report["synthetic"] = synthetic()
    print(render(report))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "classifier.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
