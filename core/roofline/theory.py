"""The theoretical compute peak: what the hardware could do if every unit issued an FMA every cycle.

CPU: cores x clock x flops per cycle per core, where flops per cycle is SIMD lanes x 2 (an FMA is
two operations) x FMA units. torch tells us the SIMD level it dispatches to; the number of FMA
units and the sustained clock it does not, so those are guesses and the note says so. CUDA: SMs x
clock x 2 x FP32 lanes per SM, the lanes looked up by compute capability; torch exposes the clock
only in recent versions, so without it the peak is unknown rather than invented.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil
import torch

from core.platform.hardware import cpu_name

SIMD_BITS = {"AVX512": 512, "AVX2": 256, "SVE256": 256, "ZVECTOR": 128, "VSX": 128, "NEON": 128, "DEFAULT": 128}
FMA_UNITS = 2  # per core: true of most desktop and server x86 and Apple cores since ~2013; a guess
DTYPE_BITS = {"float32": 32, "float64": 64, "float16": 32, "bfloat16": 32}  # CPU half precision computes in float32
FP32_LANES_PER_SM = {7: 64, 8: 64, 9: 128, 10: 128, 12: 128}  # by compute-capability major; 8.6 and 8.9 have 128

# Dense matmul flops per SM per clock (2 per FMA) for what torch's matmul runs on: tensor cores for
# float16, bfloat16 and TF32 (and float64 from Ampere's A100 and Hopper on), the FP64 units otherwise.
# Derived from each whitepaper's peak / (SMs x boost clock) and checked against its table:
#   7.0 V100 (NVIDIA Tesla V100 whitepaper, 80 SMs, 1530 MHz): fp64 7.8, fp16 tensor 125 TFLOP/s
#   7.5 T4 (NVIDIA T4 datasheet, Turing whitepaper; 40 SMs, 1590 MHz): fp16 tensor 65, fp64 1/32 of fp32
#   8.0 A100 (NVIDIA A100 whitepaper, 108 SMs, 1410 MHz): fp64 tensor 19.5, TF32 156, fp16/bf16 312
#   8.6 GA10x (NVIDIA Ampere GA102 whitepaper; A10: 72 SMs, 1695 MHz): fp16/bf16 125, TF32 62.5, fp64 1/64
#   8.9 Ada (NVIDIA Ada whitepaper; L4: 58 SMs, 2040 MHz): fp16/bf16 121, TF32 60, fp64 1/64
#   9.0 H100 SXM5 (NVIDIA H100 whitepaper, 132 SMs): fp64 tensor 67, TF32 495, fp16/bf16 989; its tensor
#       figures are at 1830 MHz, below the 1980 MHz boost clock torch reports, so this line sits ~8% high
# GeForce cards (7.5 RTX 20, 8.6 RTX 30, 8.9 RTX 40) run their tensor cores' float16 and bfloat16 with float32
# accumulation (what torch asks for) and TF32 at half the rate above (CONSUMER_TENSOR_FACTOR): the GA102 and
# Ada whitepapers' GeForce tables (RTX 3090: 82 SMs, 1695 MHz, TF32 35.6, fp16/bf16 with fp32 accumulate 71
# TFLOP/s dense; RTX 4090: 128 SMs, 2520 MHz, 82.6 and 165.2), against the same chips' A10/A40 and L4/L40 figures
# above. Capabilities not listed (10.x, 12.x, ...) get the float32 line only: unknown is not invented.
TENSOR_FLOPS_PER_SM_CLOCK: dict[tuple[int, int], dict[str, int]] = {
    (7, 0): {"float64": 64, "float16": 1024},
    (7, 5): {"float64": 4, "float16": 1024},
    (8, 0): {"float64": 128, "float16": 2048, "bfloat16": 2048, "tf32": 1024},
    (8, 6): {"float64": 4, "float16": 1024, "bfloat16": 1024, "tf32": 512},
    (8, 9): {"float64": 4, "float16": 1024, "bfloat16": 1024, "tf32": 512},
    (9, 0): {"float64": 256, "float16": 4096, "bfloat16": 4096, "tf32": 2048},
}


CONSUMER_TENSOR_FACTOR = 0.5  # GeForce: tensor float16/bfloat16 (float32 accumulate) and TF32 at half rate
CONSUMER_CAPABILITIES = ((7, 5), (8, 6), (8, 9))


def consumer_factor(name: str, capability: tuple[int, int], key: str) -> float:
    """The share of the table's tensor rate a GeForce card of these capabilities runs (1 elsewhere)."""
    consumer = "GEFORCE" in name.upper() and capability in CONSUMER_CAPABILITIES
    return CONSUMER_TENSOR_FACTOR if consumer and key in ("float16", "bfloat16", "tf32") else 1.0


@dataclass(frozen=True)
class TheoreticalPeak:
    gflops: float | None  # None: not derivable here
    note: str  # how it was derived, "a guess" where it is one


def cpu_clock_ghz(read_text: Callable[[Path], str] = Path.read_text) -> tuple[float | None, str]:
    """The CPU's highest clock we can find, and where it came from.

    cpufreq's maximum (the boost clock) when the OS shows it; else /proc/cpuinfo's current MHz,
    which reads low when the core idles; else psutil. Containers often hide cpufreq.
    """
    try:
        khz = float(read_text(Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")).strip())
        return khz / 1e6, "cpufreq maximum"
    except (OSError, ValueError):
        pass
    try:
        for line in read_text(Path("/proc/cpuinfo")).splitlines():
            if line.lower().startswith("cpu mhz"):
                return float(line.split(":", 1)[1]) / 1e3, "current clock from /proc/cpuinfo (boost may run faster)"
    except (OSError, ValueError):
        pass
    freq = psutil.cpu_freq()
    if freq is not None and (freq.max or freq.current):
        return (freq.max or freq.current) / 1e3, "psutil"
    return None, "unknown"


def cpu_flops_per_cycle(capability: str | None, dtype: str, name: str) -> tuple[int, str]:
    """SIMD lanes x 2 x FMA units for one core; AMD cores before Zen 5 split AVX-512 into two 256-bit halves."""
    bits = SIMD_BITS.get((capability or "DEFAULT").upper(), 128)
    why = f"{capability or 'no'} SIMD"
    if bits == 512 and "AMD" in name.upper():
        bits = 256
        why += " (AMD: 256-bit units)"
    lanes = bits // DTYPE_BITS.get(dtype, 32)
    return lanes * 2 * FMA_UNITS, f"{why}, {lanes} lanes x 2 (FMA) x {FMA_UNITS} FMA units"


def cpu_peak(threads: int, dtype: str, *, capability: str | None = None, name: str | None = None,
             clock: tuple[float | None, str] | None = None) -> TheoreticalPeak:
    """threads x clock x flops/cycle; always a guess (FMA units, sustained clock)."""
    capability = capability if capability is not None else torch.backends.cpu.get_cpu_capability()
    name = name if name is not None else cpu_name()
    ghz, source = clock if clock is not None else cpu_clock_ghz()
    if ghz is None:
        return TheoreticalPeak(None, "unknown: no CPU clock found")
    per_cycle, why = cpu_flops_per_cycle(capability, dtype, name)
    gflops = threads * ghz * per_cycle
    return TheoreticalPeak(gflops, f"a guess: {threads} core(s) x {ghz:.2f} GHz ({source}) x {per_cycle} flops/cycle "
                                   f"({why})")


def cuda_peak(index: int, dtype: str, *, tf32: bool = False) -> TheoreticalPeak:
    """SMs x clock x flops per SM per clock, from torch's device properties; unknown without a clock.

    float32 (TF32 off): SMs x clock x 2 x FP32 lanes per SM. Other dtypes and TF32 from
    TENSOR_FLOPS_PER_SM_CLOCK, by compute capability; unknown where the table has no figure
    (bfloat16 or TF32 on a GPU without them, a capability not in the table).
    """
    props = torch.cuda.get_device_properties(index)
    sms = getattr(props, "multi_processor_count", None)
    khz = getattr(props, "clock_rate", None)  # CUDA reports kHz; torch exposes it only in recent versions
    capability = (int(props.major), int(props.minor))
    lanes = FP32_LANES_PER_SM.get(capability[0])
    if capability in ((8, 6), (8, 7), (8, 9)):
        lanes = 128
    if not sms or not khz or lanes is None:
        missing = ("clock rate" if not khz else "SM count" if not sms
                   else f"lanes per SM for {props.major}.{props.minor}")
        return TheoreticalPeak(None, f"unknown: torch does not expose the {missing}")
    ghz = khz / 1e6
    key = "tf32" if tf32 and dtype == "float32" else dtype
    if key == "float32":
        return TheoreticalPeak(sms * ghz * 2 * lanes, f"{sms} SMs x {ghz:.2f} GHz x 2 x {lanes} FP32 lanes per SM")
    per_clock = TENSOR_FLOPS_PER_SM_CLOCK.get(capability, {}).get(key)
    if per_clock is None:
        return TheoreticalPeak(None, f"unknown: no {key} figure for compute capability {capability[0]}.{capability[1]}")
    units = "FP64 units" if key == "float64" and per_clock < 2 * lanes else "tensor cores, dense"
    factor = consumer_factor(str(getattr(props, "name", "")), capability, key)
    if factor != 1.0:
        per_clock = int(per_clock * factor)
        units += ", a GeForce card's half rate"
    return TheoreticalPeak(sms * ghz * per_clock,
                           f"{sms} SMs x {ghz:.2f} GHz x {per_clock} {key} flops per SM per clock ({units})")
