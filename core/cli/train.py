"""`python -m core train --data PATH_OR_NAME ...`: train the review classifier without a browser."""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from core.cli import HELP
from core.classifier.model import PRESETS, ClassifierConfig, preset_config
from core.cli.output import TABLE_WIDTH, format_table, print_json, wrap
from core.cli.results import add_save_options, check_save_options, save_if_requested
from core.cli.waiting import cli_hooks
from core.classifier.datasets import BUILTIN_DATASETS, load_source
from core.platform.devices import resolve_device
from core.errors import DashboardError
from core.classifier.loaders import decode_text
from core.classifier.reports import TrainResult, kept_words
from core.classifier.runs import overfitting_note
from core.classifier.training import predict, prepare, train
from core.classifier.workers import check_workers, train_with_workers
from core.platform.jobs import Progress
from core.platform.units import byte_size, number, percent, seconds
from core.results.jsonio import to_jsonable
from core.classifier.guess import compare_guess
from core.results.guess import TRAIN_EXAMPLE, Guess, parse_train_guess
from core.results.train import Prediction, TrainEpoch, TrainRun

DEFAULTS = ClassifierConfig()


DEFAULT_DATA = "rt-polarity"  # the lecture's data set: small (0.5 MB), so a first run needs no choice


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help=HELP["train"])
    p.add_argument("--data", default=DEFAULT_DATA, metavar="PATH_OR_NAME",
                   help=f"{' or '.join(BUILTIN_DATASETS)} (downloaded on first use, or put there by `data add`), "
                        f"a folder, a .tar.gz or a CSV/TSV (default: {DEFAULT_DATA})")
    p.add_argument("--preset", choices=list(PRESETS), default="minibatch",
                   help="minibatch (default: sparse input, batches of 64) or lecture (the whole dense matrix on the "
                        "device, 10 full-batch updates, vocabulary capped at 10,000)")
    p.add_argument("--device", default=DEFAULTS.device, help="auto|cpu|cuda|cuda:N|mps (default auto)")
    p.add_argument("--epochs", type=int, help=f"epochs, or updates for the lecture preset (default {DEFAULTS.epochs})")
    p.add_argument("--lr", type=float, help="learning rate (default: the preset's)")
    p.add_argument("--momentum", type=float, help="default: the preset's")
    p.add_argument("--batch-size", type=int, help=f"default {DEFAULTS.batch_size} (minibatch preset)")
    p.add_argument("--hidden", type=int, help=f"hidden units, default {DEFAULTS.hidden}")
    p.add_argument("--nb-logit", type=float, metavar="W",
                   help=f"after training, add W x the review's naive-Bayes log-odds to the network's output "
                        f"(NB weightings only; default {DEFAULTS.nb_logit:g}, 0: the network alone)")
    p.add_argument("--max-features", type=int, help="vocabulary cap (default: none; 10,000 for the lecture preset)")
    p.add_argument("--tfidf", action="store_true",
                   help=f"TF-IDF weighting instead of the default ({DEFAULTS.weighting}: see README)")
    p.add_argument("--ngrams", type=int, choices=(1, 2),
                   help=f"1: words, 2: words and word pairs (default {DEFAULTS.ngrams})")
    p.add_argument("--seed", type=int, help=f"default {DEFAULTS.seed}")
    p.add_argument("--threads", type=int, default=DEFAULTS.threads,
                   help="CPU threads (default: the cores other programs leave free when the run starts)")
    p.add_argument("--workers", type=int, metavar="K",
                   help="train on K data-parallel processes started by torchrun (minibatch preset; "
                        "README \"More than one machine\"); each uses cpu_count // K threads unless --threads")
    p.add_argument("--predict", metavar="FILE", help="print p(positive) for each line of FILE")
    p.add_argument("--guess", metavar="GUESS", help=f"your prediction before the run, saved with it: {TRAIN_EXAMPLE}")
    p.add_argument("--json", action="store_true", help="print one JSON object; progress goes to stderr")
    add_save_options(p)
    p.set_defaults(handler=run)


def config_from_args(args: argparse.Namespace) -> ClassifierConfig:
    """The config the flags describe; out-of-range values are a DashboardError (exit 2)."""
    given = dict(max_features=args.max_features, hidden=args.hidden, lr=args.lr, momentum=args.momentum,
                 batch_size=args.batch_size, epochs=args.epochs, seed=args.seed, ngrams=args.ngrams,
                 nb_logit=args.nb_logit)
    overrides = {k: v for k, v in given.items() if v is not None}  # the preset decides what was not given
    if args.tfidf:
        overrides["weighting"] = "tfidf"
    return preset_config(args.preset, device=args.device, threads=args.threads, **overrides)


MAX_PREDICT_BYTES = 10 * 2**20  # 10 MiB of reviews to score is ~100,000 of them


def read_predict_file(path: str) -> list[str]:
    p = Path(path).expanduser()
    try:
        if p.exists() and not p.is_dir() and not p.is_file():  # /dev/zero, a pipe: never ends
            raise DashboardError(f"--predict {p} is not a regular file; give a text file with one review per line")
        with open(p, "rb") as handle:
            data = handle.read(MAX_PREDICT_BYTES + 1)
        if len(data) > MAX_PREDICT_BYTES:
            raise DashboardError(f"--predict file {p} is larger than {MAX_PREDICT_BYTES // 2**20} MiB; "
                                 "score a smaller sample of it")
    except FileNotFoundError:
        raise DashboardError(f"--predict file {p} does not exist") from None
    except IsADirectoryError:
        raise DashboardError(f"--predict {p} is a folder; give a text file with one review per line") from None
    except PermissionError:
        raise DashboardError(f"--predict file {p} cannot be read (permission denied)") from None
    lines = [line.strip() for line in decode_text(data, f"--predict file {p}").splitlines() if line.strip()]
    if not lines:
        raise DashboardError(f"--predict file {p} is empty; put one review per line")
    return lines


def run(args: argparse.Namespace) -> int:
    check_save_options(args)
    config = config_from_args(args)
    resolve_device(config.device)  # an unknown or absent device fails before any data is read
    if args.workers is not None:
        check_workers(args.workers, config)
        if args.predict:
            raise DashboardError("--predict needs the trained weights in this process; drop --workers to use it")
    texts = read_predict_file(args.predict) if args.predict else []
    guess = parse_train_guess(args.guess)  # a guess that cannot be read fails before any data is read
    out = sys.stderr if args.json else sys.stdout

    def downloading(done: int, total: int | None) -> None:
        if total and done == total:
            print(f"downloaded {byte_size(done)}", file=sys.stderr, flush=True)

    if args.data.strip() in BUILTIN_DATASETS:  # IMDB takes a while to unpack; a bad path fails in one line
        print(f"reading {args.data}", file=sys.stderr, flush=True)
    reviews = load_source(args.data, progress=downloading)
    features, baseline = prepare(reviews, config, cli_hooks(on_progress=lambda step: print(
        step.message, file=sys.stderr, flush=True)))
    print(wrap(f"{reviews.source}: {features.n_train:,} train, {features.n_val:,} validation, "
               f"{features.n_test:,} test reviews, {features.vocab_size:,} terms"), file=out, flush=True)

    step_word = "update" if config.preset == "lecture" else "epoch"

    def progress(step: Progress[TrainEpoch]) -> None:
        report = step.item
        if report is None:  # the lecture preset's "moving the dense matrix ...: N MB" line
            print(step.message, file=sys.stderr, flush=True)
            return
        val = f"  val loss {number(report.val_loss)}" if report.val_loss is not None else ""
        print(f"{step_word} {report.epoch:3d}  train loss {number(report.train_loss or 0)}  "
              f"test loss {number(report.test_loss or 0)}  test accuracy {percent(report.test_accuracy)}{val}  "
              f"{seconds(report.seconds or 0)}", file=out, flush=True)

    if args.workers is not None:
        return run_workers(args, config, reviews.source, baseline.accuracy, out, guess)
    result = train(features, config, cli_hooks(on_progress=progress))
    probabilities = predict(result, texts).tolist()  # empty for no texts
    predictions = tuple(Prediction(t, float(p)) for t, p in zip(texts, probabilities))
    run = replace(result.run, baseline_accuracy=baseline.accuracy, predictions=predictions, guess=guess)
    summary = to_jsonable(run)
    if args.json:  # the notice is in the object's `load` field
        print_json(summary)
    else:
        print(render(result, baseline.accuracy, summary["predictions"]))
    if (sentence := compare_guess([run])) is not None:
        print(wrap(sentence), file=out)
    if result.epochs:
        save_if_requested(args, run)
    return 0


def run_workers(args: argparse.Namespace, config: ClassifierConfig, source: str, baseline_accuracy: float,
                out: TextIO, guess: Guess | None = None) -> int:
    """--workers K: the run under torchrun, progress relayed per epoch, the same JSON plus workers/backend."""

    def progress(step: Progress[TrainEpoch]) -> None:
        e = step.item
        if e is not None:
            print(f"epoch {e.epoch:3d}  train loss {number(e.train_loss or 0)}  test loss {number(e.test_loss or 0)}  "
                  f"test accuracy {percent(e.test_accuracy)}  {seconds(e.seconds or 0)}  "
                  f"all-reduce {seconds(e.allreduce_seconds or 0)}", file=out, flush=True)

    data = args.data.strip()  # a built-in name is on disk by now (load_source fetched it); workers never download
    run = replace(train_with_workers(data, config, args.workers, cli_hooks(on_progress=progress)),
                  baseline_accuracy=baseline_accuracy, guess=guess)
    summary = to_jsonable(run)
    if args.json:
        print_json(summary)
    else:
        print(render_workers(run, source))
    if (sentence := compare_guess([run])) is not None:
        print(wrap(sentence), file=out)
    if run.epochs:
        save_if_requested(args, run)
    return 0


def render_workers(run: TrainRun, source: str) -> str:
    per_epoch = [e.seconds or 0.0 for e in run.epochs]
    reduce = [e.allreduce_seconds or 0.0 for e in run.epochs]
    share = sum(reduce) / sum(per_epoch) if sum(per_epoch) > 0 else 0.0
    lines = ["", f"{source}: {run.workers} workers on {run.backend} ({run.device}), {run.vocab_size:,} terms"]
    if run.epochs:
        lines += [f"test accuracy {percent(run.test_accuracy)} after epoch {len(run.epochs)}; "
                  f"LogisticRegression on the same split {percent(run.baseline_accuracy)}",
                  f"training took {seconds(run.train_seconds or 0)} ({seconds(statistics.median(per_epoch))} per "
                  f"epoch, {share:.0%} of it in gradient all-reduce)" + (", stopped early" if run.stopped else "")]
    if run.load is not None and run.load.notice:
        lines.append(run.load.notice)
    return wrap(lines)


def render(result: TrainResult, baseline_accuracy: float, predictions: list[dict]) -> str:
    dense = f", dense matrix {byte_size(result.dense_mb * 1e6)} on the device" if result.dense_mb is not None else ""
    lines = ["", f"device {result.device} ({result.config.preset} preset, {result.input_mode} input), "
                 f"{result.vocab_size:,} terms{dense}"]
    if not result.epochs:  # stopped (by the user or the per-job time limit) before the first epoch ended
        lines.append("stopped before the first epoch ended; "
                     f"LogisticRegression on the same split {percent(baseline_accuracy)}")
    else:
        kept = kept_words(result.config, result.best_epoch, bool(result.n_val))
        per = "update" if result.config.preset == "lecture" else "epoch"
        threads = f"{result.threads} CPU thread{'s' if result.threads != 1 else ''}"
        lines += [
            f"test accuracy {percent(result.test_accuracy)} at the kept {kept}; "
            f"LogisticRegression on the same split {percent(baseline_accuracy)}",
            f"training took {seconds(result.train_seconds)} ({seconds(result.seconds_per_epoch)} per {per}, "
            f"{number(result.samples_per_s)} reviews/s, {threads})" + (", stopped early" if result.stopped else ""),
        ]
        if note := overfitting_note(result.epochs):
            lines.append(note)
    if result.load is not None and result.load.notice:
        lines.append(result.load.notice)
    text = wrap(lines)
    if predictions:
        rows = [[p["p_positive"], p["text"]] for p in predictions]
        text += "\n\n" + format_table(["p(positive)", "review"], rows, max_width=TABLE_WIDTH, elide=["review"])
    return text
