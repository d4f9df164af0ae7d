"""AppTests of the "Every device at once" page, and of a saved run on every rank on Results
and the Class board. The launch itself is faked here (the real one: tests/matmul/test_ranks_launch.py); one slow
test clicks Run with two real CPU ranks."""

from __future__ import annotations

import pytest

from tests.result_samples import save_payload
import torch
from streamlit.testing.v1 import AppTest

from core.matmul.ranks import contention, judge_stragglers, rank_point, spread
from core.results.cluster import ClusterRun, RankRecord
from core.store.database import open_store

PAGE = "pages/every_device.py"
FAST = [0.010, 0.0101, 0.0099, 0.0100, 0.0102, 0.0098]


def _run(slow_factor: float = 2.0) -> ClusterRun:
    ranks = [RankRecord(rank=r, hostname="node-a", device="cpu", device_name="CPU, 1 thread", threads=1,
                        together=tuple(rank_point(n, [t * (slow_factor if r == 1 else 1) for t in FAST])
                                       for n in (64, 128)),
                        alone=tuple(rank_point(n, [t * 0.8 for t in FAST]) for n in (64, 128))) for r in range(3)]
    stragglers, call, note = judge_stragglers(ranks)
    return ClusterRun(ranks=tuple(ranks), spread=spread(ranks), spread_alone=spread(ranks, "alone"),
                      contention=contention(ranks), stragglers=stragglers, straggler_call=call, straggler_note=note,
                      settings={"ranks": 3})


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def test_every_device_runs_shows_the_straggler_and_saves(app: AppTest, no_gpu, monkeypatch):
    calls = []

    def fake_run_ranks(config, ranks, hooks):
        calls.append((config.sizes, ranks))
        return _run()

    monkeypatch.setattr("core.matmul.rank_launch.run_ranks", fake_run_ranks)
    app.switch_page(PAGE).run()
    assert not app.exception
    assert app.number_input(key="mm_ranks_k").value == 2 and not app.get("plotly_chart")
    app.number_input(key="mm_ranks_k").set_value(3)
    app.selectbox(key="mm_ranks_sizes").set_value("small (64, 128, 256)")
    app.text_input(key="mm_ranks_label").set_value("lab node")
    app.button(key="mm_ranks_go").click().run()
    assert not app.exception, app.exception
    assert calls == [((64, 128, 256), 3)]
    assert any("Straggler: rank 1 on node-a" in w.value for w in app.warning)
    charts = [c for c in app.get("plotly_chart") if "mm_ranks_chart" in str(c.proto.id)]
    assert charts, "the per-rank chart is drawn"
    tables = [d.value for d in app.dataframe if list(d.value.columns)[:2] == ["n", "min GFLOP/s"]]
    assert len(tables) == 1 and tables[0]["n"].tolist() == [64, 128]
    (saved,) = open_store().list_runs(kind="cluster")
    assert saved.result.straggler_call == "named" and saved.label == "lab node"


def test_the_ranks_control_is_bounded_by_twice_the_cores(app: AppTest, no_gpu, monkeypatch):
    monkeypatch.setattr("core.matmul.rank_launch.usable_cores", lambda: 2)
    app.switch_page(PAGE).run()
    assert app.number_input(key="mm_ranks_k").max == 4


def test_results_and_the_class_board_show_a_run_on_every_rank(app: AppTest):
    save_payload(open_store(), "cluster", _run().to_json(), {}, label="lab node")
    app.switch_page("pages/results.py").run()
    assert not app.exception, app.exception
    listing = app.dataframe[0].value
    assert listing.astype(str).apply(lambda col: col.str.contains("straggler: rank 1")).any().any(), listing.columns
    assert "cluster" in listing.astype(str).to_string()
    assert any("results_cluster_" in str(c.proto.id) for c in app.get("plotly_chart")), "its chart among the compared"
    app.switch_page("pages/class_board.py").run()
    assert not app.exception, app.exception
    board = " ".join(d.value.astype(str).to_string() for d in app.dataframe)
    assert "straggler: rank 1" in board and "lab node" in board


@pytest.mark.slow
def test_two_real_cpu_ranks_from_the_page(app: AppTest, no_gpu):
    app.switch_page(PAGE).run()
    app.selectbox(key="mm_ranks_sizes").set_value("small (64, 128, 256)")
    app.button(key="mm_ranks_go").click().run(timeout=300)
    assert not app.exception and not app.error, [e.value for e in app.error]
    run = app.session_state["mm_ranks_run"]
    assert [r.rank for r in run.ranks] == [0, 1] and [s.n for s in run.spread] == [64, 128, 256]


def test_with_gpus_the_control_offers_one_rank_per_gpu(app: AppTest, gpu_model):
    gpu_model("A100-80GB", count=4)
    app.switch_page(PAGE).run()
    assert not app.exception, app.exception
    assert app.number_input(key="mm_ranks_k").max == 4 and app.number_input(key="mm_ranks_k").value == 2
    assert any("one per GPU of the 4 here" in c.value for c in app.caption)
