"""The race on a student's own laptop, measured in the browser (kind "browser"), as the server judged it.

Version 1. A browser is an untrusted client: it reports raw samples only (per-call seconds of each
timed sample), the facts of its WebGPU adapter and its user agent; `core.browser.payload` checks them
and `core.browser.judge` computes everything else on the server with the Matmul race's rules. So the
statistics here are derived from `times_s` whenever a point is built or read (`computed_field`s: written
to JSON for other tools, never read back), and the verdicts and crossovers are computed by the server
when the run arrives (an import of an edited file cannot make its statistics disagree with its samples).

Series are named plainly: "webgpu float32" (the GPU, or the software adapter), "webgpu f16" (the same
kernel's arithmetic in half precision, where the adapter offers `shader-f16`), "webgpu split dispatches"
(at one size, the float32 product as `dispatches` small dependent dispatches), "wasm 1 worker" and
"wasm k workers" (the CPU through WebAssembly SIMD in Web Workers). A software adapter (SwiftShader:
the fallback flag, or its architecture) is labelled `SOFTWARE` wherever it shows and is never a GPU in
the room: the run's machine lists no GPU for it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from typing import Annotated, ClassVar

from pydantic import Field, PlainValidator, computed_field
from pydantic.dataclasses import dataclass

from core.results import fields as f
from core.results.guess import Guess
from core.results.crossover import Verdict
from core.results.machine import Machine, unknown_machine
from core.results.result_kind import Frame, ResultKind
from core.results.schema import Declared, Kind

KIND = "browser"
VERSION = 1
PROVENANCE = "reported by a browser"  # what the run's provenance says (core.results.runs.BROWSER)
SOFTWARE = "software, not a GPU"  # how a software adapter is labelled wherever it appears
GPU_SERIES = "webgpu float32"
F16_SERIES = "webgpu f16"
SPLIT_SERIES = "webgpu split dispatches"
WEBGPU_SERIES = (GPU_SERIES, F16_SERIES, SPLIT_SERIES)
ONE_WORKER = "wasm 1 worker"
GPU_STATES = ("ok", "insecure", "no_webgpu", "no_adapter", "lost", "error", "skipped")
CALLS = ("faster", "same", "unclear")
CROSSOVER_CALLS = ("found", "none", "unclear")


def workers_series(k: int) -> str:
    """The CPU series of k Web Workers ("wasm 4 workers"; one worker is `ONE_WORKER`)."""
    return ONE_WORKER if k == 1 else f"wasm {k} workers"


def is_software(vendor: str, architecture: str, fallback: bool) -> bool:
    """A software rasterizer, not a GPU: the fallback flag, or SwiftShader / a CPU-based adapter by name."""
    return fallback or architecture.lower() in ("swiftshader", "software") or "swiftshader" in vendor.lower()


@dataclass(frozen=True, kw_only=True)
class Adapter(Declared):
    """What the browser's WebGPU adapter says it is (GPUAdapter.info, limits and features)."""

    vendor: f.AnyText = ""
    architecture: f.AnyText = ""
    device: f.AnyText = ""
    description: f.AnyText = ""
    fallback: f.Flag = False  # adapter.info.isFallbackAdapter: a software adapter
    limits: f.Settings = Field(default_factory=dict)  # the few limits the sizes were capped by
    features: f.Items[f.Text] = ()  # 'timestamp-query', 'shader-f16', ...

    @property
    def software(self) -> bool:
        return is_software(self.vendor, self.architecture, self.fallback)

    @property
    def title(self) -> str:
        """'nvidia ampere', 'google swiftshader (software, not a GPU)': what a legend and the board call it."""
        parts = dict.fromkeys(p for p in (self.vendor, self.architecture, self.device) if p)
        name = " ".join(parts) or "unnamed adapter"
        return f"{name} ({SOFTWARE})" if self.software else name


Seconds = Annotated[float, PlainValidator(f.number_between())]


@dataclass(frozen=True, kw_only=True)
class BrowserPoint(Declared):
    """One size of one series: the per-call seconds of each sample, and what the server derives from them."""

    series: f.Text
    n: f.Size
    times_s: f.Items[Seconds] = ()  # per call: each sample's seconds over its repetitions
    reps: f.Size = 1  # calls per sample (enough to lift a sample well above the clock's resolution)
    unawaited_s: f.Number = None  # "forgot to wait": per call, submit() alone without awaiting the queue (GPU)
    rel_error: f.Number = None  # ||C - C_cpu|| / ||C_cpu||: the GPU's result checked against the CPU's
    timestamp_s: f.Items[Seconds] = ()  # per call by the GPU's timestamp queries, one per sample, where offered
    dispatches: f.OptionalSize = None  # SPLIT_SERIES: the dependent dispatches one call was split into

    @computed_field  # type: ignore[prop-decorator]
    @property
    def median_s(self) -> float | None:
        return statistics.median(self.times_s) if self.times_s else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def iqr_s(self) -> float | None:
        if len(self.times_s) < 2:
            return 0.0 if self.times_s else None
        q1, _, q3 = statistics.quantiles(self.times_s, n=4, method="inclusive")
        return q3 - q1

    @computed_field  # type: ignore[prop-decorator]
    @property
    def gflops(self) -> float | None:
        median = self.median_s
        return 2 * self.n**3 / median / 1e9 if median else None

    @property
    def timestamp_median_s(self) -> float | None:
        """The GPU's own clock's median per call (None where the adapter offers no timestamp queries)."""
        return statistics.median(self.timestamp_s) if self.timestamp_s else None

    @property
    def samples(self) -> int:
        return len(self.times_s)

    @property
    def label(self) -> str:
        return self.series

    @property
    def is_gpu(self) -> bool:
        return self.series in WEBGPU_SERIES


@dataclass(frozen=True, kw_only=True)
class BrowserCrossover(Declared):
    """From which size `challenger` beats `baseline` for good: found in (n_low, n_high], none, or unclear;
    `n` the medians' log-log estimate kept inside the interval."""

    challenger: f.Text
    baseline: f.Text
    call: Annotated[str, PlainValidator(f.one_of(CROSSOVER_CALLS))]
    n_low: f.OptionalSize = None
    n_high: f.OptionalSize = None
    n: f.OptionalSize = None

    @property
    def gpu_vs_cpu(self) -> bool:
        return self.challenger == GPU_SERIES

    @property
    def short(self) -> str:
        """A table cell: 'GPU wins from n≈300', 'no crossover' or 'crossover: cannot tell'."""
        who = "WebGPU" if self.gpu_vs_cpu else self.challenger
        if self.call == "unclear":
            return "crossover: cannot tell (too noisy)"
        if self.call == "none":
            return "no crossover"
        if self.n is not None:
            return f"{who} wins from n≈{self.n:,}"
        return f"{who} wins from n ≤ {self.n_high:,}" if self.n_low is None else \
            f"{who} wins from n between {self.n_low:,} and {self.n_high:,}"

    @property
    def sentence(self) -> str:
        if self.call == "found" and self.n_low is None:
            return f"{self.challenger} beats {self.baseline} at every measured size (from n ≤ {self.n_high:,})"
        if self.call == "found":
            return (f"{self.challenger} beats {self.baseline} from a size between n = {self.n_low:,} and "
                    f"{self.n_high:,} on")
        if self.call == "none":
            return f"no crossover in this range: {self.challenger} does not beat {self.baseline} for good"
        return f"cannot tell where {self.challenger} starts to beat {self.baseline}: the samples overlap"


@dataclass(frozen=True, kw_only=True)
class BrowserRun(Kind):
    """A race run in a student's browser: WebGPU against WebAssembly in 1 and k Web Workers."""

    kind: ClassVar[str] = KIND
    schema_version: ClassVar[int] = VERSION
    provenance: ClassVar[str] = PROVENANCE

    run_id: f.Text  # made in the browser, once per click: a rerun that hands the same run back is the same run
    user_agent: f.AnyText = ""
    cores: f.OptionalSize = None  # navigator.hardwareConcurrency
    workers: f.Size = 1  # k, the CPU's second series
    kernel: f.AnyText = ""  # the CPU's kernel: "WebAssembly SIMD", or with relaxed SIMD's fused multiply-add
    gpu: Annotated[str, PlainValidator(f.one_of(GPU_STATES))] = "ok"  # why there is no GPU series, if none
    gpu_note: f.Note = ""  # what the browser said (a lost device's reason, an error)
    adapter: Adapter | None = None
    points: f.Measured[BrowserPoint]
    verdicts: f.Items[Verdict] = ()  # the race's verdicts (core.matmul.verdict.judge), one per size and pair
    crossovers: f.Items[BrowserCrossover] = ()  # the headline (WebGPU against k workers) first
    guess: Guess | None = None
    stopped: f.Flag = False
    settings: f.Settings = Field(default_factory=dict)
    machine: Machine = Field(default_factory=unknown_machine)  # the student's laptop as the browser describes it

    @property
    def devices(self) -> list[str]:
        return ["webgpu", "cpu"] if any(p.is_gpu for p in self.points) else ["cpu"]

    @property
    def series(self) -> list[str]:
        return list(dict.fromkeys(p.series for p in self.points))

    @property
    def software(self) -> bool:
        return self.adapter is not None and self.adapter.software

    @property
    def measured_by(self) -> str:
        """'Chrome 140 on Linux, 8 threads': the browser as the run's machine names it."""
        return self.machine.cpu.name if self.machine.cpu is not None and self.machine.cpu.name else "a browser"

    @property
    def headline_crossover(self) -> BrowserCrossover | None:
        """WebGPU against k workers (the board's and Results' one crossover), else the first comparison."""
        return next((c for c in self.crossovers if c.gpu_vs_cpu), self.crossovers[0] if self.crossovers else None)

    @property
    def headline(self) -> str:
        sizes = [p.n for p in self.points] or [0]
        c = self.headline_crossover
        where = f" on {self.adapter.title}" if self.adapter is not None and any(p.is_gpu for p in self.points) \
            else f" (CPU only: {GPU_WHY.get(self.gpu, 'no WebGPU')})"
        return f"n {min(sizes)}–{max(sizes)}, {'no crossover' if c is None else c.short}{where}"


GPU_WHY = {"ok": "WebGPU ran", "insecure": "not a secure page", "no_webgpu": "this browser has no WebGPU",
           "no_adapter": "no usable GPU adapter", "lost": "the GPU device was lost", "error": "WebGPU failed",
           "skipped": "the GPU half was switched off"}


# ---- the kind's record (core/results/result_kind.py)

BROWSER_COLUMNS = ("device_title", "device", "n", "median_s", "iqr_s", "samples", "reps", "gflops", "unawaited_s",
                   "timestamp_s", "rel_error", "dispatches")


def _rows(run: BrowserRun, device_title: Callable[[str], str]) -> Iterator[tuple[str, dict[str, object]]]:
    """One row per (series, n); the GPU's title is its adapter's (a software one says so)."""
    gpu_title = run.adapter.title if run.adapter is not None else "WebGPU"
    for p in sorted(run.points, key=lambda p: (p.series, p.n)):
        title = gpu_title if p.is_gpu else f"browser CPU, {p.series}"
        yield f"{p.series}{f' ({SOFTWARE})' if p.is_gpu and run.software else ''}", {
            "device_title": title, "device": "webgpu" if p.is_gpu else "cpu", "n": p.n, "median_s": p.median_s,
            "iqr_s": p.iqr_s, "samples": p.samples, "reps": p.reps, "gflops": p.gflops,
            "unawaited_s": p.unawaited_s, "timestamp_s": p.timestamp_median_s, "rel_error": p.rel_error,
            "dispatches": p.dispatches}


RESULT_KIND = ResultKind(name=KIND, schema=BrowserRun, title="race in the browser", detect=("run_id", "user_agent"),
                         frame=Frame(BROWSER_COLUMNS, _rows, order=("run_id", "series", "n")), board=True)
