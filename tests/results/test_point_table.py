"""A matmul point's statistics derive from its samples, and its one table (issue 29): the race page, the CLI
and every CSV take labels, units and columns from MatmulPoint's declaration."""

from __future__ import annotations

import re
import statistics

import pytest

from core.cli.matmul import COPY_HEADERS, render
from core.matmul.engine import measured_point
from core.matmul.series import Series
from core.matmul.config import SweepConfig
from core.matmul.report import sweep_of
from core.platform.timing import Measurement
from core.results.kinds import read_result
from core.results.matmul import MatmulPoint, PointClock
from core.results.table import columns, human_rows, human_table
from core.store.database import open_store
from core.store.board import exports, sweep_csv

CPU1, CPU2 = Series("cpu", "float32", threads=1), Series("cpu", "float32", threads=2)


def _point(series: Series, n: int, seconds: float) -> MatmulPoint:
    times = (seconds * 0.9, seconds, seconds * 1.3, seconds * 1.1, seconds)
    return measured_point(series, n, Measurement(times, 1, seconds), None, None, None, 1e-7, series.threads, None,
                          others_cores=0.1, clock=PointClock(cpu_mhz=2600.0))


def _sweep():
    points = [_point(s, n, t * (n / 256) ** 3) for s, t in ((CPU1, 2e-3), (CPU2, 1.2e-3)) for n in (128, 256)]
    return sweep_of(SweepConfig(sizes=(128, 256), devices=("cpu",), threads=(1, 2)), [CPU1, CPU2], points,
                    finished_at="2026-01-01T10:00:00Z")


def test_statistics_are_the_samples_own():
    p = _point(CPU1, 256, 2e-3)
    assert p.median_s == statistics.median(p.times_s) and p.samples == 5
    assert p.iqr_s == pytest.approx(p.q3_s - p.q1_s) and p.min_s == min(p.times_s) and p.max_s == max(p.times_s)
    assert p.gflops == pytest.approx(2 * 256**3 / p.median_s / 1e9) and p.end_to_end_s == pytest.approx(p.median_s)
    saved = p.to_json()
    assert saved["median_s"] == p.median_s and saved["gflops"] == p.gflops, "written as before: the keys stay"
    forged = {**saved, "median_s": 99.0, "gflops": 1e9, "samples": 1}  # an edit of the figures, not the samples
    back = MatmulPoint.from_json(forged, "results[0]")
    assert (back.median_s, back.gflops, back.samples) == (p.median_s, p.gflops, 5) and back == p


def test_a_file_without_samples_keeps_its_statistics():
    old = {"device": "cpu", "n": 1000, "dtype": "float32", "median_s": 0.02, "iqr_s": 0.001, "q1_s": 0.0195,
           "q3_s": 0.0205, "samples": 7, "gflops": 100.0, "unsynced_s": None, "rel_error": None}
    p = MatmulPoint.from_json(old, "results[0]")
    assert (p.median_s, p.iqr_s, p.q1_s, p.samples, p.times_s) == (0.02, 0.001, 0.0195, 7, ())
    assert p.gflops == pytest.approx(100.0)  # 2·n³ / median: what the engine wrote
    again = MatmulPoint.from_json(p.to_json(), "results[0]")
    assert again == p and again.to_json()["median_s"] == 0.02


def test_the_page_the_cli_and_the_csv_take_their_columns_from_the_declaration():
    sweep = _sweep()
    headers, rows = human_rows(sweep.results)
    assert headers[:4] == ["n", "series", "median ms", "IQR ms"] and "end to end ms" in headers and "CPU MHz" in headers
    assert "GPU MHz" not in headers, "a column nothing was measured in is left out"
    assert rows[0][2] == pytest.approx(sweep.results[0].median_s * 1e3), "in the header's unit"
    assert list(human_table(sweep.results).columns) == headers
    tables = [t.splitlines()[0] for t in render(sweep).split("\n\n") if t.split()[:2] == ["n", "series"]]
    cli = [h for line in tables for h in re.split(r"\s{2,}", line.strip())[2:]]  # each table repeats n and series
    page = [h for h in headers if any(r.is_gpu for r in sweep.results) or h not in COPY_HEADERS]
    assert ["n", "series", *cli] == page, "the CLI's tables are the page's, without copies when nothing was copied"
    keys = [c.key for c in columns(MatmulPoint)]
    assert {"median_s", "gflops", "cpu_mhz", "throttled", "others_cores"} <= set(keys) and "times_s" not in keys


def test_the_race_pages_csv_is_the_results_export_of_the_same_sweep():
    """The same sweep downloads as the same file from the race page and from Results."""
    sweep = _sweep()
    store = open_store()
    run_id = store.save(sweep, label="Ana")
    race = sweep_csv(None, read_result("matmul", sweep.to_json()), run_id, "Ana")()
    results = next(e for e in exports(None, [run_id]) if e.fmt == "csv").data()
    assert race == results
    header, *lines = race.decode().splitlines()
    assert len(lines) == 4
    assert header.startswith("run_id,kind,created_at,label,machine,source,series,device_title,device")
    assert {"median_s", "iqr_s", "gflops", "cpu_mhz"} <= set(header.split(","))
    unsaved = sweep_csv(None, sweep, None, "Ana")().decode().splitlines()
    assert unsaved[0] == header and len(unsaved) == 5, "before saving: the same table"
