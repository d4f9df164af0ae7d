"""The race's one config, from the widget (or the CLI's flags) to the loop: `SweepConfig`, what to time,
with `MatmulOptions`, how to time each size, the part the engine and the paired rounds take.

The page's form and the CLI build a `SweepConfig` directly; `core.matmul.plan` turns it into series once,
and the loop hands `config.options` to the engine. Saved runs keep `to_dict()`, one flat object of every
field (the settings of a saved sweep).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from core.errors import DashboardError
from core.matmul.series import DTYPES
from core.platform.cache import check_cache

MAX_BUDGET_S = 600.0  # 10 minutes per size: beyond that a sweep is not interactive any more


@dataclass(frozen=True)
class MatmulOptions:
    """How to time each size; the same for every series of a sweep."""

    budget_s: float = 1.0  # seconds per size and series, warm-up included; also the size plan's limit
    unsynced: bool = True  # also time without synchronizing (CUDA/MPS only: the classic bug)
    end_to_end: bool = False  # also time copying the inputs in and the result out (GPU only)
    check_error: bool = True  # relative error against a float64 CPU reference on a few rows
    seed: int = 0  # for the inputs and the sampled rows, so a rerun times the same matrices
    cache: str = "warm"  # "cold": evict the caches before each timed call, outside the clock (core.platform.cache)


@dataclass(frozen=True)
class SweepConfig:
    """What to time. Defaults finish in well under 20 s on a 2-core CPU (see README)."""

    sizes: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048)  # n of each n x n @ n x n product
    devices: tuple[str, ...] = ("cpu",)  # 'cpu', 'cuda', 'cuda:1', 'mps'; the page/CLI add the GPU when present
    dtypes: tuple[str, ...] = ("float32",)  # keys of core.matmul.series.DTYPES
    threads: tuple[int | None, ...] = (None,)  # CPU thread counts to compare; None: the cores free when it starts
    tf32: tuple[bool, ...] = (False,)  # TF32 settings to compare for CUDA float32
    options: MatmulOptions = field(default_factory=MatmulOptions)  # how each size is timed

    def __post_init__(self) -> None:
        if not self.sizes:
            raise DashboardError("give at least one matrix size")
        for n in self.sizes:
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise DashboardError(f"matrix sizes must be whole numbers of at least 1, got {n!r}")
        object.__setattr__(self, "sizes", tuple(sorted(set(self.sizes))))  # the size plan and the loop go up
        if not self.devices:
            raise DashboardError("choose at least one device")
        if not self.dtypes:
            raise DashboardError("choose at least one dtype")
        for dtype in self.dtypes:
            if dtype not in DTYPES:
                raise DashboardError(f"unknown dtype {dtype!r}; choose one of: {', '.join(DTYPES)}")
        if not self.threads and "cpu" in self.devices:
            raise DashboardError("choose at least one CPU thread count")
        if any(t is not None and t < 1 for t in self.threads):
            raise DashboardError(f"thread counts must be at least 1, got {list(self.threads)}")
        if not self.tf32:
            raise DashboardError("choose TF32 off, on, or both")
        budget_s = self.options.budget_s
        if not (0 < budget_s <= MAX_BUDGET_S):
            raise DashboardError(f"the time budget per size must be between 0 and {MAX_BUDGET_S:.0f} s, got {budget_s}")
        check_cache(self.options.cache)

    def to_dict(self) -> dict[str, Any]:
        """Every field in one flat object, as saved sweeps have always kept their settings."""
        what = {"sizes": self.sizes, "devices": self.devices, "dtypes": self.dtypes, "threads": self.threads,
                "tf32": self.tf32, **asdict(self.options)}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in what.items()}
