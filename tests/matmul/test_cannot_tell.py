"""Under a "cannot tell": the newest clear stored run of the same machine and settings, with its age, and what the
class can do (core.matmul.cannot_tell, issue 31)."""

from __future__ import annotations

import copy
import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from core.matmul import cannot_tell as ct
from core.matmul.config import SweepConfig
from core.matmul.report import sweep_of
from core.matmul.series import Series
from core.results.load import MachineLoad
from core.results.machine import read_machine, unknown_machine
from core.results.runs import IMPORTED
from core.store.access import Owner
from core.store.database import open_store
from tests.matmul.test_sweep import fake_result
from tests.result_samples import LAB, LAPTOP

ONE, TWO = Series("cpu", "float32", threads=1), Series("cpu", "float32", threads=2)
SIZES = (64, 128, 256, 512)


def _sweep(others: float = 0.0, *, machine=LAB, sizes=SIZES, quiet: bool | None = True, stopped: bool = False):
    """1 thread n^3 ns, 2 threads 0.4 ms + n^3/2 ns: clear (2 threads from 64-128) unless others took a core."""
    points = [dataclasses.replace(fake_result(s, n, n**3 / 1e9 if s.threads == 1 else 4e-4 + n**3 / 2e9),
                                  others_cores=others) for n in sizes for s in (ONE, TWO)]
    load = None if quiet is None else MachineLoad(cores=2, others_cores=0.0 if quiet else 1.0, free_cores=2,
                                                  busy=not quiet)
    config = SweepConfig(sizes=sizes, devices=("cpu",), threads=(1, 2))
    return sweep_of(config, [ONE, TWO], points, machine=read_machine(copy.deepcopy(machine), "machine"), load=load,
                    stopped=stopped)


def _later(minutes: float) -> datetime:
    return datetime.now(timezone.utc) + timedelta(minutes=minutes)


def test_the_newest_clear_run_of_this_machine_and_settings_with_its_age():
    store = open_store()
    busy = _sweep(others=1.0)
    assert ct.cannot_tell(busy) and not ct.cannot_tell(_sweep())
    assert ct.earlier_clear(store, busy) is None  # nothing stored yet
    older = store.save(_sweep(), label="Ana")
    newer = store.save(_sweep(quiet=False), label="Ben")  # clear although the machine was busy as it started
    store.save(busy)  # the newest, but it could not tell
    found = ct.earlier_clear(store, busy, now=_later(42))
    assert found is not None and found.run_id == newer != older and found.label == "Ben"
    assert found.crossover.call == "found" and 42 * 60 <= found.age_s < 43 * 60  # created_at: whole seconds
    assert found.text.startswith(f"measured {found.measured_at:%H:%M} UTC on a busy machine, yet clear, 42 min ago: ")
    assert found.text.endswith("cpu float32 2 threads beats cpu float32 1 thread from a size between n = 64 and "
                               f"n = 128 on (run #{newer} on Results)")
    store.delete(newer)
    assert "on a quiet machine, 3 h ago: " in ct.earlier_clear(store, busy, now=_later(180)).text
    days = ct.earlier_clear(store, busy, now=_later(3 * 24 * 60)).text
    assert "3 days ago" in days and f"{datetime.now(timezone.utc):%Y-%m-%d}" in days  # another day: its date


@pytest.mark.parametrize("other", ["machine", "sizes", "stopped", "imported", "unknown machine"])
def test_another_machine_other_settings_a_stopped_or_imported_run_is_not_earlier(other):
    store = open_store()
    busy = _sweep(others=1.0)
    if other == "machine":
        store.save(_sweep(machine=LAPTOP))
    elif other == "sizes":
        store.save(_sweep(sizes=(64, 128, 256)))
    elif other == "stopped":
        store.save(_sweep(stopped=True))
    elif other == "imported":
        store.save(_sweep(), owner=Owner(None, IMPORTED))
    else:
        store.save(_sweep())
        busy = dataclasses.replace(busy, machine=unknown_machine())
        assert ct.earlier_clear(store, busy, machine=unknown_machine()) is None
        return
    assert ct.earlier_clear(store, busy) is None


def test_one_machine_is_its_hardware_not_what_changes_by_the_minute():
    a = read_machine(copy.deepcopy(LAB), "machine")
    moved = copy.deepcopy(LAB)
    moved["cpu"]["ram_available_bytes"] = 12345
    moved["tf32_matmul"] = True
    moved["notes"] = ["a note"]
    assert read_machine(moved, "machine").hardware == a.hardware
    bigger = copy.deepcopy(LAB)
    bigger["gpus"][0]["total_memory_bytes"] = 80 * 2**30
    assert read_machine(bigger, "machine").hardware != a.hardware
    assert a.known and not unknown_machine().known


def test_ages_in_words():
    assert [ct._age(s) for s in (5, 60, 42 * 60, 89 * 60, 3 * 3600, 47 * 3600, 72 * 3600)] == [
        "less than a minute ago", "1 min ago", "42 min ago", "89 min ago", "3 h ago", "47 h ago", "3 days ago"]


def test_the_class_options_name_the_rooms_measurement_the_laptop_and_colab():
    options = ct.class_options()
    assert "Measure for the class" in options[0].text and options[0].page is None
    assert options[1].page == "pages/laptop_race.py" and "Colab" in options[2].text
    assert options[2].page == "pages/results.py"


def test_runs_that_could_not_tell_are_passed_over_in_the_listing_without_reading_them():
    """A class's busy morning: many "cannot tell" runs after the last clear one. The listing's headline skips them,
    so the clear one is found and only it is read in full."""
    store = open_store()
    clear = store.save(_sweep())
    busy = _sweep(others=1.0)
    for _ in range(ct.FULL_READS + 5):
        store.save(busy)
    read: list[int] = []
    real = store.read_runs

    def counting(**kwargs):
        listing = real(**kwargs)
        read.extend(r.run_id for r in listing.runs)
        return listing

    store.read_runs = counting
    found = ct.earlier_clear(store, busy)
    assert found is not None and found.run_id == clear and read == [clear]
