"""Is an imported run something a machine could have measured? Checked before it reaches a shared board.

An export is plain JSON, so anyone can edit one: "an NVIDIA H100 at 999,999 GFLOP/s, dated 2099"
reads field by field. These checks catch what an edit breaks and a real run never does:

- a date more than a day ahead (a clock a few hours off is allowed: time zones, a laptop's drift);
- a point on a GPU named in `PEAKS` faster than that GPU's dense peak for its dtype by more than
  `PEAK_MARGIN` (no measured product can beat its hardware's peak).

Policy: an implausible run is refused, and the whole file with it (imports are all or nothing,
see core.results.files), in one line naming the run and the field. Refusing rather than keeping
the run flagged: a flagged run would still be drawn next to the class's measurements and would
need a flag on every chart and filter, while an honest run never fails these checks (the peaks are the
fastest model of each name, with 10 % to spare).

A point's statistics are not checked against each other here: they are derived from its samples
(core.results.matmul.MatmulPoint), GFLOP/s from its median, so they cannot disagree; a sample-less
version 1 file's stored quartiles are checked for order where they are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from core.errors import DashboardError
from core.results.matmul import MatmulPoint, MatmulSweep
from core.results.runs import RunRecord

FUTURE_SLACK = timedelta(days=1)  # a run dated more than this ahead of the server's clock is refused
PEAK_MARGIN = 0.10  # over a GPU's table peak by more than this is refused


@dataclass(frozen=True)
class Peak:
    """A GPU's dense peak in TFLOP/s per precision (the fastest board sold under the name, boost clock)."""

    fp32: float
    tf32: float  # float32 products with TF32 allowed
    bf16: float
    fp16: float  # with fp16 accumulation where the GeForce boards allow it (twice their bf16)

    def tflops(self, dtype: str, tf32: bool | None) -> float:
        if dtype == "float32":
            return self.fp32 if tf32 is False else max(self.fp32, self.tf32)
        if dtype == "bfloat16":
            return self.bf16
        if dtype == "float16":
            return self.fp16
        if dtype == "float64":
            return self.fp32  # every GPU here runs float64 at most as fast as float32
        return max(self.fp32, self.tf32, self.bf16, self.fp16)


# NVIDIA's data sheets (dense, without sparsity). Matched against the GPU name as torch reports it.
PEAKS: tuple[tuple[re.Pattern[str], str, Peak], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), name, peak) for pattern, name, peak in (
        (r"\bT4\b", "T4", Peak(fp32=8.1, tf32=8.1, bf16=65, fp16=65)),
        (r"\bA100\b", "A100", Peak(fp32=19.5, tf32=156, bf16=312, fp16=312)),
        (r"\bH100\b", "H100", Peak(fp32=67, tf32=495, bf16=990, fp16=990)),
        (r"\bH200\b", "H200", Peak(fp32=67, tf32=495, bf16=990, fp16=990)),
        (r"\bL4\b", "L4", Peak(fp32=30.3, tf32=60, bf16=121, fp16=121)),
        (r"RTX\s*3060", "RTX 3060 (Ti)", Peak(fp32=16.2, tf32=16.2, bf16=32.4, fp16=64.8)),
        (r"RTX\s*3070", "RTX 3070 (Ti)", Peak(fp32=21.8, tf32=21.8, bf16=43.5, fp16=87)),
        (r"RTX\s*3080", "RTX 3080 (Ti)", Peak(fp32=34.1, tf32=34.1, bf16=68.2, fp16=136.4)),
        (r"RTX\s*3090", "RTX 3090 (Ti)", Peak(fp32=40, tf32=40, bf16=80, fp16=160)),
        (r"RTX\s*4060", "RTX 4060 (Ti)", Peak(fp32=22.1, tf32=22.1, bf16=44.2, fp16=88.4)),
        (r"RTX\s*4070", "RTX 4070 (Ti, Super)", Peak(fp32=44.1, tf32=44.1, bf16=88.2, fp16=176.4)),
        (r"RTX\s*4080", "RTX 4080 (Super)", Peak(fp32=52.2, tf32=52.2, bf16=104.4, fp16=208.9)),
        (r"RTX\s*4090", "RTX 4090", Peak(fp32=82.6, tf32=82.6, bf16=165.2, fp16=330.3)),
    ))


def known_peak(gpu_name: str) -> tuple[str, Peak] | None:
    """The table's entry for a GPU name ('NVIDIA H100 80GB HBM3' -> H100), or None for one not in it."""
    for pattern, name, peak in PEAKS:
        if pattern.search(gpu_name):
            return name, peak
    return None


def check_imported(record: RunRecord, path: str, now: datetime | None = None) -> None:
    """Raise a one-line DashboardError if `record` cannot be a real measurement; see the module's policy."""
    now = now or datetime.now(timezone.utc)
    created = datetime.fromisoformat(record.created_at.replace("Z", "+00:00"))
    if created > now + FUTURE_SLACK:
        raise _refused(f"{path}.created_at: {record.created_at} is in the future (more than a day ahead of this "
                       f"server's clock)")
    if isinstance(record.result, MatmulSweep):
        gpus = {g.index: g.name or "" for g in record.machine.gpus}
        for i, point in enumerate(record.result.results):
            _check_point(point, f"{path}.payload.results[{i}]", gpus)


def _check_point(point: MatmulPoint, path: str, gpus: dict[int, str]) -> None:
    gflops = point.gflops
    if gflops is None or not point.device.startswith("cuda"):
        return
    index = int(point.device.split(":")[1]) if ":" in point.device else 0
    entry = known_peak(gpus.get(index, ""))
    if entry is None:
        return
    name, peak = entry
    limit = peak.tflops(point.dtype, point.tf32) * 1000
    if gflops > limit * (1 + PEAK_MARGIN):
        raise _refused(f"{path}.gflops: {gflops:,.0f} GFLOP/s on an {name} ({point.dtype}) is above that GPU's "
                       f"peak of {limit:,.0f} GFLOP/s by more than {PEAK_MARGIN:.0%}")


def _refused(what: str) -> DashboardError:
    return DashboardError(f"{what}; no real run looks like this, so nothing from the file was imported")
