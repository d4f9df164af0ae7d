"""Tidy tables of saved runs, and how runs, machines and devices are named."""

from __future__ import annotations

import pytest

from core.results.machine import read_machine, unknown_machine
from core.store.database import open_store
from core.store.frames import kind_frame, listing_frame, tidy_frame
from core.store.records import device_title, machine_label
from tests.result_samples import LAB, LAPTOP, matmul_payload, train_payload, save_payload


@pytest.fixture
def runs():
    store = open_store()
    save_payload(store, "matmul", matmul_payload(LAB, sizes=(256, 512)))
    save_payload(store, "matmul", matmul_payload(LAPTOP, sizes=(256, 512, 1024)), label="Ana")
    save_payload(store, "train", train_payload("cuda:0", epochs=3, seconds=0.5), machine=LAB)
    return store.list_runs()


def test_matmul_frame_has_one_row_per_run_device_and_size(runs):
    frame = kind_frame("matmul", runs)
    assert len(frame) == 2 * 2 + 3
    lab = frame[frame["machine"] == "Lab Xeon 8480C + NVIDIA H200"]
    assert set(lab["series"]) == {"#1 cpu (Lab Xeon 8480C) float32", "#1 cuda:0 (NVIDIA H200) float32"}
    assert set(frame[frame["label"] == "Ana"]["series"]) == {"#2 cpu (Student Laptop CPU i5) float32 · Ana"}
    for _, series in frame.groupby("series"):
        assert list(series["n"]) == sorted(series["n"])
    row = frame[(frame["run_id"] == 1) & (frame["device"] == "cuda:0") & (frame["n"] == 512)].iloc[0]
    assert row["median_s"] == pytest.approx(3.0 * (512 / 10_000) ** 3)


def test_series_of_one_device_stay_apart_when_threads_or_tf32_differ():
    """A sweep comparing 1 and 2 CPU threads and TF32 off/on (as the page and CLI save it) draws four lines."""
    payload = matmul_payload(LAB, sizes=(256, 512))
    rows = []
    for row in payload["results"]:
        variants = [{"threads": 1, "tf32": None}, {"threads": 2, "tf32": None}] if row["device"] == "cpu" else \
            [{"threads": None, "tf32": False}, {"threads": None, "tf32": True}]
        rows += [{**row, **v} for v in variants]
    save_payload(open_store(), "matmul", {**payload, "results": rows})
    frame = kind_frame("matmul", open_store().list_runs())
    assert sorted(set(frame["series"])) == [
        "#1 cpu (Lab Xeon 8480C) float32 1 thread", "#1 cpu (Lab Xeon 8480C) float32 2 threads",
        "#1 cuda:0 (NVIDIA H200) float32 TF32 off", "#1 cuda:0 (NVIDIA H200) float32 TF32 on",
    ]
    for _, series in frame.groupby("series"):
        assert list(series["n"]) == [256, 512], "one point per size in each line"


def test_train_frame_has_one_row_per_epoch_with_elapsed_time(runs):
    frame = kind_frame("train", runs)
    assert list(frame["epoch"]) == [1, 2, 3]
    assert list(frame["elapsed_s"]) == pytest.approx([0.5, 1.0, 1.5])
    assert set(frame["device_title"]) == {"cuda:0 (NVIDIA H200)"}


def test_empty_frames_keep_their_columns():
    assert list(kind_frame("matmul", []).columns)[:5] == ["run_id", "kind", "created_at", "label", "machine"]
    assert kind_frame("train", []).empty and "elapsed_s" in kind_frame("train", []).columns
    assert tidy_frame([]).empty and {"n", "epoch"} <= set(tidy_frame([]).columns)


def test_tidy_and_listing_frames(runs):
    assert len(tidy_frame(runs)) == 7 + 3
    listing = listing_frame(runs)
    assert list(listing["run"]) == [3, 2, 1]
    assert listing.iloc[0]["result"] == "mini-batch: accuracy 75.0% in 1.5 s, 3 epochs"  # the preset named
    assert listing.iloc[2]["result"] == "n 256–512, GPU wins from n≈300"
    assert listing.iloc[1]["result"] == "n 256–1024, no crossover"


@pytest.mark.parametrize("machine, label", [
    (LAB, "Lab Xeon 8480C + NVIDIA H200"),
    (LAPTOP, "Student Laptop CPU i5"),
    ({"cpu": {"name": "Apple M3"}, "gpus": [], "mps_available": True}, "Apple M3 + Apple GPU (MPS)"),
    ({}, "unknown machine"),
    ({"cpu": {}, "gpus": []}, "unknown machine"),
])
def test_machine_label(machine, label):
    assert machine_label(read_machine(machine, "machine")) == label


def test_device_title():
    lab, laptop = read_machine(LAB, "machine"), read_machine(LAPTOP, "machine")
    assert device_title(lab, "cuda:0") == "cuda:0 (NVIDIA H200)"
    assert device_title(lab, "cuda") == "cuda (NVIDIA H200)"
    assert device_title(lab, "cuda:3") == "cuda:3"
    assert device_title(laptop, "cpu") == "cpu (Student Laptop CPU i5)"
    assert device_title(unknown_machine(), "cpu") == "cpu"


def test_pick_runs_matches_any_value_of_each_filter_and_all_filters(runs):
    from core.store.records import pick_runs

    every = open_store().list_runs()
    assert pick_runs(every) == every
    lab = machine_label(read_machine(LAB, "machine"))
    on_lab = pick_runs(every, machines=[lab])
    assert on_lab and all(r.machine_label == lab for r in on_lab)
    assert all(r.kind == "train" for r in pick_runs(every, kinds=["train"]))
    assert pick_runs(every, machines=[lab], kinds=["matmul", "train"]) == on_lab
    assert pick_runs(every, devices=["no-such-device"]) == []


def test_a_run_on_every_rank_gives_one_row_per_rank_phase_and_size_in_the_export():
    """The CSV export carries what each rank measured, together and alone, beside the sweeps and epochs."""
    from core.matmul.ranks import rank_point, spread
    from core.results.cluster import ClusterRun, RankRecord
    from core.store.frames import kind_frame

    samples = [0.010, 0.011, 0.009]
    ranks = tuple(RankRecord(rank=r, hostname="node-a", device="cpu", device_name="CPU, 1 thread", threads=1,
                             together=tuple(rank_point(n, [t * (1 + r) for t in samples]) for n in (128, 64)),
                             alone=(rank_point(64, samples),)) for r in (0, 1))
    store = open_store()
    save_payload(store, "cluster", ClusterRun(ranks=ranks, spread=spread(ranks)).to_json())
    runs = store.list_runs()
    frame = kind_frame("cluster", runs)
    assert len(frame) == 2 * (2 + 1)
    together = frame[(frame["rank"] == 1) & (frame["phase"] == "together")]
    assert list(together["n"]) == [64, 128], "sorted by size within a rank's line"
    assert together.iloc[0]["median_s"] == pytest.approx(0.020)
    assert set(frame["series"]) == {f"#1 rank {r} node-a cpu (CPU, 1 thread) {p}"
                                    for r in (0, 1) for p in ("together", "alone")}
    tidy = tidy_frame(runs)
    assert len(tidy) == 6 and set(tidy["kind"]) == {"cluster"} and {"rank", "phase"} <= set(tidy.columns)
    assert "epoch" not in tidy.columns  # the kinds present only: one kind exports its own table
