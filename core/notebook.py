"""What notebooks/colab.ipynb does, so that its cells stay glue and the logic is tested here.

The notebook is how a student without a GPU gets one (a free Colab T4) and how this project's CUDA
paths run on a real GPU at all. Each step keeps its run in a small SQLite store of its own, one
run per step (re-running a cell replaces its run), and the last cell writes that store's export:
the Results page's import format, through the store's one export writer, so what a student
downloads imports anywhere. With DATABASE_URL the same export is imported into the class board,
where stored runs are skipped: saving twice adds nothing.

Colab's own module (`google.colab`) is reached only through `colab_module()`, so the notebook runs
unchanged in Jupyter, under nbclient in the tests, or in Colab.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from core.classifier.datasets import load_source
from core.classifier.model import ClassifierConfig
from core.classifier.reports import TrainResult
from core.classifier.training import prepare, train
from core.errors import DashboardError
from core.matmul.choices import log_sizes
from core.matmul.config import MatmulOptions, SweepConfig
from core.matmul.sweep import run_sweep
from core.results.matmul import MatmulSweep
from core.platform.device_lock import WaitStatus
from core.platform.jobs import JobHooks, Progress
from core.platform.units import byte_size, percent, readable, seconds
from core.results import jsonio
from core.results.kinds import read_result
from core.results.machine import Cpu, Gpu, Machine, read_machine
from core.results.runs import NOTEBOOK
from core.store.access import Owner
from core.results.train import preset_title
from core.selfcheck import CHECKS, FAIL, FULL, PASS, QUICK, SKIP, Report, run_checks, select
from core.store.database import ImportResult, Store, open_store

COLAB_GPU_STEPS = (
    "No GPU is visible to PyTorch. In Colab: Runtime > Change runtime type > Hardware accelerator: "
    "T4 GPU (any GPU), Save; the notebook restarts, and the resources panel (top right) shows a "
    "'GPU RAM' line. Then run the notebook again from the top. If Colab says you cannot connect to a "
    "GPU or that too many sessions are active, close your other Colab sessions (Runtime > Manage "
    "sessions) and try again, or come back later: free GPUs are lent out as they are free."
)
LECTURE_N = 10_000  # the lecture's matrix size
GPU_SIZES = (*log_sizes(256, 8192), LECTURE_N)  # to the lecture's size
BEYOND_N = 16_384  # and beyond, on a GPU whose float32 call of it fits the budget (Ampere and newer)
TENSOR_CAPABILITY = (8, 0)  # TF32 and native bfloat16 from here (A100, A10, L4, H100, RTX 30/40), and >= 19.5
# TFLOP/s float32: n = 16384 (8.8 TFLOP) in well under GPU_BUDGET_S / 2. A T4 (7.5, 8.1 peak, about 4 on Colab)
# takes about 2 s a call, so the size plan would always leave it out (warm-up plus one call within the budget).
GPU_BUDGET_S = 2.0
NOTEBOOK_STORE = "notebook-runs.sqlite3"
STEP_KEY = "notebook_step"  # in a saved run's settings: which notebook cell made it


def colab_module() -> ModuleType | None:
    """`google.colab` when running inside Colab, else None: the one guard around Colab-only calls."""
    try:
        return importlib.import_module("google.colab")
    except ImportError:
        return None


def offer_download(path: Path) -> str:
    """Hand a file to the browser in Colab (its download dialog); elsewhere say where it is."""
    colab = colab_module()
    if colab is None:
        return f"saved {path.name} in {path.parent}: download it from there"
    colab.files.download(str(path))
    return f"saved {path.name}; your browser is downloading it (allow the download if it asks)"


# ---------------------------------------------------------------- the device check


@dataclass(frozen=True)
class DeviceCheck:
    """`python -m core devices --json`, as a table a notebook shows."""

    info: Machine
    table: pd.DataFrame

    @property
    def has_gpu(self) -> bool:
        return bool(self.info.gpus)


def device_table(info: Machine) -> pd.DataFrame:
    """One row per device: the CPU, then each GPU with its memory (the 'GPU RAM' Colab shows)."""
    cpu = info.cpu or Cpu()
    rows = [{"device": "cpu", "name": cpu.name,
             "memory": f"{byte_size(cpu.ram_available_bytes)} free of {byte_size(cpu.ram_total_bytes)}",
             "details": f"{cpu.logical_cores} cores, torch uses {cpu.torch_threads} threads"}]
    for gpu in info.gpus:
        rows.append({"device": f"cuda:{gpu.index}", "name": gpu.name,
                     "memory": f"{byte_size(gpu.free_memory_bytes)} free of {byte_size(gpu.total_memory_bytes)}",
                     "details": f"compute capability {gpu.compute_capability}"})
    return readable(rows)  # a field the check could not read is blank, never None


def check_devices(python: str = sys.executable) -> DeviceCheck:
    """Run the CLI's device check in a fresh process, as a student would in a terminal."""
    done = subprocess.run([python, "-m", "core", "devices", "--json"], capture_output=True, text=True)
    if done.returncode != 0:
        raise DashboardError(f"`python -m core devices --json` failed ({done.returncode}): "
                             f"{done.stderr.strip()[-300:]}; run the install cell again")
    info = read_machine(json.loads(done.stdout), "devices")
    return DeviceCheck(info, device_table(info))


# ---------------------------------------------------------------- what each step runs


@dataclass(frozen=True)
class Plan:
    """How big each step is: the lecture's sizes on a GPU, small ones on a CPU, tiny ones for a quick try."""

    devices: tuple[str, ...]
    sweep: SweepConfig
    checks: tuple[str, ...]
    epochs: int
    quick: bool = False  # a trial run: the GPU self-check shrinks too (selfcheck.QUICK)

    @property
    def has_gpu(self) -> bool:
        return any(d.startswith("cuda") for d in self.devices)


def has_tensor_cores(gpu: Gpu | None) -> bool:
    """Compute capability 8.0 or newer (TF32, native bfloat16); False where the record does not say."""
    try:
        major, minor = (int(x) for x in (gpu.compute_capability or "").split(".")) if gpu else (0, 0)
    except ValueError:
        return False
    return (major, minor) >= TENSOR_CAPABILITY


def plan_for(has_gpu: bool, quick: bool = False, gpu: Gpu | None = None) -> Plan:
    """GPU: the race to the lecture's n = 10,000 in float32 against the CPU, every check, 10 epochs; on a
    GPU of compute capability 8.0 and newer (`gpu`, the device check's first) also TF32 on, bfloat16 on
    both devices and n = 16384. A T4 (or an unknown GPU) gets neither: the sweep would drop its TF32-on
    series as TF32 off under another name and its bfloat16 as emulated, leaving a CPU bfloat16 series with
    no GPU partner, and its n = 16384 (about 2 s a call) would always be skipped by the 2 s budget.

    Without a GPU the CPU parts run small, and the GPU checks are listed (they report themselves
    skipped with the reason). `quick` shrinks everything for a trial run or a test.
    """
    devices = ("cpu", "cuda") if has_gpu else ("cpu",)
    if quick:
        sweep = SweepConfig(sizes=(64, 128, 256), devices=devices, threads=(1,), options=MatmulOptions(budget_s=0.2))
        checks = tuple(c.name for c in CHECKS if c.needs_cuda or c.name == "devices")
        return Plan(devices, sweep, checks, epochs=2, quick=True)
    if has_gpu and has_tensor_cores(gpu):
        sweep = SweepConfig(sizes=(*GPU_SIZES, BEYOND_N), devices=devices, dtypes=("float32", "bfloat16"),
                            tf32=(False, True), options=MatmulOptions(budget_s=GPU_BUDGET_S))
        return Plan(devices, sweep, tuple(c.name for c in CHECKS), epochs=10)
    if has_gpu:
        sweep = SweepConfig(sizes=GPU_SIZES, devices=devices, options=MatmulOptions(budget_s=GPU_BUDGET_S))
        return Plan(devices, sweep, tuple(c.name for c in CHECKS), epochs=10)
    sweep = SweepConfig(sizes=log_sizes(64, 1024), devices=devices, options=MatmulOptions(budget_s=0.5))
    return Plan(devices, sweep, tuple(c.name for c in CHECKS), epochs=3)


def printing_hooks(say: Callable[[str], None] = print) -> JobHooks:
    """Progress lines for a long cell, and the waiting line when another job holds a device."""
    last_wait: list[tuple[str | None, int]] = []

    def on_progress(step: Progress[Any]) -> None:
        if step.message:
            say(step.message)

    def on_wait(status: WaitStatus) -> None:
        now = (status.device, status.ahead)
        if not last_wait or last_wait[-1] != now:
            last_wait.append(now)
            say(status.message)

    return JobHooks(on_progress=on_progress, on_wait=on_wait)


def selfcheck(plan: Plan, hooks: JobHooks | None = None) -> Report:
    """The plan's checks; in QUICK mode the GPU ones only to n = 1024 (a minute, not several, on a T4)."""
    return run_checks(select(list(plan.checks)), hooks=hooks, sizes=QUICK if plan.quick else FULL,
                      on_outcome=lambda o: print(f"{o.status:4}  {o.name} ({seconds(o.seconds)})"))


def verdict(report: Report) -> str:
    """One line: can this machine's timings be trusted, and what was not checked."""
    counts = {s: sum(o.status == s for o in report.outcomes) for s in (PASS, FAIL, SKIP)}
    head = report.headline
    failed = [o.name for o in report.outcomes if o.status == FAIL]
    tail = f"; failed: {', '.join(failed)}" if failed else ""
    skipped = f", {counts[SKIP]} skipped (they need a CUDA GPU)" if counts[SKIP] else ""
    busy = f" ({report.busy.notice})" if report.busy is not None and report.busy.notice else ""
    return f"selfcheck: {head}: {counts[PASS]} passed, {counts[FAIL]} failed{skipped}{tail}{busy}"


def matmul_race(plan: Plan, hooks: JobHooks | None = None) -> MatmulSweep:
    return run_sweep(plan.sweep, hooks)


@dataclass(frozen=True)
class ClassifierRace:
    """The same network, seed and split trained on each device; the baseline is the same split's."""

    runs: tuple[TrainResult, ...]
    baseline_accuracy: float

    def summary(self) -> pd.DataFrame:
        """One row per device, as the notebook shows it: 3 significant figures, units in the headers."""
        return readable([{"preset": preset_title(r.config.preset), "device": r.device, "epochs": len(r.epochs),
                          "test accuracy": percent(r.test_accuracy), "s / epoch": r.seconds_per_epoch,
                          "reviews / s": r.samples_per_s} for r in self.runs])

    def payloads(self) -> list[dict[str, Any]]:
        return [jsonio.to_jsonable(replace(r.run, baseline_accuracy=self.baseline_accuracy)) for r in self.runs]


def run_name(result: TrainResult) -> str:
    """'cpu · mini-batch': how a notebook chart names a training run, as the dashboard's legends do."""
    return f"{result.device} · {preset_title(result.config.preset)}"


def classifier_race(data: str, plan: Plan, *, seed: int = 0, hooks: JobHooks | None = None) -> ClassifierRace:
    """Features built once, then one run per device from `seed`: the race differs only in the device."""
    reviews = load_source(data)
    base = ClassifierConfig(epochs=plan.epochs, seed=seed, device="cpu")
    features, baseline = prepare(reviews, base, hooks)
    runs = [train(features, ClassifierConfig(**{**base.to_dict(), "device": device}), hooks)
            for device in plan.devices]
    return ClassifierRace(tuple(runs), baseline.accuracy)


# ---------------------------------------------------------------- keeping and saving the runs


@dataclass
class NotebookRuns:
    """The notebook's runs, one per step, in a SQLite store in `folder` (it survives a kernel restart)."""

    folder: Path
    label: str = "Colab"
    store: Store = field(init=False)

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.store = open_store(f"sqlite:///{(self.folder / NOTEBOOK_STORE).resolve()}")

    def keep(self, step: str, kind: str, payloads: Sequence[dict[str, Any]]) -> list[int]:
        """Store a step's runs in place of what the step stored before (re-running a cell replaces)."""
        for run in self.store.list_runs():
            if run.settings.get(STEP_KEY) == step:
                self.store.delete(run.run_id)
        results = [read_result(kind, payload) for payload in payloads]
        return [self.store.save(replace(r, settings={**r.settings, STEP_KEY: step}), label=self.label,
                                owner=Owner(source=NOTEBOOK))
                for r in results]

    def keep_report(self, report: Report, name: str = "selfcheck.json") -> Path:
        """The self-check's whole JSON report beside the export (the verdict is one line of it)."""
        path = self.folder / name
        path.write_text(jsonio.dumps(report.to_json(), indent=2) + "\n")
        return path

    def export(self, name: str = "gpu-vs-cpu-results.json") -> Path:
        """Every kept run in one file the Results page (and `results import`) reads."""
        runs = self.store.list_runs()
        if not runs:
            raise DashboardError("no runs to save yet; run the race cells first")
        path = self.folder / name
        path.write_bytes(self.store.export_json([r.run_id for r in runs]))
        return path

    def to_board(self, url: str, export: Path) -> ImportResult:
        """Import the export into the class board; runs already there are skipped, not doubled."""
        return open_store(url).import_json(export.read_bytes())
