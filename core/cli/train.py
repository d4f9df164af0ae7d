"""`python -m core train --data PATH_OR_NAME ...`: train the review classifier without a browser."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.classifier.model import ClassifierConfig
from core.cli.output import format_table, print_json
from core.cli.results import add_save_options, check_save_options, save_if_requested
from core.cli.waiting import cli_hooks
from core.classifier.datasets import BUILTIN_DATASETS, load_source
from core.platform.devices import resolve_device
from core.errors import DashboardError
from core.classifier.loaders import decode_text
from core.classifier.training import EpochReport, TrainResult, predict, prepare, train
from core.platform.jobs import Progress

DEFAULTS = ClassifierConfig()


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train the review classifier and report loss, accuracy and seconds per epoch")
    p.add_argument("--data", required=True, metavar="PATH_OR_NAME",
                   help=f"{' or '.join(BUILTIN_DATASETS)} (downloaded on first use), a folder, a .tar.gz or a CSV/TSV")
    p.add_argument("--device", default=DEFAULTS.device, help="auto|cpu|cuda|cuda:N|mps (default auto)")
    p.add_argument("--epochs", type=int, default=DEFAULTS.epochs, help=f"default {DEFAULTS.epochs}")
    p.add_argument("--lr", type=float, default=DEFAULTS.lr, help=f"learning rate, default {DEFAULTS.lr:g}")
    p.add_argument("--momentum", type=float, default=DEFAULTS.momentum, help=f"default {DEFAULTS.momentum:g}")
    p.add_argument("--batch-size", type=int, default=DEFAULTS.batch_size, help=f"default {DEFAULTS.batch_size}")
    p.add_argument("--hidden", type=int, default=DEFAULTS.hidden, help=f"hidden units, default {DEFAULTS.hidden}")
    p.add_argument("--max-features", type=int, default=DEFAULTS.max_features,
                   help="vocabulary cap (default: no cap)")
    p.add_argument("--tfidf", action="store_true",
                   help=f"TF-IDF weighting instead of the default ({DEFAULTS.weighting}: see README)")
    p.add_argument("--ngrams", type=int, choices=(1, 2), default=DEFAULTS.ngrams,
                   help=f"1: words, 2: words and word pairs (default {DEFAULTS.ngrams})")
    p.add_argument("--seed", type=int, default=DEFAULTS.seed, help=f"default {DEFAULTS.seed}")
    p.add_argument("--threads", type=int, default=DEFAULTS.threads,
                   help="CPU threads (default: the cores other programs leave free when the run starts)")
    p.add_argument("--predict", metavar="FILE", help="print p(positive) for each line of FILE")
    p.add_argument("--json", action="store_true", help="print one JSON object; progress goes to stderr")
    add_save_options(p)
    p.set_defaults(handler=run)


def config_from_args(args: argparse.Namespace) -> ClassifierConfig:
    """The config the flags describe; out-of-range values are a DashboardError (exit 2)."""
    return ClassifierConfig(
        weighting="tfidf" if args.tfidf else DEFAULTS.weighting, ngrams=args.ngrams, max_features=args.max_features,
        hidden=args.hidden, lr=args.lr, momentum=args.momentum, batch_size=args.batch_size, epochs=args.epochs,
        seed=args.seed, device=args.device, threads=args.threads,
    )


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
    texts = read_predict_file(args.predict) if args.predict else []
    out = sys.stderr if args.json else sys.stdout

    def downloading(done: int, total: int | None) -> None:
        if total and done == total:
            print(f"downloaded {done / 2**20:.1f} MiB", file=sys.stderr, flush=True)

    if args.data.strip() in BUILTIN_DATASETS:  # IMDB takes a while to unpack; a bad path fails in one line
        print(f"reading {args.data}", file=sys.stderr, flush=True)
    reviews = load_source(args.data, progress=downloading)
    features, baseline = prepare(reviews, config, cli_hooks())
    print(f"{reviews.source}: {features.n_train} train, {features.n_val} validation, {features.n_test} test reviews, "
          f"{features.vocab_size} terms", file=out, flush=True)

    def progress(step: Progress[EpochReport]) -> None:
        report = step.item
        if report is None:
            return
        val = f"  val loss {report.val.loss:.4f}" if report.val else ""
        print(f"epoch {report.epoch:3d}  train loss {report.train_loss:.4f}  test loss {report.test.loss:.4f}  "
              f"test accuracy {report.test.accuracy:.4f}{val}  {report.seconds:.2f} s", file=out, flush=True)

    result = train(features, config, cli_hooks(on_progress=progress))
    probabilities = predict(result, texts).tolist()  # empty for no texts
    summary = result.to_json(baseline.accuracy, texts, probabilities)
    if args.json:  # the notice is in the object's `load` field
        print_json(summary)
    else:
        print(render(result, baseline.accuracy, summary["predictions"]))
    if result.epochs:
        save_if_requested(args, "train", summary)
    return 0


def render(result: TrainResult, baseline_accuracy: float, predictions: list[dict]) -> str:
    lines = ["", f"device {result.device} ({result.input_mode} input), {result.vocab_size} terms"]
    if not result.epochs:  # stopped (by the user or the per-job time limit) before the first epoch ended
        lines.append(f"stopped before the first epoch ended; LogisticRegression on the same split {baseline_accuracy:.4f}")
    else:
        kept = f"epoch {result.best_epoch} (lowest validation loss)" if result.n_val else f"epoch {result.best_epoch}"
        lines += [
            f"test accuracy {result.test_accuracy:.4f} at the kept {kept}; "
            f"LogisticRegression on the same split {baseline_accuracy:.4f}",
            f"training took {result.train_seconds:.2f} s ({result.seconds_per_epoch:.2f} s per epoch, "
            f"{result.samples_per_s:,.0f} reviews/s, {result.threads} CPU thread(s))"
            + (", stopped early" if result.stopped else ""),
        ]
    if result.load is not None and result.load.notice:
        lines.append(result.load.notice)
    if predictions:
        lines += ["", format_table(["p(positive)", "review"], [[p["p_positive"], p["text"][:80]] for p in predictions])]
    return "\n".join(lines)
