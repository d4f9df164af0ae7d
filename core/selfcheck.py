"""Can this machine's timings be trusted? A list of named checks, run by `python -m core selfcheck`.

On a CUDA machine it runs the Matmul race to n = 8192 (float32, and where the GPU has them, compute
capability 8.0 and newer, float32 with TF32 on and bfloat16: a T4 has neither), checks that
synchronize-then-read-the-clock agrees with CUDA events within 5%, and
that the unsynchronized figure is far below the true one. Without a GPU it runs the CPU checks
and reports the GPU ones as skipped, never as passed.

To add a check (for example "2-epoch CUDA training vs CPU"): write `def my_check(ctx: Context)
-> CheckResult`, and append `Check("my-check", my_check, needs_cuda=True, about="...")` to CHECKS.
A check that raises fails with the exception as its detail; a check that needs CUDA is skipped,
with the reason, where there is none.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from core.platform import timing
from core.classifier.model import ClassifierConfig
from core.platform.devices import available_devices, cuda_count, device_key
from core.errors import DashboardError
from core.platform.hardware import inspect_machine
from core.results.machine import Machine
from core.platform.jobs import JobHooks, run_job
from core.matmul.choices import log_sizes
from core.matmul.config import MatmulOptions, SweepConfig
from core.matmul.engine import cuda_event_seconds, make_operands, product, tf32_matmul
from core.matmul.series import DTYPES, has_tf32, supported_dtypes
from core.matmul.sweep import run_sweep
from core.results.crossover import sentence
from core.results.load import MachineLoad
from core.results.matmul import MatmulSweep
from core.classifier.features import synthetic_features
from core.classifier.training import LOSS_TOLERANCE, compare_devices_same_seed
from core.platform.units import byte_size, number, seconds

PASS, FAIL, SKIP = "pass", "fail", "skip"
GPU_SIZES = log_sizes(256, 8192)  # the sweep "to 8192"
GPU_BUDGET_S = 2.0  # per size and series: about a minute for the whole GPU sweep
CPU_SIZES = log_sizes(64, 1024)
CPU_BUDGET_S = 1.0  # generous: the size plan keeps n = 1024 even on a slow CPU
EVENT_SIZES = (1024, 4096, 8192)
EVENT_TOLERANCE = 0.05  # the issue: synchronized time within 5% of CUDA-event time
EVENT_REPEATS = 5  # event-timed blocks per size; their median is compared
UNSYNCED_FAR_BELOW = 0.1  # "far below": the unsynced figure under a tenth of the true one
TORCH_BENCH_SIZES = (256, 1024)
TORCH_BENCH_ROUNDS = 3
TORCH_BENCH_TOLERANCE = 0.10  # looser than bench/timing_accuracy.py's 5%: a quick check on a maybe busy machine
FLOAT32_MAX_ERROR = 1e-4  # float32 (no TF32) against float64 at n <= 8192: about 1e-6 expected
BFLOAT16_MAX_ERROR = 3e-2  # bfloat16 keeps 8 bits of mantissa: about 3e-3 expected
TF32_MIN_CAPABILITY = 8  # Ampere: the first GPUs with TF32 tensor cores (and native bfloat16)


@dataclass(frozen=True)
class Sizes:
    """How far the GPU checks go: the full self-check, or a quick one (the notebook's QUICK mode)."""

    gpu: tuple[int, ...] = GPU_SIZES
    gpu_budget_s: float = GPU_BUDGET_S
    events: tuple[int, ...] = EVENT_SIZES


FULL = Sizes()
QUICK = Sizes(gpu=log_sizes(256, 1024), gpu_budget_s=0.5, events=(1024,))


def gpu_sweep_config(device: torch.device, sizes: Sizes = FULL) -> SweepConfig:
    """The GPU sweep for `device`: float32, plus TF32 on and bfloat16 only where the GPU has them."""
    dtypes = ("float32", "bfloat16") if "bfloat16" in supported_dtypes(device) else ("float32",)
    tf32 = (False, True) if has_tf32(device) else (False,)
    return SweepConfig(sizes=sizes.gpu, devices=("cpu", device_key(device)), dtypes=dtypes, tf32=tf32,
                       options=MatmulOptions(budget_s=sizes.gpu_budget_s))


@dataclass(frozen=True)
class CheckResult:
    """What a check function returns."""

    passed: bool
    detail: str  # one line a person can act on
    data: dict[str, Any] = field(default_factory=dict)  # numbers behind the verdict, for the JSON
    load: MachineLoad | None = None  # how busy the machine was as the check's timed job started


@dataclass
class Context:
    """What checks share: the CUDA device (None without one) and expensive results worth reusing."""

    cuda: torch.device | None
    cache: dict[str, Any] = field(default_factory=dict)
    hooks: JobHooks | None = None  # the caller's: every check that holds a device waits in line through them
    sizes: Sizes = FULL

    def gpu(self) -> torch.device:
        """The CUDA device a CUDA-only check runs on; run_checks skips those checks without one."""
        if self.cuda is None:
            raise DashboardError("this check needs a CUDA GPU, and none is visible")
        return self.cuda

    def gpu_sweep(self) -> MatmulSweep:
        """The issue's GPU sweep, run once however many checks read it."""
        if "gpu_sweep" not in self.cache:
            self.cache["gpu_sweep"] = run_sweep(gpu_sweep_config(self.gpu(), self.sizes), self.hooks)
        return self.cache["gpu_sweep"]


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[Context], CheckResult]
    needs_cuda: bool = False
    about: str = ""
    times: bool = True  # does it check a timing? ("devices" only lists the hardware: it vouches for no timing)


@dataclass(frozen=True)
class Outcome:
    name: str
    status: str  # PASS, FAIL or SKIP
    detail: str
    seconds: float
    data: dict[str, Any] = field(default_factory=dict)
    timed: bool = True  # the check times something (Check.times)
    load: MachineLoad | None = None  # how busy the machine was as its timed job started (None: not probed)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["load"] = None if self.load is None else self.load.to_json()
        return out


@dataclass(frozen=True)
class Report:
    outcomes: tuple[Outcome, ...]
    machine: Machine
    wall_s: float
    finished_at: str

    @property
    def passed(self) -> bool:
        """No check failed (skipped ones do not count either way)."""
        return all(o.status != FAIL for o in self.outcomes)

    @property
    def skipped(self) -> list[str]:
        return [o.name for o in self.outcomes if o.status == SKIP]

    @property
    def timings_checked(self) -> int:
        """Checks of a timing that passed: none means nothing here vouches for a timing, whatever else passed."""
        return sum(o.status == PASS and o.timed for o in self.outcomes)

    @property
    def busy(self) -> MachineLoad | None:
        """The first busy load a timed check started under (machine_load's rule, as the Matmul race calls it)."""
        return next((o.load for o in self.outcomes if o.load is not None and o.load.busy), None)

    @property
    def headline(self) -> str:
        """What the report says about this machine's timings, in the race's words: failed, busy, nothing timed
        checked, or trusted; never "trusted" after checking no timing or on a machine the race calls busy."""
        if not self.passed:
            return "do not trust these timings yet"
        if self.busy is not None:
            return "the checks that ran passed, but the machine was busy: timings here may be noisy"
        if not self.timings_checked:
            return "no timing was checked, so nothing here vouches for the timings yet"
        return "timings here can be trusted"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "selfcheck",
            "schema_version": 1,
            "passed": self.passed,
            "checks": [o.to_dict() for o in self.outcomes],
            "skipped": self.skipped,
            "busy": self.busy is not None,
            "wall_s": self.wall_s,
            "finished_at": self.finished_at,
            "machine": self.machine.to_json(),
        }


# ---------------------------------------------------------------- CPU checks


def check_devices(ctx: Context) -> CheckResult:
    info = inspect_machine(free_memory=True)
    cpu = f"CPU {info.cpu.name}, {info.cpu.logical_cores} logical cores, torch uses {info.cpu.torch_threads} threads"
    gpus = [f"GPU {g.index} {g.name}, {byte_size(g.free_memory_bytes)} free of {byte_size(g.total_memory_bytes)}"
            for g in info.gpus]
    where = "; ".join(gpus) if gpus else "no CUDA GPU visible: the GPU checks will be skipped"
    return CheckResult(True, f"{cpu}; {where}", {"devices": available_devices(), "notes": info.notes})


def check_cpu_sweep(ctx: Context) -> CheckResult:
    """The CPU half of the race: every size timed, results plausible and exact to float32."""
    result = run_sweep(SweepConfig(sizes=CPU_SIZES, options=MatmulOptions(budget_s=CPU_BUDGET_S)), ctx.hooks)
    problems = [f"n={s.n} skipped: {s.message}" for s in result.skipped]
    for r in result.results:
        if not (r.median_s is not None and r.median_s > 0 and r.samples >= 1):
            problems.append(f"n={r.n}: implausible median {r.median_s} s from {r.samples} samples")
        if r.rel_error is None or r.rel_error > FLOAT32_MAX_ERROR:
            problems.append(f"n={r.n}: relative error {r.rel_error} above {FLOAT32_MAX_ERROR:g}")
    top = result.results[-1] if result.results else None
    detail = (f"{len(result.results)} sizes timed; n={top.n}: {seconds(top.median_s or 0)}, "
              f"{number(top.gflops or 0)} GFLOP/s, relative error {top.rel_error or 0:.1e}"
              if top else "nothing was timed")
    data = {"rows": [{k: v for k, v in r.to_json().items() if k != "times_s"} for r in result.results],
            "wall_s": result.wall_s, "timed_s": result.timed_s}
    return CheckResult(not problems and top is not None, "; ".join(problems) or detail, data, result.load)


CPP_EXTENSION_LOGGER = "torch.utils.cpp_extension"  # logs "No CUDA runtime is found" when it is imported


@contextmanager
def quiet_cpp_extension() -> Iterator[None]:
    """Importing torch.utils.cpp_extension on pip's default (CUDA) torch without a GPU logs, at import,
    `[W1201 ...] No CUDA runtime is found, using CUDA_HOME=...` (the module looks for a CUDA toolkit to
    compile extensions with, and CUDA_HOME or /usr/local/cuda exists, as on Colab's CPU runtime). Its
    logger is raised to ERROR for the import only, so no other warning is lost."""
    log = logging.getLogger(CPP_EXTENSION_LOGGER)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def agreement_with_torch_benchmark(n: int, *, threads: int, rounds: int, budget_s: float) -> list[dict[str, float]]:
    """This engine's median against torch.utils.benchmark's blocked_autorange median, interleaved.

    Both time the same call on the same matrices with the same thread count (Timer defaults
    to one thread, so it is passed explicitly); the two take turns, so drift hits both alike.
    torch.utils.benchmark is imported here, not at the top: it imports torch.utils.cpp_extension,
    which on a CUDA build without a CUDA runtime logs "No CUDA runtime is found" to stderr, and
    that line would precede every one-line error of `python -m core`. Even here it is imported
    with that logger quietened (`quiet_cpp_extension`): the warning is about compiling C++
    extensions, which nothing here does.
    """
    with quiet_cpp_extension():
        from torch.utils import benchmark  # here, not at the top: see the docstring

    cpu = torch.device("cpu")
    rows = []
    with timing.torch_threads(threads):
        ops = make_operands(cpu, DTYPES["float32"], n, seed=0, end_to_end=False)
        fn = product(ops)
        timer = benchmark.Timer(stmt="torch.matmul(a, b, out=c)",
                                globals={"torch": torch, "a": ops.a, "b": ops.b, "c": ops.c},
                                num_threads=threads)
        for i in range(rounds):
            if i % 2 == 0:  # alternate who goes first, so neither always runs on a warmer cache
                ours = timing.measure(fn, cpu, budget_s=budget_s)
                theirs = timer.blocked_autorange(min_run_time=budget_s)
            else:
                theirs = timer.blocked_autorange(min_run_time=budget_s)
                ours = timing.measure(fn, cpu, budget_s=budget_s)
            rows.append({"n": n, "threads": threads, "engine_s": ours.median_s, "torch_s": theirs.median,
                         "ratio": ours.median_s / theirs.median, "engine_samples": ours.samples,
                         "torch_samples": len(theirs.times)})
    return rows


def check_cpu_vs_torch_benchmark(ctx: Context) -> CheckResult:
    """The engine's method agrees with torch.utils.benchmark's (one thread: the method, not the scaling)."""
    rows = []
    with run_job(["cpu"], ctx.hooks, label="self-check: engine vs torch.utils.benchmark", measure_load=True,
                 needed_cores=1) as job:
        for n in TORCH_BENCH_SIZES:
            rows += agreement_with_torch_benchmark(n, threads=1, rounds=TORCH_BENCH_ROUNDS, budget_s=0.3)
    ratios = {n: statistics.median(r["ratio"] for r in rows if r["n"] == n) for n in TORCH_BENCH_SIZES}
    bad = {n: q for n, q in ratios.items() if abs(q - 1) > TORCH_BENCH_TOLERANCE}
    text = ", ".join(f"n={n}: {q:.3g}" for n, q in ratios.items())
    return CheckResult(not bad, f"median ratio engine / torch.utils.benchmark: {text} "
                                f"(tolerance ±{TORCH_BENCH_TOLERANCE:.0%})", {"rows": rows}, job.load)


# ---------------------------------------------------------------- CUDA checks


def judge_gpu_sweep(result: MatmulSweep, capability_major: int, top_size: int = max(GPU_SIZES)) -> CheckResult:
    """Every GPU size timed to `top_size`; float32 exact; where the GPU has them (compute capability
    8.0 and newer), TF32 visibly less exact and bfloat16 within its tolerance.

    A GPU without TF32 and bfloat16 (a T4) is judged on float32 alone: those series are not planned
    there, and any that a sweep holds anyway are not asked for.
    """
    gpu_rows = [r for r in result.results if r.is_gpu]
    problems = [f"{s.series} n={s.n} skipped: {s.message}" for s in result.skipped if s.device != "cpu"]
    top = max((r.n for r in gpu_rows), default=0)
    at_top = {r.label: r for r in gpu_rows if r.n == top}
    ampere = capability_major >= TF32_MIN_CAPABILITY
    fp32 = next((r for r in at_top.values() if r.dtype == "float32" and not r.tf32), None)
    tf32 = next((r for r in at_top.values() if r.dtype == "float32" and r.tf32 is True), None)
    bf16 = next((r for r in at_top.values() if r.dtype == "bfloat16"), None)
    if top < top_size:
        problems.append(f"the GPU sweep reached n={top}, not {top_size}")
    expected = {"float32": fp32, **({"float32 TF32 on": tf32, "bfloat16": bf16} if ampere else {})}
    missing = [name for name, r in expected.items() if r is None]
    no_error = [name for name, r in expected.items() if r is not None and r.rel_error is None]
    if missing:
        problems.append(f"a GPU series is missing at the largest size: {', '.join(missing)}")
    elif no_error:
        problems.append(f"a GPU series at the largest size has no relative error figure: {', '.join(no_error)}")
    else:
        fp32_error = fp32.rel_error if fp32 is not None else None
        if fp32_error is not None and fp32_error > FLOAT32_MAX_ERROR:
            problems.append(f"float32 (TF32 off) relative error {fp32_error:.1e} above {FLOAT32_MAX_ERROR:g}")
        if ampere and bf16 is not None and bf16.rel_error is not None and bf16.rel_error > BFLOAT16_MAX_ERROR:
            problems.append(f"bfloat16 relative error {bf16.rel_error:.1e} above {BFLOAT16_MAX_ERROR:g}")
        if (ampere and tf32 is not None and tf32.rel_error is not None and fp32_error is not None
                and not tf32.rel_error > 2 * fp32_error):
            problems.append(f"TF32 on changed nothing (error {tf32.rel_error:.1e} vs {fp32_error:.1e}): "
                            "is torch.backends.cuda.matmul's TF32 setting honoured?")
    if not ampere and any(r.tf32 for r in gpu_rows):
        problems.append(f"a series is recorded with TF32 on, but compute capability {capability_major}.x has none")
    lead = next(iter(result.shown_crossovers), None)  # the sentence the race page shows first
    speeds = ", ".join(f"{label} {number(r.gflops or 0)} GFLOP/s" for label, r in at_top.items())
    detail = (f"n={top}: {speeds}; {sentence(lead, result.verdicts) if lead else 'no crossover computed'}")
    data = {"sweep": result.to_json()}
    return CheckResult(not problems, "; ".join(problems) or detail, data, result.load)


def check_gpu_sweep(ctx: Context) -> CheckResult:
    major = torch.cuda.get_device_properties(ctx.gpu()).major
    return judge_gpu_sweep(ctx.gpu_sweep(), major, max(ctx.sizes.gpu))


def alternate(first: Callable[[], float], second: Callable[[], float], rounds: int) -> tuple[list[float], list[float]]:
    """Each of two timings `rounds` times, taking turns and swapping who goes first every round.

    Back to back (all clock blocks, then all event blocks) a GPU warming up or clocking down, or
    another process's burst, would fall on one method only and read as their disagreement.
    """
    a: list[float] = []
    b: list[float] = []
    for i in range(rounds):
        if i % 2 == 0:
            a.append(first())
            b.append(second())
        else:
            b.append(second())
            a.append(first())
    return a, b


def check_cuda_events(ctx: Context) -> CheckResult:
    """Synchronize-then-read-the-clock against CUDA events on the same blocks of products, alternating."""
    device = ctx.gpu()
    rows = []
    with run_job([device_key(device)], ctx.hooks, label="self-check: clock vs CUDA events"), \
            tf32_matmul(False, device):
        for n in ctx.sizes.events:
            fn = product(make_operands(device, DTYPES["float32"], n, seed=0, end_to_end=False))
            calls = timing.measure(fn, device, budget_s=0.2, min_samples=1).calls_per_block  # warm-up, block size
            clock_times, event_times = alternate(
                lambda: timing.time_block(fn, calls, device) / calls,  # noqa: F821 - runs before the `del` below
                lambda: cuda_event_seconds(fn, device, calls),  # noqa: F821 - runs before the `del` below
                EVENT_REPEATS)
            clock_s, events_s = statistics.median(clock_times), statistics.median(event_times)
            rows.append({"n": n, "clock_s": clock_s, "events_s": events_s, "ratio": clock_s / events_s,
                         "calls_per_block": calls})
            del fn
    bad = [r for r in rows if abs(r["ratio"] - 1) > EVENT_TOLERANCE]
    text = ", ".join(f"n={r['n']}: {r['ratio']:.3g}" for r in rows)
    return CheckResult(not bad, f"clock / CUDA events: {text} (tolerance ±{EVENT_TOLERANCE:.0%})", {"rows": rows})


def check_unsynced_far_below(ctx: Context) -> CheckResult:
    """The 'forgot to synchronize' figure must be far below the truth at the largest size."""
    result = ctx.gpu_sweep()
    rows = [r for r in result.results if r.is_gpu and r.unsynced_s is not None and r.median_s]
    if not rows:
        return CheckResult(False, "no unsynchronized figure was measured on the GPU")
    top = max(r.n for r in rows)
    data: list[dict[str, Any]] = []
    problems: list[str] = []
    for r in (r for r in rows if r.n == top):
        unsynced, median = r.unsynced_s, r.median_s
        if unsynced is None or not median:  # filtered above; says so to the type checker too
            continue
        ratio = unsynced / median
        data.append({"series": r.label, "n": top, "median_s": median, "unsynced_s": unsynced,
                     "ratio": ratio})
        if ratio > UNSYNCED_FAR_BELOW:
            problems.append(f"{r.label}: unsynced {seconds(unsynced)} is {ratio:.0%} of {seconds(median)}")
    text = ", ".join(f"{d['series']}: {seconds(d['unsynced_s'])} vs {seconds(d['median_s'])}" for d in data)
    return CheckResult(not problems, "; ".join(problems) or f"n={top}: {text}", {"rows": data})


SELFCHECK_DOCS, SELFCHECK_VOCAB, SELFCHECK_WORDS = 1000, 2000, 40  # synthetic reviews: no download needed


def check_train_same_seed(ctx: Context) -> CheckResult:
    """The review classifier for 2 epochs on the CPU and on CUDA from one seed: the losses must agree."""
    features = synthetic_features(SELFCHECK_DOCS, SELFCHECK_VOCAB, SELFCHECK_WORDS)
    cmp = compare_devices_same_seed(features, ClassifierConfig(), ("cpu", device_key(ctx.gpu())), epochs=2,
                                    hooks=ctx.hooks)
    data = {"devices": list(cmp.devices), "train_losses": [list(t) for t in cmp.train_losses],
            "test_losses": [list(t) for t in cmp.test_losses], "seconds": list(cmp.seconds),
            "max_loss_difference": cmp.max_loss_difference, "tolerance": LOSS_TOLERANCE}
    detail = (f"largest loss difference {cmp.max_loss_difference:.2e} (tolerance {LOSS_TOLERANCE:g}); "
              f"{seconds(cmp.seconds[0])} on {cmp.devices[0]}, {seconds(cmp.seconds[1])} on {cmp.devices[1]}")
    return CheckResult(cmp.close(LOSS_TOLERANCE), detail, data)


CHECKS: list[Check] = [
    Check("devices", check_devices, about="what CPU and GPUs torch sees", times=False),
    Check("cpu-sweep", check_cpu_sweep, about=f"CPU float32 race, n = {CPU_SIZES[0]}..{CPU_SIZES[-1]}"),
    Check("cpu-vs-torch-benchmark", check_cpu_vs_torch_benchmark,
          about="engine median vs torch.utils.benchmark, interleaved, one thread"),
    Check("gpu-sweep", check_gpu_sweep, needs_cuda=True,
          about="CPU vs GPU to n = 8192: float32, and TF32 on and bfloat16 where the GPU has them; crossover"),
    Check("cuda-events", check_cuda_events, needs_cuda=True, about="synchronized clock vs CUDA events within 5%"),
    Check("unsynced-far-below", check_unsynced_far_below, needs_cuda=True,
          about="the unsynchronized figure is under a tenth of the true one"),
    Check("train-same-seed", check_train_same_seed, needs_cuda=True,
          about="review classifier, 2 epochs from one seed on CPU and CUDA: losses within 1e-3"),
]


def select(names: Sequence[str] | None, checks: Sequence[Check] = CHECKS) -> list[Check]:
    """The named checks in their listed order (all when `names` is None); unknown names are an error."""
    if names is None:
        return list(checks)
    known = {c.name for c in checks}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise DashboardError(f"unknown check {', '.join(map(repr, unknown))}; choose from: {', '.join(sorted(known))}")
    return [c for c in checks if c.name in names]


def run_checks(checks: Sequence[Check] = CHECKS, *, on_outcome: Callable[[Outcome], None] | None = None,
               hooks: JobHooks | None = None, sizes: Sizes = FULL) -> Report:
    """Run each check once, in order; one check's failure or crash does not stop the others.

    `hooks` go to every job a check runs (the CLI prints the waiting line through them); `sizes`
    says how far the GPU checks go (QUICK for a trial run).
    """
    ctx = Context(cuda=torch.device("cuda", 0) if cuda_count() > 0 else None, hooks=hooks, sizes=sizes)
    outcomes = []
    start = time.perf_counter()
    for check in checks:
        t0 = time.perf_counter()
        if check.needs_cuda and ctx.cuda is None:
            outcome = Outcome(check.name, SKIP, "needs a CUDA GPU; none is visible here", 0.0, timed=check.times)
        else:
            try:
                result = check.run(ctx)
                outcome = Outcome(check.name, PASS if result.passed else FAIL, result.detail,
                                  time.perf_counter() - t0, result.data, check.times, result.load)
            except Exception as exc:  # noqa: BLE001 - a crashing check is a failed check, reported
                outcome = Outcome(check.name, FAIL, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0,
                                  timed=check.times)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return Report(tuple(outcomes), inspect_machine().record(), time.perf_counter() - start,
                  time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
