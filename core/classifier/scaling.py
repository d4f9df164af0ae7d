"""Seconds per epoch for 1, 2, ... data-parallel workers, split into compute and gradient all-reduce.

Each worker count is one `train_with_workers` run, in turn (each holds the devices for itself). The
ideal is the one-worker epoch divided by K; what separates a measured bar from it is mostly the
all-reduce, the part of the work that more workers do not divide (Amdahl's law).
"""

from __future__ import annotations

from collections.abc import Sequence

from core.classifier.browser_paths import allowed_path
from core.classifier.datasets import BUILTIN_DATASETS, ProgressCallback, fetch, is_cached
from core.classifier.model import ClassifierConfig
from core.classifier.scaling_result import Scaling, ScalingPoint, point_of
from core.classifier.workbench import PATH, DataChoice
from core.classifier.workers import train_with_workers
from core.errors import DashboardError
from core.platform.jobs import JobHooks

WORKER_COUNTS = (1, 2)


def worker_data(choice: DataChoice, progress: ProgressCallback | None = None) -> str:
    """What the workers read: each worker loads the data itself, so it must be on disk, not an upload.
    A built-in data set not downloaded yet is downloaded (and verified) here first."""
    if choice.source in BUILTIN_DATASETS:
        if not is_cached(choice.source):
            fetch(choice.source, progress=progress)
        return choice.source
    if choice.source == PATH:  # a browser user is a stranger: only under the data roots, as the loader checks
        return str(allowed_path(choice.path))
    raise DashboardError("the workers read the reviews themselves: choose a built-in data set or a server path, "
                         "not an upload, to measure scaling")


def measure_scaling(data: str, config: ClassifierConfig, worker_counts: Sequence[int] = WORKER_COUNTS,
                    hooks: JobHooks | None = None) -> Scaling:
    """One mini-batch run per worker count on `data` (already on disk), in turn; a Stop keeps the finished ones."""
    points: list[ScalingPoint] = []
    for k in worker_counts:
        run = train_with_workers(data, config, k, hooks)
        if run.stopped:
            return Scaling(tuple(points), stopped=True)
        points.append(point_of(run))
    return Scaling(tuple(points))
