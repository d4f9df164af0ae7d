"""What a scaling measurement is: seconds per epoch for K data-parallel workers, and the ideal 1/K line.

Apart from `core.classifier.scaling`, which runs the workers, so that the classifier's figures
(core/charts/classifier.py) draw a `Scaling` without importing the runner, its job protocol and
torch (tests/test_layers.py).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from core.errors import DashboardError
from core.results.train import TrainRun


@dataclass(frozen=True)
class ScalingPoint:
    workers: int
    seconds_per_epoch: float  # median over the epochs of the slowest worker's epoch
    allreduce_per_epoch: float  # median over the epochs of the workers' mean all-reduce seconds
    test_accuracy: float | None

    @property
    def compute_per_epoch(self) -> float:
        return max(0.0, self.seconds_per_epoch - self.allreduce_per_epoch)

    @property
    def allreduce_share(self) -> float:
        return self.allreduce_per_epoch / self.seconds_per_epoch if self.seconds_per_epoch > 0 else 0.0


@dataclass(frozen=True)
class Scaling:
    points: tuple[ScalingPoint, ...]
    stopped: bool = False  # a Stop ended it: the finished worker counts only

    def ideal(self, workers: int) -> float | None:
        """The first measurement's epoch shared perfectly among `workers`."""
        if not self.points:
            return None
        first = self.points[0]
        return first.seconds_per_epoch * first.workers / workers


def point_of(run: TrainRun) -> ScalingPoint:
    if not run.epochs:
        raise DashboardError("the run stopped before its first epoch ended; nothing to measure")
    return ScalingPoint(workers=run.workers or 1,
                        seconds_per_epoch=statistics.median(e.seconds or 0.0 for e in run.epochs),
                        allreduce_per_epoch=statistics.median(e.allreduce_seconds or 0.0 for e in run.epochs),
                        test_accuracy=run.test_accuracy)
