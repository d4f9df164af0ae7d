"""The one CSV writer: whole numbers stay whole, gaps stay empty, real fractions are untouched."""

import math

import pandas as pd

from core.results.csvio import csv_text
from core.store.database import open_store
from tests.result_samples import LAB, matmul_payload, train_payload, save_payload


def test_whole_numbers_with_gaps_are_written_as_integers():
    frame = pd.DataFrame({"n": [64.0, 128.0, math.nan], "threads": [1.0, None, 2.0], "median_s": [0.5, 1.0, 1.5],
                          "label": ["a", "b", None]})
    lines = csv_text(frame).splitlines()
    assert lines == ["n,threads,median_s,label", "64,1,0.5,a", "128,,1.0,b", ",2,1.5,"]


def test_an_export_of_both_kinds_has_no_64_point_0():
    store = open_store()
    save_payload(store, "matmul", matmul_payload(), {"sizes": [256]}, label="lab")
    save_payload(store, "train", train_payload(), {}, machine=LAB, label="lab")
    text = store.export_csv().decode()
    assert "256.0" not in text and ",256," in text
    header, *rows = text.splitlines()
    epoch = header.split(",").index("epoch")
    assert {row.split(",")[epoch] for row in rows} >= {"1", ""}
