"""The race in the browser's figure: time (or GFLOP/s) per series against n, drawn as Results overlays runs."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from core.charts.results import matmul_overlay
from core.results.browser import SOFTWARE, BrowserRun


def race_figure(run: BrowserRun, metric: str = "median_s") -> go.Figure:
    """One line per series (WebGPU solid, WebAssembly dashed), the samples' IQR as error bars."""
    rows = [{"series": p.series + (f" ({SOFTWARE})" if p.is_gpu and run.software else ""), "n": p.n,
             "device": "webgpu" if p.is_gpu else "cpu", "median_s": p.median_s, "iqr_s": p.iqr_s,
             "gflops": p.gflops, "samples": p.samples, "machine": "this browser"}
            for p in sorted(run.points, key=lambda p: (p.series, p.n))]
    return matmul_overlay(pd.DataFrame(rows), metric, reference=False)
