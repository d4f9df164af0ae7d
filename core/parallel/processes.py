"""Section 2, the marbles across processes: one big A @ B split by rows over K worker processes, then gathered.

The literal "split the bag and add the counts", with the engine that trains across machines
(torch.distributed over gloo, started by torchrun): core.parallel.process_worker is what each
process runs; this module holds the CPU, launches them through core.platform.torchrun, turns rank
0's events into `Measurement`s, and says what they mean. Threads (section 1) share one process's
memory; processes share nothing, so their partial results must travel, and that gather is a cost
more workers do not divide.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go
import torch

from core.errors import DashboardError
from core.parallel.figures import split_work_chart
from core.parallel.machine import CPU, require_memory, thread_ladder, usable_cores
from core.parallel.section import (
    BUDGET,
    LARGE_N,
    MAX_CPU_N,
    MAX_SECTION_BUDGET_S,
    SECTION_BUDGET_S,
    Knob,
    Section,
    Snippet,
    Values,
    check_budget,
    section_job,
)
from core.parallel.wording import as_fast_as, format_duration
from core.platform.units import seconds
from core.platform import torchrun
from core.platform.jobs import JobHooks, Progress, RunningJob
from core.platform.timing import Measurement
from core.results.load import MachineLoad

TITLE = "2. Marbles across processes: split the bag, add the counts"
MAX_PROCESSES = 16
PROCESSES = Knob("processes", "Most worker processes", 2, 1, MAX_PROCESSES)
MATRICES_PER_WORKER = 5  # A, B, the gathered C, the blocks, and rank 0's one-process C
WORKER_MODULE = "core.parallel.process_worker"
OVERSUBSCRIBE = 2  # at most this many processes per usable core: enough to show taking turns, not to swamp a server
Launch = Callable[[list[str], int, RunningJob, torchrun.Emit], torchrun.Launched]


@dataclass(frozen=True)
class ProcessesConfig:
    n: int = int(LARGE_N.default)  # A and B are n x n float32
    max_processes: int = int(PROCESSES.default)  # the ladder 1, 2, 4, ... up to this
    budget_s: float = SECTION_BUDGET_S  # timed rounds over the whole ladder; starting the processes is extra
    seed: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.n <= MAX_CPU_N:
            raise DashboardError(f"matrix size must be between 1 and {MAX_CPU_N}, got {self.n}")
        if not 1 <= self.max_processes <= MAX_PROCESSES:
            raise DashboardError(f"worker processes must be between 1 and {MAX_PROCESSES}, got {self.max_processes}")
        check_budget(self.budget_s)

    @property
    def ladder(self) -> tuple[int, ...]:
        return thread_ladder(self.max_processes)


@dataclass(frozen=True)
class ProcessStep:
    """k processes sharing the product: per round, the slowest worker's product and its whole round."""

    workers: int
    compute: Measurement  # my block @ B, the slowest worker's (k = 1: the whole product)
    round: Measurement  # product plus all_gather (waiting for the others included), the slowest worker's
    max_error: float  # largest |gathered C - one-process C| over the entries: the split changes no answer

    @property
    def gather_s(self) -> float:
        """What the round spends beyond counting: moving the blocks and waiting for the slowest friend."""
        return max(0.0, self.round.median_s - self.compute.median_s)

    @property
    def gather_share(self) -> float:
        return self.gather_s / self.round.median_s if self.round.median_s > 0 else 0.0


@dataclass(frozen=True)
class ProcessesResult:
    n: int
    steps: tuple[ProcessStep, ...]
    ladder: tuple[int, ...]
    startup_s: float | None  # launch until every worker had built A and B: not in any round
    cores: int  # cores this process may use: more workers than this take turns
    load: MachineLoad | None = None

    def baseline(self) -> ProcessStep | None:
        return next((s for s in self.steps if s.workers == 1), None)

    def speedup(self, step: ProcessStep) -> float | None:
        base = self.baseline()
        return None if base is None else base.round.median_s / step.round.median_s

    def ideal(self, workers: int) -> float | None:
        """One process's round shared perfectly among `workers`."""
        base = self.baseline()
        return None if base is None else base.round.median_s / workers


def measurement(rounds: list[float], first_round_s: float) -> Measurement:
    """A worker's per-round seconds as the engine's record (one round per block; the warm-up kept aside)."""
    if not rounds:
        raise DashboardError("a worker reported no timed rounds")
    return Measurement(times_s=tuple(float(t) for t in rounds), calls_per_block=1, first_call_s=float(first_round_s))


class _Collector:
    """Rank 0's events, turned into steps and reported as they arrive."""

    def __init__(self, config: ProcessesConfig, job: RunningJob, started: float) -> None:
        self.config, self.job, self.started = config, job, started
        self.steps: list[ProcessStep] = []
        self.startup_s: float | None = None
        self.error: str | None = None
        self.done = False

    def result(self) -> ProcessesResult:
        return ProcessesResult(self.config.n, tuple(self.steps), self.config.ladder, self.startup_s, usable_cores(),
                               self.job.load)

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "ready":
            self.startup_s = time.perf_counter() - self.started
        elif kind == "step":
            k = int(event["workers"])
            self.steps.append(ProcessStep(k, measurement(event["compute_s"], event["first_round_s"]),
                                          measurement(event["round_s"], event["first_round_s"]),
                                          float(event["max_error"])))
            self.job.report(Progress(len(self.steps), len(self.config.ladder),
                                     f"{k} process{'es' * (k > 1)}", self.result()))
        elif kind == "error":
            self.error = str(event.get("message"))
        elif kind == "done":
            self.done = True


def launcher_command(config: ProcessesConfig) -> list[str]:
    ladder = config.ladder
    timeout_s = MAX_SECTION_BUDGET_S + torchrun.DEFAULT_TIMEOUT_S  # the job's own cap ends a hung run sooner
    return torchrun.launcher_command(ladder[-1], WORKER_MODULE, [
        "--size", str(config.n), "--ladder", ",".join(map(str, ladder)), "--budget-s", f"{config.budget_s:g}",
        "--seed", str(config.seed), "--timeout-s", f"{timeout_s:g}"])


def run_processes(config: ProcessesConfig = ProcessesConfig(), hooks: JobHooks = JobHooks(), *,
                  launch: Launch = torchrun.follow) -> ProcessesResult:
    """Start the most processes of the ladder once, time every worker count, return what rank 0 reported.

    A Stop ends every process and unwinds like every section (the steps reported so far are kept by
    the caller's progress hook); a worker that dies is one clear error.
    """
    workers = config.ladder[-1]
    most = max(2, OVERSUBSCRIBE * usable_cores())
    if workers > most:  # a shared server: one student's Run must not fill it with processes
        raise DashboardError(f"at most {most} worker processes on this machine (twice its {usable_cores()} usable "
                             f"cores), not {workers}: more only take turns on the same cores")
    require_memory(MATRICES_PER_WORKER * workers * config.n * config.n, torch.device(CPU),
                   f"n = {config.n} on {workers} processes")
    with section_job(TITLE, [CPU], hooks, measure_load=True) as job:
        collector = _Collector(config, job, time.perf_counter())
        launched = launch(launcher_command(config), 1, job, collector.event)
        if launched.stopped:
            job.check()  # raises: Stop or the time cap
        if collector.error:
            raise DashboardError(collector.error)
        if launched.code != 0 or not collector.done:
            code = launched.code or 0
            raise DashboardError(f"a worker process failed: the torchrun launcher exited with code {code} "
                                 f"({torchrun.exit_meaning(code)}). The CPU is free again; run again, or with "
                                 "fewer processes or a smaller n")
        return collector.result()


def explain_processes(gpu: str | None, config: ProcessesConfig = ProcessesConfig()) -> str:
    engine = ("This is `torch.distributed` over gloo (the library PyTorch uses to pass data between processes on "
              "a CPU), started by `torchrun` (PyTorch's launcher: it starts the K processes and lets them find each "
              "other): the engine that trains across machines; "
              + (f"the GPU ({gpu}) sits this one out, and" if gpu else "there is no GPU here, and")
              + " with one GPU per process the same code would talk over NCCL.")
    return (
        "Threads (section 1) count from one shared bag; processes share nothing, so here each worker process holds "
        f"its own A and B (n = {config.n}), multiplies its block of A's rows by B (counts its marbles), and "
        "`all_gather` sends every block to every worker (adds up the counts). Each bar is one round as the slowest "
        "worker saw it: its product (blue), then the gather with the waiting for the others (orange), under the "
        "dashed line of one process's round shared perfectly; starting the processes takes seconds and is in no "
        "bar. " + engine
    )


def summarize_processes(result: ProcessesResult) -> str:
    lines = []
    base = result.baseline()
    for step in result.steps:
        speedup = result.speedup(step)
        if step.workers == 1 or base is None or speedup is None:
            lines.append(f"1 process: {format_duration(step.round.median_s)} per product.")
            continue
        match = "exactly" if step.max_error == 0 else f"to within {step.max_error:.1g}"
        lines.append(f"{step.workers} processes: {format_duration(step.round.median_s)} per product, "
                     f"{as_fast_as(speedup, 'one')} (ideal {step.workers}×); gathering the blocks took "
                     f"{step.gather_share:.0%} of each round; the answer matched one process's {match}.")
    if result.startup_s is not None:
        timed_s = sum(s.round.timed_s + s.round.first_call_s for s in result.steps)
        lines.append(f"Starting {result.ladder[-1]} worker processes took {seconds(result.startup_s)}, not counted "
                     "above" + (f": more than every round together ({seconds(timed_s)}). Processes pay off on long "
                                "jobs, not on one product." if result.startup_s > timed_s else "."))
    if result.ladder[-1] > result.cores:
        lines.append(f"This process may use {result.cores} core{'s' * (result.cores > 1)}: more workers than "
                     "that take turns on them, so they cannot be faster.")
    if result.load is not None and result.load.busy:
        lines.append("Other programs were keeping this machine busy: a worker then waits for a free core, and "
                     "everyone waits for the slowest worker. Run again when the machine is quiet.")
    return "\n\n".join(lines)


def _snippets(gpu: str | None) -> tuple[Snippet, ...]:
    return (Snippet("rows = -(-n // k)                       # equal blocks of A's rows\n"
                    "mine = A[rank * rows:(rank + 1) * rows]   # my share of the bag\n"
                    "part = mine @ B                           # count my marbles\n"
                    "dist.all_gather(parts, part)              # everyone gets every count\n"
                    "C = torch.cat(parts)[:n]"),)


def _configure(v: Values) -> ProcessesConfig:
    return ProcessesConfig(int(v[LARGE_N.name]), int(v[PROCESSES.name]), float(v[BUDGET.name]))


def processes_figure(result: ProcessesResult) -> go.Figure:
    """Milliseconds per product against worker processes: the slowest product and the gather stacked,
    the ideal dashed."""
    steps = result.steps
    ideal = [result.ideal(s.workers) for s in steps]
    return split_work_chart([s.workers for s in steps], [s.compute.median_s * 1e3 for s in steps],
                            [s.gather_s * 1e3 for s in steps], [None if i is None else i * 1e3 for i in ideal],
                            communication_name="all_gather (and waiting)", y_title="ms per product (median round)")


SECTION: Section[ProcessesConfig, ProcessesResult] = Section(
    key="processes", title=TITLE, run=run_processes, configure=_configure, knobs=(LARGE_N, PROCESSES, BUDGET),
    explain=explain_processes, summarize=summarize_processes, figure=processes_figure, snippets=_snippets,
    uses_gpu=False,
)
