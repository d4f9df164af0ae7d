"""`python -m core devices`: the hardware check."""

from __future__ import annotations

import argparse

from core.cli import HELP
from core.cli.output import format_table, print_json, wrap
from core.platform.devices import GET_A_GPU
from core.platform.hardware import MachineInfo, inspect_machine
from core.platform.units import byte_size, number, size_unit


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("devices", help=HELP["devices"])
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    info = inspect_machine(free_memory=True)
    if args.json:
        print_json(info.to_dict())
    else:
        print(render(info))
    return 0


def render(info: MachineInfo) -> str:
    cpu = info.cpu
    lines = [
        f"CPU   {cpu.name}: {cpu.physical_cores or '?'} physical / {cpu.logical_cores or '?'} logical cores, "
        f"torch uses {cpu.torch_threads} threads, SIMD {cpu.capability or 'unknown'}",
        f"RAM   {byte_size(cpu.ram_available_bytes)} available of {byte_size(cpu.ram_total_bytes)}",
        f"torch {info.torch_version}, CUDA {info.cuda_version or 'none (CPU build)'}, "
        f"MPS {'available' if info.mps_available else 'not available'}",
    ]
    lines = [wrap(lines), ""]  # a long CPU name (and its SIMD) wraps rather than running past 100 columns
    if info.gpus:
        unit, scale = size_unit(max(g.total_memory_bytes or 0 for g in info.gpus))  # one unit for the columns
        rows = [
            [g.index, g.name, *(number(None if b is None else b / scale)
                                for b in (g.used_memory_bytes, g.free_memory_bytes, g.total_memory_bytes)),
             g.compute_capability, g.multiprocessors]
            for g in info.gpus
        ]
        lines.append(format_table(["GPU", "name", f"used {unit}", f"free {unit}", f"total {unit}", "capability", "SMs"],
                                  rows))
        lines.append(f"TF32 for float32 matmul: {'on' if info.tf32_matmul else 'off'}")
    elif not info.mps_available:
        lines.append(wrap(GET_A_GPU))
    lines += [wrap(f"note: {n}") for n in info.notes]
    return "\n".join(lines)
