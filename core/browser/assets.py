"""What the page hands the browser: the component's HTML, CSS and JavaScript, and the data a run needs.

The files beside this module ship in the wheel (pyproject's package-data): race.js (the component, an ES
module for `st.components.v2.component`), worker.js (one Web Worker), matmul.wgsl (the GPU's kernel; its f16
variant is made from it by core/browser/half.py),
matmul.wat and matmul.wasm (the CPU's kernel, its text and the bytes `wat2wasm` made of it), matmul_fma.wat
and .wasm (the same with fused multiply-adds, core/browser/fused.py; the workers take it where the browser
validates it); manifest.json records the hashes, tests/browser/test_browser_kernel.py checks they match. Text is
passed inline: the component API takes a one-line string that looks like a path for a file name, and these
are many lines.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from core.browser.half import MAX_REL_ERROR_F16, half
from core.browser.payload import MAX_REL_ERROR
from core.errors import DashboardError

COMPONENT = "gvc_browser_race"
SIZES = (64, 128, 256, 512, 1024, 2048)  # what the page offers; the browser stops early past its budget
DEFAULT_SIZES = (64, 512)
SAMPLES = 5  # per size and series: the race's verdicts need at least 3
MIN_SAMPLE_MS = 20.0  # a sample's length at least: 200 steps of performance.now()'s 0.1 ms
MAX_REPS = 10_000
WATCHDOG_MS = 500.0  # no GPU call near the operating system's ~2 s watchdog: stop growing past a quarter of it
MAX_WORKERS = 8  # k: more workers than this each copy A and B for little more speed
AUTO_WORKERS = 0  # k = the laptop's own logical cores (navigator.hardwareConcurrency), 2 to MAX_WORKERS
WORKER_CHOICES = (AUTO_WORKERS, 2, 4, 8)
BUDGETS_S = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)  # 30-60 s: a software adapter at n = 512
SPLIT_MAX_N = 256  # the dispatch lesson at the run's largest size up to this (16 dispatches of one tile slice)

WEBGPU_BROWSERS = "Chrome or Edge 113 or later, Safari 26, or Firefox 141 or later on Windows"
MESSAGES = {
    "insecure": ("This page is not a secure context ({origin}), so the browser hides WebGPU: open the dashboard over "
                 "https (docs/classroom.md gives the teacher's settings and a command that makes a certificate) or "
                 "on http://localhost, or list this address in Chrome's "
                 "chrome://flags/#unsafely-treat-insecure-origin-as-secure. The CPU half still runs."),
    "no_webgpu": f"This browser has no WebGPU: use {WEBGPU_BROWSERS}. The CPU half still runs.",
    "no_adapter": ("WebGPU is there but offered no adapter: no usable GPU (a blocked driver, a virtual machine, or "
                   "hardware acceleration switched off in the browser's settings). The CPU half still runs."),
    "lost": "The GPU device was lost (a driver reset or the system's watchdog); the sizes finished before are kept",
    "skipped": "The GPU half was switched off for this run.",
    "error": "WebGPU failed to start; the CPU half still ran.",
}


@dataclass(frozen=True)
class Parts:
    """The component's inline HTML, CSS and JavaScript."""

    html: str
    css: str
    js: str


HTML = """<div class="gvc-race">
  <div class="gvc-row">
    <button id="gvc-run" type="button">Run in this browser</button>
    <button id="gvc-stop" type="button" disabled>Stop</button>
    <progress id="gvc-bar" max="1" value="0"></progress>
  </div>
  <div id="gvc-status" role="status"></div>
  <div id="gvc-gpu"></div>
</div>
"""
CSS = """
.gvc-race { font-family: inherit; }
.gvc-row { display: flex; gap: 0.5rem; align-items: center; }
.gvc-row button { padding: 0.35rem 0.9rem; border-radius: 0.5rem; border: 1px solid #999; cursor: pointer; }
#gvc-run { background: #ff4b4b; color: white; border-color: #ff4b4b; }
.gvc-row button:disabled { opacity: 0.5; cursor: default; }
#gvc-bar { flex: 1; height: 0.8rem; }
#gvc-status, #gvc-gpu { margin-top: 0.3rem; font-size: 0.9rem; }
"""


def text(name: str) -> str:
    """One of the package's files, as text."""
    return resources.files("core.browser").joinpath(name).read_text(encoding="utf-8")


def wasm_bytes(name: str = "matmul.wasm") -> bytes:
    """A compiled kernel: matmul.wasm (128-bit SIMD), or matmul_fma.wasm (with relaxed SIMD's fused multiply-add)."""
    return resources.files("core.browser").joinpath(name).read_bytes()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest() -> dict[str, str]:
    """The hashes of matmul.wat and of the matmul.wasm compiled from it (what the kernel test checks)."""
    loaded: dict[str, str] = json.loads(text("manifest.json"))
    return loaded


@cache
def parts() -> Parts:
    """The component's parts (read once per process)."""
    return Parts(HTML, CSS, text("race.js"))


def race_data(sizes: tuple[int, ...], *, budget_s: float = 2.0, workers: int = AUTO_WORKERS, gpu: bool = True,
              samples: int = SAMPLES) -> dict[str, Any]:
    """What the component gets: the sizes to try (smallest first), the limits, the kernels and the messages."""
    if not sizes or any(n not in SIZES for n in sizes):
        raise DashboardError(f"sizes must be chosen from {', '.join(map(str, SIZES))}")
    if not 0 <= workers <= MAX_WORKERS:
        raise DashboardError(f"workers must be 1 to {MAX_WORKERS} (0: the laptop's own cores)")
    ordered = sorted(set(sizes))
    return {"sizes": ordered, "budget_s": float(budget_s), "workers": workers, "max_workers": MAX_WORKERS,
            "gpu": gpu, "split_n": split_size(ordered), "max_rel_error": MAX_REL_ERROR,
            "max_rel_error_f16": MAX_REL_ERROR_F16,
            "samples": samples, "min_sample_ms": MIN_SAMPLE_MS, "max_reps": MAX_REPS, "watchdog_ms": WATCHDOG_MS,
            "wasm": base64.b64encode(wasm_bytes()).decode("ascii"),
            "wasm_fma": base64.b64encode(wasm_bytes("matmul_fma.wasm")).decode("ascii"), "worker": text("worker.js"),
            "wgsl": text("matmul.wgsl"), "wgsl_f16": half(text("matmul.wgsl")), "messages": MESSAGES}


def split_size(sizes: list[int]) -> int:
    """Where the dispatch lesson runs: the largest size up to SPLIT_MAX_N, else the smallest."""
    return max((n for n in sizes if n <= SPLIT_MAX_N), default=min(sizes))


def sizes_between(low: int, high: int) -> tuple[int, ...]:
    """The offered sizes from low to high."""
    return tuple(n for n in SIZES if low <= n <= high)
