"""The "both presets" view: the lecture's dense full-batch run and the sparse mini-batch run, on the CPU and the GPU.

Four runs of the same network from one seed. What they show is why the lecture saw its GPU fly and
this page's default barely gains: a full-batch update is one big matrix product per step, which a
GPU splits across thousands of cores (the bigger the matrix, the bigger its lead), while an epoch of
mini-batches is ~130 tiny dependent steps, each too small to fill a GPU, so per-step overhead sets
the pace on both devices. Without a GPU the view shows the CPU half and says what the GPU half would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.classifier.model import ClassifierConfig, preset_config
from core.classifier.reports import TrainResult
from core.parallel.chain import TITLE as CHAIN_TITLE
from core.platform.units import percent, size_unit
from core.results.train import preset_title

PRESET_ORDER = ("lecture", "minibatch")
STEP_NAME = {"lecture": "update", "minibatch": "epoch"}

EXPLANATION = (
    "**Why the two presets race so differently.** The lecture's preset takes one full-batch update per step: "
    "the whole dense (reviews × terms) matrix times the first layer's weights, forward and backward, a few big "
    "matrix products that a GPU splits across thousands of cores — the bigger the matrix (more reviews, a larger "
    "vocabulary), the larger the GPU's lead. The mini-batch preset does the same arithmetic per epoch as about "
    "130 tiny dependent steps of 64 sparse reviews each; every step is too small to fill a GPU, so launch and "
    "bookkeeping overhead sets the pace on both devices and the speed-up is small, even below 1. See Why parallel, "
    f"section “{CHAIN_TITLE}”: the same effect with plain matrix products."
)
WITHOUT_GPU = (
    "No GPU here, so only the CPU half ran. On a GPU the lecture preset's update is one big product: the lecture "
    "moved its matrix, network and loss to CUDA and its ten updates went from a painful wait to near-instant "
    "(the lecture's own description). The mini-batch preset's epoch stays a chain of ~130 tiny steps "
    "and gains little, sometimes nothing."
)


def race_configs(seed: int, devices: Sequence[str]) -> list[ClassifierConfig]:
    """Each preset's own defaults, from one seed, on each device in turn: lecture first, then mini-batch."""
    return [preset_config(p, seed=seed, device=d) for p in PRESET_ORDER for d in devices]


@dataclass(frozen=True)
class PresetTiming:
    """One of the four runs: how long one step (an update, or an epoch) took, and where it got."""

    preset: str
    device: str
    seconds_per_step: float | None  # median over completed steps
    steps: int
    test_accuracy: float | None
    dense_mb: float | None

    @property
    def step_name(self) -> str:
        return STEP_NAME[self.preset]


def timing_of(result: TrainResult) -> PresetTiming:
    return PresetTiming(result.config.preset, result.device, result.seconds_per_epoch, len(result.epochs),
                        result.test_accuracy, result.dense_mb)


@dataclass(frozen=True)
class PresetRace:
    """The runs side by side; `with_gpu` False when only the CPU half ran."""

    timings: tuple[PresetTiming, ...]
    with_gpu: bool

    def speedup(self, preset: str) -> float | None:
        """CPU seconds per step / GPU seconds per step for one preset; None without both."""
        cpu = [t.seconds_per_step for t in self.timings if t.preset == preset and t.device == "cpu"]
        gpu = [t.seconds_per_step for t in self.timings if t.preset == preset and t.device != "cpu"]
        if not cpu or not gpu or cpu[0] is None or not gpu[0]:
            return None
        return cpu[0] / gpu[0]

    def rows(self) -> list[dict[str, object]]:
        """One row per run for a table: preset, device, seconds per step, the speed-up on the GPU rows."""
        rows: list[dict[str, object]] = []
        unit, scale = size_unit(max((t.dense_mb or 0) * 1e6 for t in self.timings) if self.timings else 0)
        for t in self.timings:  # the dense matrix in one binary unit for the column, chosen for its largest
            speedup = self.speedup(t.preset) if t.device != "cpu" else None
            rows.append({  # one unit for both presets: the lecture's update is its whole epoch
                "preset": preset_title(t.preset), "device": t.device, "s / epoch": t.seconds_per_step,
                "epochs": t.steps, "test accuracy": percent(t.test_accuracy),
                f"dense matrix {unit}": None if t.dense_mb is None else t.dense_mb * 1e6 / scale,
                "GPU speed-up ×": speedup,
            })
        return rows

    @property
    def explanation(self) -> str:
        return EXPLANATION if self.with_gpu else f"{EXPLANATION}\n\n{WITHOUT_GPU}"


def preset_race(results: Sequence[TrainResult], with_gpu: bool) -> PresetRace:
    return PresetRace(tuple(timing_of(r) for r in results), with_gpu)
