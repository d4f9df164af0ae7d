"""The series a race's config turns into on this machine, computed once and passed along.

`plan_series(config)` resolves the devices, checks every dtype and thread count and enumerates the
series, before anyone waits in line (a bad choice is refused there). The one thing it cannot know yet
is how many cores other programs leave free: a thread count of None ("free cores") is resolved when the
job holds its devices and has probed the load, by `Plan.under(load)`, which only fills in that count
(no device is asked again). `tf32_unavailable` says why TF32 would change nothing for the chosen
devices: the page disables its TF32 choice with it, and the plan notes it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from core.errors import DashboardError
from core.matmul.config import SweepConfig
from core.matmul.series import Series, check_dtype, has_tf32, supported_dtypes
from core.platform.devices import device_key, resolve_device
from core.platform.machine_load import default_threads
from core.results.load import MachineLoad


@dataclass(frozen=True)
class Plan:
    """The series a config turns into on this machine, and what was left out and why.

    `asked` keeps a CPU series' thread count as chosen (None: the cores free when the sweep starts);
    `series` is them with that count filled in from `load` (torch's current count before the load is
    known), each line once; `notes` says what was left out, and what the free cores came to.
    """

    config: SweepConfig
    asked: tuple[Series, ...]
    left_out: tuple[str, ...] = ()  # a dtype one of several devices lacks
    load: MachineLoad | None = None
    series: tuple[Series, ...] = field(init=False)
    notes: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        cores = os.cpu_count() or 1
        series = []
        for s in self.asked:
            if s.device == "cpu":
                count = default_threads(s.threads, self.load) or torch.get_num_threads()
                if count > cores:
                    raise DashboardError(f"{count} threads asked for, but this machine has {cores} logical cores")
                s = Series(s.device, s.dtype, threads=count)
            series.append(s)
        unique = tuple(dict.fromkeys(series))
        object.__setattr__(self, "series", unique)
        object.__setattr__(self, "notes", (*self.left_out, *self._free_core_notes(), *self._single_note(unique)))

    def under(self, load: MachineLoad | None) -> Plan:
        """The same plan with "free cores" counted from the load the job probed."""
        return Plan(self.config, self.asked, self.left_out, load)

    @property
    def devices(self) -> list[str]:
        return sorted({s.device for s in self.series})

    def _free_core_notes(self) -> list[str]:
        load, threads = self.load, self.config.threads
        if load is None or None not in threads or not any(s.device == "cpu" for s in self.asked):
            return []
        used = f"{load.free_cores} thread{'s' if load.free_cores != 1 else ''}"
        notes = [f"Free cores: other programs left {load.free_cores} of {load.cores} cores idle, so the CPU series "
                 f"with the thread count left to the dashboard used {used}."]
        if load.free_cores in threads:
            notes.append(f"Free cores came to {used}, the same as the {used} series, so that is one CPU line, not "
                         "a race against itself. Choose thread counts (1 and all cores) to race them.")
        return notes

    @staticmethod
    def _single_note(unique: tuple[Series, ...]) -> list[str]:
        if len(unique) != 1:
            return []
        return [f"Only one series ({unique[0].label}): nothing to race. Choose a second thread count, "
                "dtype or device to compare."]


def tf32_unavailable(devices: Sequence[str]) -> str | None:
    """Why the TF32 choice would change nothing for these devices (the page disables it with this), else None."""
    gpus = [device_key(resolve_device(d)) for d in devices if d.startswith("cuda")]
    if not gpus:
        return "only CUDA float32 uses TF32, and no CUDA GPU is among the devices"
    if not any(has_tf32(torch.device(g)) for g in gpus):
        return (f"{', '.join(gpus)} {'has' if len(gpus) == 1 else 'have'} no TF32 tensor cores (compute "
                "capability 8.0 and newer have them): float32 is timed with TF32 off")
    return None


def plan_series(config: SweepConfig, load: MachineLoad | None = None) -> Plan:
    """Resolve devices, dtypes, thread counts and TF32 settings into series, or say what is wrong.

    A dtype that one of several devices lacks (float64 on MPS) is left out there with a note;
    a dtype no chosen device supports, an absent device, or more threads than cores is an error.
    A thread count of None means the cores `load` found free (torch's current count without a
    probe), so a busy machine is not oversubscribed by default.
    """
    asked: list[Series] = []
    notes: list[str] = []
    devices = list(dict.fromkeys(device_key(resolve_device(d)) for d in config.devices))
    for dtype in config.dtypes:
        if not any(dtype in supported_dtypes(torch.device(d)) for d in devices):
            check_dtype(torch.device(devices[0]), dtype)  # raises with the list of supported dtypes
    for name in devices:
        device = torch.device(name)
        for dtype in config.dtypes:
            if dtype not in supported_dtypes(device):
                notes.append(f"{dtype} is not supported on {name}; left out there")
                continue
            if device.type == "cpu":
                asked += [Series(name, dtype, threads=t) for t in dict.fromkeys(config.threads)]
            elif device.type == "cuda" and dtype == "float32":
                settings = dict.fromkeys(t and has_tf32(device) for t in config.tf32)
                asked += [Series(name, dtype, tf32=t) for t in settings]
                if True in config.tf32 and not has_tf32(device):
                    notes.append(f"TF32 on: {tf32_unavailable([name])}; no TF32-on series there")
            else:
                asked.append(Series(name, dtype))
    return Plan(config, tuple(asked), tuple(notes), load)
