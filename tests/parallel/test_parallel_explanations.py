"""Each section's explanation (both branches), snippets and summaries that quote only measured numbers."""

from __future__ import annotations

import re

import pytest

from core.platform.machine_load import free_cores, is_busy
from core.results.load import MachineLoad
from core.parallel import registry
from core.parallel.chain import ChainConfig, ChainPoint, ChainResult, explain_chain, summarize_chain
from core.parallel.first_call import FirstCallPoint, FirstCallResult, summarize_first_call
from core.parallel.location import NAMING_SNIPPET, LocationResult, explain_location, summarize_location
from core.parallel.marbles import MarblesPoint, MarblesResult, explain_marbles, summarize_marbles
from core.parallel.timing_bug import (SyncPoint, TimingBugResult, explain_timing_bug, summarize_timing_bug,
                                     timing_snippets)
from core.parallel.wording import format_duration
from core.platform.timing import Measurement

EXPLAIN = [lambda gpu, s=s: s.explain(gpu, s.config()) for s in registry.SECTIONS]


def m(median: float, first: float | None = None, synchronized: bool = True) -> Measurement:
    return Measurement((median,), 1, median if first is None else first, synchronized)


def sentences(s: str) -> int:
    return len(re.findall(r"[.!?](?:\s|$)", s.replace(".to(...)", "")))


@pytest.mark.parametrize("explain", EXPLAIN)
@pytest.mark.parametrize("gpu", [None, "cuda:0"])
def test_every_explanation_is_two_to_four_plain_sentences(explain, gpu):
    s = explain(gpu)
    assert 2 <= sentences(s) <= 4, s


@pytest.mark.parametrize("explain", EXPLAIN)
def test_the_branches_differ_and_name_the_gpu_when_there_is_one(explain):
    with_gpu, without = explain("cuda:0"), explain(None)
    assert with_gpu != without
    assert "no GPU here" in without
    assert "no GPU here" not in with_gpu
    assert "cuda:0" in with_gpu


def test_marbles_names_the_gpu():
    assert "(cuda:0)" in explain_marbles("cuda:0")
    assert "1000 times" in explain_chain(None) and "50 times" in explain_chain(None, ChainConfig(steps=50))


def test_timing_bug_without_gpu_gives_the_lecture_figures_and_says_cpus_are_not_async():
    s = explain_timing_bug(None)
    assert "about 3 s" in s and "nearly zero" in s
    assert "On a CPU there is nothing asynchronous" in s


def test_timing_bug_with_gpu_names_its_synchronize():
    assert "`torch.cuda.synchronize()`" in explain_timing_bug("cuda:0")
    assert "`torch.mps.synchronize()`" in explain_timing_bug("mps")


@pytest.mark.parametrize("gpu, sync, device", [(None, "torch.cuda.synchronize()", '"cuda"'),
                                               ("cuda:1", "torch.cuda.synchronize()", '"cuda"'),
                                               ("mps", "torch.mps.synchronize()", '"mps"')])
def test_timing_snippets_wrong_has_no_sync_right_syncs_before_both_readings(gpu, sync, device):
    wrong, right = timing_snippets(gpu)
    assert (wrong.label, wrong.right, right.label, right.right) == ("Wrong", False, "Right", True)
    assert "synchronize" not in wrong.code and device in wrong.code
    lines = right.code.splitlines()
    reads = [i for i, line in enumerate(lines) if "perf_counter()" in line]
    assert len(reads) == 2
    assert all(sync in lines[i - 1] for i in reads), right


def test_location_never_fakes_the_error_message_without_a_gpu():
    s = explain_location(None)
    assert "RuntimeError" in s and "same device" in s
    assert "Expected all tensors" not in s  # described, not quoted
    assert "`a_cpu`" in s and "`a_gpu`" in s
    assert "a_cpu" in NAMING_SNIPPET and "a_gpu" in NAMING_SNIPPET
    assert [sn.code for sn in registry.section("location").snippets(None)] == [NAMING_SNIPPET]


# summaries ----------------------------------------------------------------------------------------


def marbles(others: float | None = 0.0, gpu: bool = False) -> MarblesResult:
    """A marbles result measured while other programs took `others` cores of 2 (None: not probed)."""
    points = [MarblesPoint(1024, "cpu", 1, m(0.020)), MarblesPoint(1024, "cpu", 2, m(0.010))]
    if gpu:
        points.append(MarblesPoint(1024, "cuda:0", None, m(0.0002)))
    load = None if others is None else MachineLoad(cores=2, others_cores=others, load_average=others + 0.5,
                                                   free_cores=free_cores(2, others, None),
                                                   busy=is_busy(2, others, None))
    return MarblesResult(tuple(points), (1, 2), "cuda:0" if gpu else None, load)


def test_marbles_summary_quotes_the_measured_speedups():
    s = summarize_marbles(marbles())
    assert "n = 1024: 2 threads ran 2× as fast as 1 (ideal 2×)." == s
    assert "the GPU ran 100× as fast as 1 CPU thread" in summarize_marbles(marbles(gpu=True))


def test_marbles_summary_warns_about_a_busy_machine_only_when_busy():
    assert "busy" not in summarize_marbles(marbles(others=0.2))
    assert "Other programs were keeping this machine busy" in summarize_marbles(marbles(others=1.5))
    assert "busy" not in summarize_marbles(marbles(others=None))


def chain(gpu_chain_s: float) -> ChainResult:
    cfg = ChainConfig(steps=1000)
    points = (ChainPoint("cpu", "one op", m(0.005)), ChainPoint("cpu", "chain", m(0.008)),
              ChainPoint("cuda:0", "one op", m(0.00005)), ChainPoint("cuda:0", "chain", m(gpu_chain_s)))
    return ChainResult(cfg, points, "cuda:0")


def test_chain_summary_says_when_the_gpu_chain_loses():
    s = summarize_chain(chain(0.016))
    assert "cpu: one operation 5 ms, the chain 8 ms (8 µs per step)." in s
    assert "one operation 100× as fast as the CPU, but the chain only 2× slower" in s
    assert "only 2× as fast" in summarize_chain(chain(0.004))


def test_timing_bug_summary():
    r = TimingBugResult((SyncPoint("cpu", 1024, m(0.02, synchronized=False), m(0.02)),
                         SyncPoint("cuda:0", 8192, m(2e-5, synchronized=False), m(0.02))), "cuda:0")
    s = summarize_timing_bug(r)
    assert ("CPU, n = 1024: without synchronize 20 ms, with synchronize 20 ms "
            "(ratio 1: a CPU has nothing to wait for, so any gap is noise).") in s
    assert ("GPU (cuda:0), n = 8192: without synchronize 20 µs, with synchronize 20 ms: "
            "the wrong reading is 1,000× too small.") in s


def test_first_call_summary():
    p = FirstCallPoint("cpu", 64, Measurement((1e-5,), 1000, 5e-4), Measurement((1e-5,), 1000, 2e-5))
    s = summarize_first_call(FirstCallResult((p,), None))
    assert s == ("n = 64 on cpu: the first call in a fresh process took 500 µs, 50× the warmed median of 10 µs; "
                 "in this running Python process, which had run other work first, the first call took 2× its median.")
    assert "server" not in s, "the CLI prints it too: no page or server words"


def test_location_summaries():
    assert "only the CPU" in summarize_location(LocationResult(None))
    refused = summarize_location(LocationResult("cuda:0", "msg", "RuntimeError", "cuda:0"))
    assert "refused `a_cpu @ a_gpu` with a RuntimeError" in refused and "lives on cuda:0" in refused
    assert "without an error" in summarize_location(LocationResult("cuda:0", None, None, "cuda:0"))


def test_format_duration_switches_to_microseconds_below_a_millisecond():
    assert format_duration(0.0123) == "12.3 ms" and format_duration(2e-5) == "20 µs"


def test_only_the_location_section_shows_text_verbatim():
    result = LocationResult("cuda:0", "Expected all tensors to be on the same device", "RuntimeError", "cuda:0")
    assert registry.section("location").verbatim(result) == "Expected all tensors to be on the same device"
    assert registry.section("location").verbatim(LocationResult(None)) is None
    assert registry.section("marbles").verbatim(MarblesResult((), (1,), None)) is None
