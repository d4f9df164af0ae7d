"""The race in the browser against torch on the same CPU: is the WebAssembly kernel and the WebGPU timing honest?

A real `streamlit run app.py` (its own store), headless Chromium with `--enable-unsafe-webgpu` (here a software
adapter, SwiftShader; on a laptop with a GPU, its GPU), Race on your laptop clicked for sizes 64 to 512 with k =
the CPU's cores (at least 2) workers, the run read back from the store; then, in the same process, torch's own
float32 `A @ B` on 1 thread with the same rule for samples (warm-up, calls per sample >= 20 ms, the median of 5).
Per size it prints and writes to bench/results/browser.json a list of points {series, n, median_s, gflops}:
"wasm 1 worker", "wasm k workers", "webgpu awaited", "webgpu timestamp", "webgpu not awaited", "webgpu f16
awaited" and "webgpu f16 timestamp" (where the adapter offers shader-f16), "webgpu 16 dependent dispatches" (at
one size), "torch 1 thread"; and the ratios the issue asks for: WebAssembly in one worker against torch on one
thread at n = 512, the GPU's timestamp time against its awaited time at every size >= 128, and one dispatch
against many. The budget per size defaults to 60 s: SwiftShader needs it to reach n = 512.

    python bench/browser.py [--sizes 64,128,256,512] [--budget 60]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.classroom_server import _free_port, _start_server  # noqa: E402
from core.browser.assets import BUDGETS_S, SIZES  # noqa: E402
from core.results.browser import F16_SERIES, SPLIT_SERIES  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", "--enable-unsafe-webgpu"]
MIN_SAMPLE_S, SAMPLES = 0.02, 5  # race.js's rule


def torch_one_thread(n: int) -> float:
    """Median seconds per call of torch's float32 A @ B on one thread, sampled as race.js samples."""
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    reps, per_call = 1, 0.0
    while True:
        began = time.perf_counter()
        for _ in range(reps):
            a @ b
        per_call = (time.perf_counter() - began) / reps
        if per_call * reps >= MIN_SAMPLE_S:
            break
        reps = max(2 * reps, int(MIN_SAMPLE_S / max(per_call, 1e-7)) + 1)
    times = []
    for _ in range(SAMPLES):
        began = time.perf_counter()
        for _ in range(reps):
            a @ b
        times.append((time.perf_counter() - began) / reps)
    return statistics.median(times)


def browser_run(sizes: list[int], budget: float, home: Path):
    """Click Race on your laptop in headless Chromium; the run as the server saved it."""
    from playwright.sync_api import sync_playwright

    from core.store.database import open_store

    env = {**os.environ, "GPU_VS_CPU_CACHE_DIR": f"{home}/cache", "GPU_VS_CPU_DATA_DIR": f"{home}/data",
           "GPU_VS_CPU_LOCK_DIR": f"{home}/locks"}
    env.pop("DATABASE_URL", None)
    port = _free_port()
    server = _start_server(port, env)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(120_000)
            page.goto(f"http://127.0.0.1:{port}")
            page.get_by_role("link", name="Race on your laptop").click()
            page.get_by_role("heading", name="Race on your laptop").wait_for()
            _choose(page, sizes, budget)
            page.get_by_role("button", name="Run in this browser").click()
            page.get_by_text("it is on the Results page and the Class board").wait_for(timeout=900_000)
            browser.close()
    finally:
        server.terminate()
        server.wait(30)
    (run,) = open_store(f"sqlite:///{home}/data/results.sqlite3").list_runs(kind="browser")
    return run.result


def _choose(page, sizes: list[int], budget: float) -> None:
    """The size slider's two thumbs and the budget moved with the keyboard (as a student would)."""
    sliders = page.locator('[data-testid="stSlider"]')
    size_thumbs = sliders.filter(has_text="Matrix sizes n").get_by_role("slider")
    budget_thumb = sliders.filter(has_text="Time budget").get_by_role("slider").first
    wanted = min(BUDGETS_S, key=lambda b: abs(b - budget))
    for thumb, target, offered in ((size_thumbs.nth(0), min(sizes), SIZES), (size_thumbs.nth(1), max(sizes), SIZES),
                                   (budget_thumb, wanted, BUDGETS_S)):
        thumb.focus()
        for _ in range(len(offered)):  # a select slider shows its value as aria-valuetext
            now = float(thumb.get_attribute("aria-valuetext") or "nan")
            if now == target:
                break
            thumb.press("ArrowRight" if now < target else "ArrowLeft")
            page.wait_for_timeout(400)
        else:
            raise RuntimeError(f"could not move a slider to {target}")
    page.wait_for_timeout(1500)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,128,256,512")
    parser.add_argument("--budget", type=float, default=60.0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as home:
        run = browser_run(sizes, args.budget, Path(home))
    points = []
    for p in run.points:
        if p.series == SPLIT_SERIES:
            points.append({"series": f"webgpu {p.dispatches} dependent dispatches", "n": p.n, "median_s": p.median_s,
                           "gflops": p.gflops})
        elif p.is_gpu:
            name = "webgpu f16" if p.series == F16_SERIES else "webgpu"
            for series, seconds in ((f"{name} awaited", p.median_s), (f"{name} timestamp", p.timestamp_median_s),
                                    (f"{name} not awaited", p.unawaited_s)):
                if seconds is not None:
                    points.append({"series": series, "n": p.n, "median_s": seconds,
                                   "gflops": 2 * p.n**3 / seconds / 1e9 if seconds else None})
        else:
            points.append({"series": p.series, "n": p.n, "median_s": p.median_s, "gflops": p.gflops})
    for n in sorted({p.n for p in run.points}):
        seconds = torch_one_thread(n)
        points.append({"series": "torch 1 thread", "n": n, "median_s": seconds, "gflops": 2 * n**3 / seconds / 1e9})
    out = ROOT / "bench" / "results" / "browser.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(points, indent=1) + "\n")
    adapter = run.adapter.title if run.adapter else f"no WebGPU ({run.gpu})"
    print(f"{run.measured_by}; CPU kernel: {run.kernel}; adapter: {adapter}")
    print(f"{'series':<34}{'n':>6}{'median ms':>12}{'GFLOP/s':>10}")
    for p in sorted(points, key=lambda p: (p["n"], p["series"])):
        print(f"{p['series']:<34}{p['n']:>6}{p['median_s'] * 1e3:>12.4g}{p['gflops'] or 0:>10.3g}")
    at = {(p["series"], p["n"]): p for p in points}
    if ("wasm 1 worker", 512) in at:
        share = at["wasm 1 worker", 512]["gflops"] / at["torch 1 thread", 512]["gflops"]
        print(f"wasm 1 worker / torch 1 thread at n = 512: {share:.0%} of torch's GFLOP/s")
    for n in sorted({p["n"] for p in points}):
        if n >= 128 and ("webgpu timestamp", n) in at:
            gap = at["webgpu timestamp", n]["median_s"] / at["webgpu awaited", n]["median_s"] - 1
            print(f"n = {n}: the GPU's timestamps against the awaited wall clock: {gap:+.1%}")
    for p in points:
        if p["series"].endswith("dependent dispatches") and ("webgpu awaited", p["n"]) in at:
            one = at["webgpu awaited", p["n"]]["median_s"]
            print(f"n = {p['n']}: {p['series']} against one: {p['median_s'] / one:.3g}× the time")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
