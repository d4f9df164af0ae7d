"""What a Why-parallel section is: one `Section` record that the page, the CLI and the benchmark
read everything from (title, runner, explanation, chart, settings, devices), and the job it runs in.

A section's runner takes its config and the shared `JobHooks`, holds the devices it times itself
(`section_job`, over `core.platform.jobs.run_job`), reports each finished step with the partial
result as `Progress.item` (so a stop keeps what was measured), and returns a frozen dataclass of
raw `Measurement`s. Callers pass hooks and never lock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
import dataclasses
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import torch

from core.errors import DashboardError
from core.parallel.machine import CPU, timed_devices
from core.platform.jobs import JobHooks, RunningJob, run_job
from core.platform.machine_load import probe_load
from core.results.load import MachineLoad

C = TypeVar("C")
R = TypeVar("R")
TensorMaker = Callable[[tuple[int, ...], torch.device], torch.Tensor]
Values = Mapping[str, float]  # knob name -> value, as the page's widgets (or the CLI's flags) give them

MIN_SECTION_BUDGET_S = 0.05  # below this no measurement gets even one warm call in
SECTION_BUDGET_S = 2.5  # default per timed section: the whole page stays near 10 s on 2 cores
MAX_SECTION_BUDGET_S = 600.0  # like a matmul size: ten minutes is the most any one timed step may take
MAX_CPU_N = 8192  # one product of this size takes tens of seconds on one CPU thread
MAX_GPU_N = 32768  # 4 GiB per matrix; the memory check refuses what does not fit


def random_tensor(shape: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """The default maker: standard normal float32 values, created directly on `device`.

    Injectable so the GPU branches can run on a CPU-only machine with a faked `torch.cuda`
    (tests pass a maker that ignores the device).
    """
    return torch.randn(*shape, device=device)


def check_sizes(sizes: Sequence[int], what: str) -> None:
    if not sizes or any(n < 1 for n in sizes):
        raise DashboardError(f"{what} must be whole numbers of at least 1, got {tuple(sizes)}")


def check_budget(budget_s: float) -> None:
    if not MIN_SECTION_BUDGET_S <= budget_s <= MAX_SECTION_BUDGET_S:
        raise DashboardError(f"time budget must be between {MIN_SECTION_BUDGET_S} and {MAX_SECTION_BUDGET_S:g} s "
                             f"per section, got {budget_s} s")


@dataclass(frozen=True)
class Knob:
    """One setting a user may change; several sections may share one (the budget, the two sizes)."""

    name: str  # also the page's widget key, as f"wp_{name}"
    label: str
    default: float  # an int default makes a whole-number setting
    low: float
    high: float
    step: float | None = None


BUDGET = Knob("budget_s", "Seconds per section", SECTION_BUDGET_S, MIN_SECTION_BUDGET_S, 60.0, 0.5)
SMALL_N = Knob("small_n", "Small matrix n", 64, 1, MAX_CPU_N)  # marbles and the first call
LARGE_N = Knob("large_n", "Large matrix n", 1024, 1, MAX_CPU_N)


@dataclass(frozen=True)
class Snippet:
    """Code shown under a section's explanation; `right` marks a wrong/right pair."""

    code: str
    label: str = ""
    right: bool | None = None


def _no_snippets(gpu: str | None) -> tuple[Snippet, ...]:
    return ()


def _no_verbatim(result: object) -> str | None:
    return None


@dataclass(frozen=True)
class Section(Generic[C, R]):
    """Everything about one section, so adding a section is one file and one line in the registry."""

    key: str  # "timing_bug": session-state and widget keys, JSON field
    title: str  # "3. The timing bug: reading the clock too early"
    run: Callable[[C, JobHooks], R]  # holds its devices itself when timed
    configure: Callable[[Values], C]  # every knob's value -> this section's config
    knobs: tuple[Knob, ...]
    explain: Callable[[str | None, C], str]  # (GPU key or None, config) -> plain sentences
    summarize: Callable[[R], str]  # a result, partial or whole -> sentences quoting only measured numbers
    figure: Callable[[R], Any]  # a plotly Figure (plotly ships no type hints)
    timed: bool = True  # False: tiny and untimed, holds no device
    uses_gpu: bool = True  # False: times the CPU only, even where a GPU is present (the processes over gloo)
    snippets: Callable[[str | None], tuple[Snippet, ...]] = _no_snippets
    verbatim: Callable[[R], str | None] = _no_verbatim  # text to show exactly as produced (torch's own error)

    @property
    def name(self) -> str:
        """The CLI's spelling: 'timing-bug'."""
        return self.key.replace("_", "-")

    def config(self, values: Values | None = None) -> C:
        """The config from the given knob values, each missing one at its default."""
        given = values or {}
        return self.configure({k.name: given.get(k.name, k.default) for k in self.knobs})

    def devices(self, available: Sequence[str] | None = None) -> tuple[str, ...]:
        """The devices this section holds while it runs: none when untimed."""
        if not self.timed:
            return ()
        return timed_devices(available) if self.uses_gpu else (CPU,)

    def probe(self) -> MachineLoad | None:
        """How busy the machine is as this section is asked for (None for an untimed section); the page and
        the CLI show its notice beside the section's figure."""
        return probe_load() if self.timed else None

    def run_summarized(self, config: C, hooks: JobHooks = JobHooks()) -> dict[str, object]:
        """Run once and return what the CLI's --json and the benchmark keep: wall time (waiting in
        line included), the summary, and the raw result as plain JSON-ready data."""
        load = self.probe()
        start = time.perf_counter()
        result = self.run(config, hooks)
        return {"wall_s": time.perf_counter() - start, "summary": self.summarize(result),
                "verbatim": self.verbatim(result),  # the text a summary points to ("its message is below")
                "load": None if load is None else load.to_json(), "notice": None if load is None else load.notice,
                "result": dataclasses.asdict(result)}  # type: ignore[call-overload]


@contextmanager
def section_job(title: str, devices: Sequence[str], hooks: JobHooks, *,
                measure_load: bool = False) -> Iterator[RunningJob]:
    """Hold the devices a section times (waiting in line via `hooks`); run_job releases the GPU memory it cached.

    `measure_load`: probe the machine once the devices are held (`job.load`), for a section whose
    figures depend on free cores (marbles).
    """
    with run_job(devices, hooks, label=f"Why parallel: {title}", measure_load=measure_load) as job:
        yield job
