"""A device index beyond the devices present is one line (exit 2), never torch's 8-bit wrap-around."""

from __future__ import annotations

import pytest

from core.cli import main
from core.errors import DashboardError
from core.platform.devices import resolve_device


@pytest.mark.parametrize("name", ["cuda:1", "cuda:256", "cuda:999", "cuda:" + "9" * 40])
def test_an_index_past_the_devices_present_is_refused(fake_cuda, name):
    only_one = r"is not available: only 1 CUDA device\(s\) are visible \(cuda:0 to cuda:0\)"
    with pytest.raises(DashboardError, match=only_one):
        resolve_device(name)
    assert str(resolve_device("cuda:0")) == "cuda:0"


def test_without_a_gpu_any_index_is_refused():
    with pytest.raises(DashboardError, match="is not available"):
        resolve_device("cuda:256")


@pytest.mark.parametrize("argv", [["matmul", "--devices", "cuda:999", "--sizes", "64"],
                                  ["roofline", "--device", "cuda:256"]])
def test_every_command_exits_2_with_one_line(fake_cuda, capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "not available" in err and "\n" not in err and "Traceback" not in err
