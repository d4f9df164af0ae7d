"""Issue 34: every figure a person reads in a sentence has at most three significant figures and a unit a person
would choose ('8.46 ms', never '8.46e+03 µs'). Representative values with many digits go through the roofline's
reading, its noisy-constant notes and the Why-parallel summaries; a number with more is a failure."""

from __future__ import annotations

import re

import pytest

from core.matmul.series import Series
from core.parallel.chain import ChainConfig, ChainPoint, ChainResult, summarize_chain
from core.parallel.first_call import FirstCallPoint, FirstCallResult, summarize_first_call
from core.parallel.marbles import MarblesPoint, MarblesResult, summarize_marbles
from core.parallel.processes import ProcessesResult, ProcessStep, summarize_processes
from core.parallel.timing_bug import SyncPoint, TimingBugResult, summarize_timing_bug
from core.platform.timing import Measurement
from core.platform.units import byte_size, number, seconds, size_unit
from core.results.matmul import MatmulPoint
from core.results.roofline import DeviceRoofs, RooflinePoint, RooflineRun, Spread
from core.roofline import spread
from core.roofline.explain import crossover_sentence, left_out_text, model_error_text, model_errors
from core.roofline.run import THEORY_BELOW, peak_of

# a matrix size (and a range of them) is a count, exact by nature, not a figure
SIZES = re.compile(r"\bn\s*(?:=|≈|>=|≥)\s*[\d,]+(?:\s+to\s+[\d,]+)?")
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:[eE][+-]?\d+)?")
ODD = [8.46123e-3, 83.3147, 1234.5678, 0.000682345, 12345.678, 3.14159e-7]  # seconds or rates, many digits


def significant(token: str) -> int:
    """Significant figures a person reads in `token`; a large number in scientific notation ('8.46e+03') counts as
    too many (whole, or in a larger unit, it reads at a glance), a tiny one ('1e-06', an error) by its digits."""
    mantissa, _, exponent = token.lower().partition("e")
    if exponent and not exponent.startswith("-"):
        return 99
    plain = mantissa.replace(",", "")
    digits = plain.replace(".", "").lstrip("0")
    return len(digits if "." in plain else digits.rstrip("0")) or 1


def too_precise(text: str) -> list[str]:
    return [t for t in NUMBER.findall(SIZES.sub("n", text)) if significant(t) > 3]


def test_the_checker_catches_what_the_issue_reported():
    assert too_precise("Starting one product costs 8.46e+03 µs with 2 threads") == ["8.46e+03"]
    assert too_precise("measured 83.31 GFLOP/s against 83.08 in theory") == ["83.31", "83.08"]
    assert too_precise("104903 terms, 18,550 reviews/s at n = 131,072") == ["104903", "18,550"]
    assert too_precise("8.46 ms, 127,000 reviews, 0.00682, n ≈ 1,066") == []


@pytest.mark.parametrize("value", ODD)
def test_the_formatter_keeps_three_figures_in_a_chosen_unit(value):
    assert not too_precise(seconds(value)) and "e" not in seconds(value)
    if value >= 1e-4:  # a bare number below that (a relative error) is rightly 1.2e-07
        assert not too_precise(number(value)) and "e" not in number(value)


@pytest.mark.parametrize(("n_bytes", "shown"), [
    (0.0654 * 2**30, "67 MiB"),  # not '0.0654 GiB'
    (512, "512 B"), (1536, "1.5 KiB"), (2**20, "1 MiB"), (125.7 * 2**30, "126 GiB"), (1023.9 * 2**20, "1 GiB"),
    (1000 * 2**20, "1,000 MiB"), (4.5 * 2**40, "4.5 TiB"), (2**100, "1.15e+18 TiB"), (None, "unknown"),
])
def test_a_memory_figure_reads_in_the_binary_unit_a_person_would_choose(n_bytes, shown):
    assert byte_size(n_bytes) == shown
    assert not too_precise(shown.replace("e+18", ""))


def test_a_size_can_keep_a_unit_chosen_for_a_sentence_or_a_column():
    assert byte_size(9.54 * 2**20, "MiB") == "9.54 MiB" and byte_size(2**30, "MiB") == "1,020 MiB"
    assert size_unit(80 * 2**30) == ("GiB", 2**30) and size_unit(0.5 * 2**30) == ("MiB", 2**20)
    assert size_unit(0) == ("B", 1)


def m(median: float, first: float | None = None) -> Measurement:
    return Measurement((median,), 1, median if first is None else first, True)


def _roofs(series: str, threads: int, launch: float, wake: float | None, peak: float, noisy=()) -> DeviceRoofs:
    return DeviceRoofs(device="cpu", dtype="float32", series=series, threads=threads, peak_gflops=peak,
                       theoretical_gflops=peak * 1.0123, theoretical_note="a guess", bandwidth_gbs=12.3456,
                       launch_s=launch, wake_s=wake, noisy=tuple(noisy))


@pytest.mark.parametrize("wake", ODD[:4])
def test_the_roofline_reading_keeps_three_figures(wake):
    one = _roofs("cpu float32 1 thread", 1, 8.23456e-7, None, 166.789)
    two = _roofs("cpu float32 2 threads", 2, 8.43219e-7, wake, 226.1234, noisy=("wake_s", "bandwidth_gbs"))
    points = tuple(RooflinePoint(device="cpu", dtype="float32", n=n, gflops=123.456, intensity=1.0, series=s,
                                 median_s=t, predicted_s=t * 1.23456)
                   for s in (one.series, two.series) for n, t in ((256, 2.0987e-4), (1024, 1.23456e-2)))
    run = RooflineRun(devices_roofs=(one, two), points=points, predicted_crossover_n=1066,
                      predicted_crossover_low=981, predicted_crossover_high=1992, measured_crossover_n=1331,
                      challenger=two.series, baseline=one.series, settings={}, finished_at="2026-12-01T05:00:00Z")
    text = " ".join([crossover_sentence(run), model_error_text(run), left_out_text(run, model_errors(run))])
    assert not too_precise(text), text
    assert "wake_s" not in text and "bandwidth_gbs" not in text  # constants in words, not field names


@pytest.mark.parametrize("name", sorted(spread.UNITS))
def test_a_noisy_constants_note_keeps_three_figures_and_names_it_in_words(name):
    scale = 1e-6 if name.endswith("_s") else 1.0
    note = spread.why_noisy(Spread(name=name, low=1234.5678 * scale, high=8461.23 * scale, repeats=3,
                                   others_cores=1.234))
    assert note is not None and not too_precise(note) and name not in note, note


def _peak(gflops: float, theory: float, low: float) -> DeviceRoofs:
    n = 512
    median = 2 * n**3 / gflops / 1e9
    point = MatmulPoint(device="cpu", n=n, dtype="float32", series="cpu float32 1 thread", median_s=median,
                        iqr_s=None, q1_s=median, q3_s=2 * n**3 / low / 1e9, samples=20, gflops=gflops,
                        unsynced_s=None, rel_error=None)
    roofs = DeviceRoofs(device="cpu", dtype="float32", series="cpu float32 1 thread", threads=1, peak_gflops=None,
                        theoretical_gflops=theory, theoretical_note="a guess", bandwidth_gbs=None, launch_s=None)
    return peak_of(Series("cpu", "float32", threads=1), [point], roofs)


def test_theory_below_the_measured_peak_is_flagged_only_beyond_noise_and_in_three_figures():
    within = _peak(83.3147, 83.0812, low=82.9)  # the issue's 0.3 %: a timing's noise
    assert not any(n.startswith(THEORY_BELOW) for n in within.notes or ())
    beyond = _peak(104.567, 83.0812, low=101.2)
    (note,) = [n for n in beyond.notes or () if n.startswith(THEORY_BELOW)]
    assert "105 GFLOP/s against 83.1 in theory" in note and not too_precise(note)
    noisy_gap = _peak(86.0, 83.0812, low=80.0)  # 3.5 % above, but its slower quartile is below theory
    assert not any(n.startswith(THEORY_BELOW) for n in noisy_gap.notes or ())


@pytest.mark.parametrize("t", ODD[:4])
def test_the_why_parallel_summaries_keep_three_figures(t):
    marbles = MarblesResult((MarblesPoint(1024, "cpu", 1, m(t * 3.1234)), MarblesPoint(1024, "cpu", 2, m(t)),
                             MarblesPoint(1024, "cuda:0", None, m(t / 1234.567))), (1, 2), "cuda:0", None)
    chain = ChainResult(ChainConfig(steps=1000), (ChainPoint("cpu", "one op", m(t)),
                                                  ChainPoint("cpu", "chain", m(t * 1.2345)),
                                                  ChainPoint("cuda:0", "one op", m(t / 123.456)),
                                                  ChainPoint("cuda:0", "chain", m(t * 2.34567))), "cuda:0")
    bug = TimingBugResult((SyncPoint("cpu", 1024, m(t), m(t * 1.00123)),
                           SyncPoint("cuda:0", 8192, m(t / 4567.89), m(t))), "cuda:0")
    first = FirstCallResult((FirstCallPoint("cpu", 64, Measurement((t,), 1000, t * 87.654),
                                            Measurement((t,), 1000, t * 8.6543)),), None)
    step = ProcessStep(1, m(t), m(t), 0.0)
    two = ProcessStep(2, m(t / 1.6789), m(t / 1.2345), 1.23456e-6)
    processes = ProcessesResult(1024, (step, two), (1, 2), t * 1234.5678, 2)
    for text in (summarize_marbles(marbles), summarize_chain(chain), summarize_timing_bug(bug),
                 summarize_first_call(first), summarize_processes(processes)):
        assert not too_precise(text), text
