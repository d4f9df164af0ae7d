import json
import subprocess
import sys

import pytest

from core.cli import main

KEYS_CPU = {"name", "physical_cores", "logical_cores", "torch_threads", "capability", "ram_total_bytes",
            "ram_available_bytes"}
KEYS_GPU = {"index", "name", "total_memory_bytes", "free_memory_bytes", "compute_capability", "multiprocessors"}


def test_devices_json_schema(capsys):
    assert main(["devices", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert {"cpu", "gpus", "mps_available", "torch_version", "cuda_version"} <= obj.keys()
    assert KEYS_CPU <= obj["cpu"].keys()
    assert isinstance(obj["gpus"], list)
    for gpu in obj["gpus"]:
        assert KEYS_GPU <= gpu.keys()


def test_devices_json_with_fake_gpu(fake_cuda, capsys):
    assert main(["devices", "--json"]) == 0
    gpu = json.loads(capsys.readouterr().out)["gpus"][0]
    assert gpu["compute_capability"] == "9.0" and gpu["free_memory_bytes"] == 60 * 2**30
    assert KEYS_GPU <= gpu.keys()


def test_devices_table_mentions_cpu_and_how_to_get_a_gpu(monkeypatch, capsys):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    joined = " ".join(out.split())  # wrapped at 100
    assert out.startswith("CPU ") and "Download for Colab" in joined and "python -m core colab-kit" in joined
    assert max(len(line) for line in out.splitlines()) <= 100


@pytest.mark.slow
def test_bad_flag_is_one_line_and_status_2():
    proc = subprocess.run([sys.executable, "-m", "core", "devices", "--nope"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error:")
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_json_is_exactly_one_object_from_a_real_process():
    proc = subprocess.run([sys.executable, "-m", "core", "devices", "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert isinstance(json.loads(proc.stdout), dict)
