"""`python -m core data fetch|add|list`: download a built-in review data set into the cache, or add a local copy."""

from __future__ import annotations

import argparse
import sys

from core.cli import HELP
from core.cli.output import format_table, print_json, wrap
from core.classifier.datasets import BUILTIN_DATASETS, DOWNLOAD_TIMEOUT_S, archive_path, fetch, is_cached
from core.classifier.loaders import load_archive
from core.classifier.local_copy import add_local_copy
from core.platform.units import byte_size

PROGRESS_STEP_BYTES = 2**20  # print a progress line every MiB


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("data", help=HELP["data"])
    actions = p.add_subparsers(dest="action", required=True, parser_class=type(p))
    f = actions.add_parser("fetch", help="download and verify one data set into the per-user cache")
    f.add_argument("name", choices=list(BUILTIN_DATASETS), help="which data set")
    f.add_argument("--url", help="a mirror to download from instead (the checksum still applies)")
    f.add_argument("--timeout", type=float, default=DOWNLOAD_TIMEOUT_S,
                   help=f"give up when the server sends nothing for this many seconds (default {DOWNLOAD_TIMEOUT_S:g})")
    f.add_argument("--json", action="store_true", help="print one JSON object")
    f.set_defaults(handler=run_fetch)
    a = actions.add_parser("add", help="put a local copy (the original archive or its unpacked folder) into the "
                                       "cache, with the same checks as a download: for a machine without internet")
    a.add_argument("name", choices=list(BUILTIN_DATASETS), help="which data set")
    a.add_argument("path", help="the original .tar.gz, or the folder it unpacks to")
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a.set_defaults(handler=run_add)
    ls = actions.add_parser("list", help="the built-in data sets and whether they are cached")
    ls.add_argument("--json", action="store_true", help="print one JSON object")
    ls.set_defaults(handler=run_list)


class _Progress:
    """Progress on stderr: one updating line on a terminal, a line per MiB otherwise."""

    def __init__(self) -> None:
        self.next_report = 0

    def __call__(self, done: int, total: int | None) -> None:
        if done < self.next_report and done != total:
            return
        self.next_report = done + PROGRESS_STEP_BYTES
        of = f" of {byte_size(total)}" if total else ""
        end = "\r" if sys.stderr.isatty() else "\n"
        print(f"downloaded {byte_size(done)}{of}", end=end, file=sys.stderr, flush=True)


def run_fetch(args: argparse.Namespace) -> int:
    was_cached = is_cached(args.name)
    path = fetch(args.name, progress=_Progress(), timeout_s=args.timeout, url=args.url)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    reviews = load_archive(path)
    info = {"name": args.name, "path": str(path), "bytes": path.stat().st_size, "already_cached": was_cached,
            "reviews": reviews.n, "positive": reviews.n_positive, "negative": reviews.n_negative}
    if args.json:
        print_json(info)
    else:
        state = "already in the cache" if was_cached else "downloaded and verified"
        print(wrap(f"{args.name}: {state}: {path} ({reviews.n_positive:,} positive, {reviews.n_negative:,} negative "
                   "reviews)"))
    return 0


def run_add(args: argparse.Namespace) -> int:
    added = add_local_copy(args.name, args.path)
    reviews = load_archive(added.path)
    info = {"name": args.name, "path": str(added.path), "already_cached": added.already_cached,
            "packed_from_folder": added.packed, "reviews": reviews.n, "positive": reviews.n_positive,
            "negative": reviews.n_negative}
    if args.json:
        print_json(info)
    else:
        state = ("already in the cache (nothing copied)" if added.already_cached
                 else "added from the folder and verified" if added.packed else "added and verified")
        print(wrap(f"{args.name}: {state}: {added.path} "
                   f"({reviews.n_positive:,} positive, {reviews.n_negative:,} negative reviews)"))
    return 0


def run_list(args: argparse.Namespace) -> int:
    rows = [
        {"name": ds.name, "title": ds.title, "cached": is_cached(ds.name), "path": str(archive_path(ds.name)),
         "url": ds.url, "approx_mb": ds.approx_mb}
        for ds in BUILTIN_DATASETS.values()
    ]
    if args.json:
        print_json({"datasets": rows})
    else:
        print(format_table(["name", "cached", "MB", "title"],
                           [[r["name"], "yes" if r["cached"] else "no", r["approx_mb"], r["title"]] for r in rows]))
    return 0
