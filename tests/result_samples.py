"""CLI JSON objects shaped exactly as issues 3 and 4 specify, for the result store's tests.

The numbers follow the lecture's scale (CPU ~23 s and GPU ~3 s at n = 10,000, time growing as n^3)
so overlays look like real runs; they are inputs to store and chart code, not measurements.
"""

from __future__ import annotations

import copy
from typing import Any

LAPTOP = {"cpu": {"name": "Student Laptop CPU i5", "logical_cores": 8}, "gpus": [], "mps_available": False,
          "torch_version": "2.13.0", "cuda_version": None, "tf32_matmul": False, "notes": []}
LAB = {"cpu": {"name": "Lab Xeon 8480C", "logical_cores": 112},
       "gpus": [{"index": 0, "name": "NVIDIA H200", "total_memory_bytes": 150 * 2**30}], "mps_available": False,
       "torch_version": "2.13.0", "cuda_version": "12.8", "tf32_matmul": False, "notes": []}


def matmul_result(device: str, n: int, seconds_at_10k: float, dtype: str = "float32") -> dict[str, Any]:
    median = seconds_at_10k * (n / 10_000) ** 3
    gpu = device.startswith("cuda")
    return {"device": device, "n": n, "dtype": dtype, "median_s": median, "iqr_s": median * 0.05, "samples": 7,
            "gflops": 2 * n**3 / median / 1e9, "unsynced_s": median / 100 if gpu else None,
            "rel_error": 1e-6 if gpu else None}


def matmul_payload(machine: dict[str, Any] = LAB, sizes=(256, 1024, 4096)) -> dict[str, Any]:
    cpu_s = 23.0 if machine["gpus"] else 60.0  # the laptop's CPU is slower than the lab's
    results = [matmul_result("cpu", n, cpu_s) for n in sizes]
    if machine["gpus"]:
        results += [matmul_result("cuda:0", n, 3.0) for n in sizes]
    return {"results": results, "crossover_n": 300.0 if machine["gpus"] else None, "machine": copy.deepcopy(machine)}


def train_payload(device: str = "cpu", epochs: int = 3, seconds: float = 4.0) -> dict[str, Any]:
    rows = [{"epoch": e, "train_loss": 0.69 - 0.1 * e, "test_loss": 0.7 - 0.08 * e, "test_accuracy": 0.6 + 0.05 * e,
             "seconds": seconds} for e in range(1, epochs + 1)]
    return {"device": device, "n_train": 8529, "n_test": 2133, "vocab_size": 20000, "epochs": rows,
            "test_accuracy": rows[-1]["test_accuracy"], "train_seconds": seconds * epochs,
            "baseline_accuracy": 0.77, "predictions": [{"text": "a gripping film", "p_positive": 0.91}]}


def as_saved(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as the store hands it back: read through the schema, written in its current version."""
    from core.results.kinds import read_result

    return read_result(kind, copy.deepcopy(payload)).to_json()


def save_payload(store, kind: str, payload: dict[str, Any], settings: dict[str, Any] | None = None,
                 machine: dict[str, Any] | None = None, *, label: str = "", owner_token: str | None = None,
                 source: str = "measured") -> int:
    """Save a hand-made payload: read as its kind (numpy numbers and NaN written as JSON first, as a page's
    would be), `settings` as the run's own, then `Store.save(result, label=..., owner=...)` like every caller."""
    from dataclasses import replace

    from core.results import files, jsonio
    from core.results.kinds import read_result
    from core.results.machine import read_machine
    from core.store.access import Owner

    jsonio.check_tree(payload, "payload")
    plain = jsonio.loads(jsonio.dumps(payload), what="the run")
    jsonio.check_size(plain, "payload", files.MAX_RUN_CHARS)
    result = read_result(kind, plain)
    if settings is not None:
        result = replace(result, settings=jsonio.loads(jsonio.dumps(settings)))
    return store.save(result, label=label, owner=Owner(owner_token, source),
                      machine=None if machine is None else read_machine(machine, "machine"))
