"""Section 5, location: a tensor lives on one device, and torch refuses to multiply across two."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
import torch

from core.charts.axis_style import style
from core.parallel.figures import RIGHT_COLOR, WRONG_COLOR
from core.parallel.machine import CPU, pick_gpu
from core.parallel.section import Section, Snippet, TensorMaker, Values, check_sizes, random_tensor
from core.platform.devices import device_key
from core.platform.jobs import JobHooks

TITLE = "6. Where a tensor lives is part of its value"
NAMING_SNIPPET = (
    "a_cpu = torch.randn(1000, 1000)        # lives in the computer's memory (RAM)\n"
    'a_gpu = a_cpu.to("cuda")               # a copy in the GPU\'s own memory\n'
    "c_gpu = a_gpu @ a_gpu                  # fine: both on the GPU\n"
    "c_cpu = c_gpu.cpu()                    # bring the result back to print or plot it\n"
    "# a_cpu @ a_gpu                        # error: the two live in different places"
)


@dataclass(frozen=True)
class LocationConfig:
    size: int = 2  # n of the two n x n tensors: tiny, so the section needs no device lock

    def __post_init__(self) -> None:
        check_sizes((self.size,), "matrix size")


@dataclass(frozen=True)
class LocationResult:
    gpu: str | None  # None: nothing to mix the CPU with on this machine
    error: str | None = None  # torch's own message for a_cpu @ a_gpu, exactly as raised
    error_type: str | None = None  # e.g. 'RuntimeError'
    fixed_device: str | None = None  # where a_cpu.to(a_gpu.device) @ a_gpu ended up

    @property
    def refused(self) -> bool:
        return self.error is not None


def run_location(
    config: LocationConfig = LocationConfig(),
    hooks: JobHooks = JobHooks(),
    *,
    devices: Sequence[str] | None = None,
    make: TensorMaker = random_tensor,
    multiply: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = torch.matmul,
) -> LocationResult:
    """Multiply a CPU tensor by a GPU tensor and keep torch's real complaint, then do it right.

    Not timed and tiny, so it holds no device and cannot disturb anyone's timing; `hooks` is
    taken only so every section is called alike.
    """
    gpu = pick_gpu(devices)
    if gpu is None:
        return LocationResult(gpu=None)
    shape = (config.size, config.size)
    a_cpu, a_gpu = make(shape, torch.device(CPU)), make(shape, torch.device(gpu))
    error: str | None = None
    error_type: str | None = None
    try:
        multiply(a_cpu, a_gpu)
    except (RuntimeError, TypeError, ValueError) as exc:
        error, error_type = str(exc), type(exc).__name__
    fixed = multiply(a_cpu.to(a_gpu.device), a_gpu)
    return LocationResult(gpu, error, error_type, device_key(fixed.device))


def explain_location(gpu: str | None, config: LocationConfig = LocationConfig()) -> str:
    text = (
        "A tensor lives in one place: in the computer's memory (the CPU side) or in the GPU's own memory. "
        "PyTorch will not multiply two tensors that live in different places, so you first move one with "
        "`.to(...)`. Naming each variable after where it lives (`a_cpu`, `a_gpu`) makes the mistake visible "
        "before you run the line. "
    )
    if gpu:
        return text + (f"Run it to see the real error this machine's PyTorch raises for `a_cpu @ a_gpu` "
                       f"with the GPU {gpu}.")
    return text + (
        "There is no GPU here, so every tensor lives on the CPU and the error cannot happen on this machine; "
        "with a GPU, `a_cpu @ a_gpu` stops with a RuntimeError saying that all tensors were expected to be on "
        "the same device."
    )


def naming_snippets(gpu: str | None) -> tuple[Snippet]:
    return (Snippet(NAMING_SNIPPET),)


def summarize_location(result: LocationResult) -> str:
    if result.gpu is None:
        return "Nothing to mix: this machine has only the CPU."
    lines = []
    if result.refused:
        lines.append(f"PyTorch refused `a_cpu @ a_gpu` with a {result.error_type}; its message is below.")
    else:
        lines.append(f"This PyTorch multiplied a CPU tensor by a {result.gpu} tensor without an error.")
    if result.fixed_device:
        lines.append(f"After `a_cpu.to(a_gpu.device)` the product ran and its result lives on {result.fixed_device}.")
    return " ".join(lines)


def torch_error(result: LocationResult) -> str | None:
    """torch's message, shown exactly as raised."""
    return result.error


def _configure(v: Values) -> LocationConfig:
    return LocationConfig()


def location_figure(result: LocationResult) -> go.Figure:
    """Where a_cpu and a_gpu live, the copy that joins them, and the product that is refused."""
    fig = go.Figure()
    has_gpu = result.gpu is not None
    boxes = (
        (0.02, 0.42, "CPU memory (RAM)", "a_cpu", "#dbe9f6"),
        (0.58, 0.98, f"GPU memory ({result.gpu})" if has_gpu else "GPU memory (no GPU here)",
         "a_gpu" if has_gpu else "", "#e3f3df" if has_gpu else "#eeeeee"),
    )
    for x0, x1, title, tensor, fill in boxes:
        fig.add_shape(type="rect", x0=x0, x1=x1, y0=0.1, y1=0.9, fillcolor=fill, line=dict(color="#555"),
                      layer="below")
        fig.add_annotation(x=(x0 + x1) / 2, y=0.82, text=f"<b>{title}</b>", showarrow=False)
        if tensor:
            fig.add_annotation(x=(x0 + x1) / 2, y=0.5, text=f"<b>{tensor}</b>", showarrow=False,
                               font=dict(size=20, family="monospace"))
    if has_gpu:
        fig.add_annotation(x=0.66, y=0.35, ax=0.34, ay=0.35, xref="x", yref="y", axref="x", ayref="y",
                           text="", showarrow=True, arrowhead=3, arrowwidth=2, arrowcolor=RIGHT_COLOR)
        copy = '<span style="font-family:monospace">a_cpu.to(a_gpu.device)</span>: copy, then multiply'
        fig.add_annotation(x=0.5, y=0.28, showarrow=False, font=dict(color=RIGHT_COLOR), text=copy)
    verdict = (f"a_cpu @ a_gpu → {result.error_type}" if result.refused
               else "a_cpu @ a_gpu → no error here" if has_gpu
               else "a_cpu @ a_gpu would raise an error on a machine with a GPU")
    fig.add_annotation(x=0.5, y=0.97, text=verdict, showarrow=False,
                       font=dict(color=WRONG_COLOR if result.refused or not has_gpu else "#333", family="monospace"))
    fig.update_xaxes(visible=False, range=[0, 1])
    fig.update_yaxes(visible=False, range=[0, 1])
    style(fig, title=None, height=260, legend=False)
    fig.update_layout(margin=dict(l=10, r=10, t=10, b=10), plot_bgcolor="white")
    return fig


SECTION: Section[LocationConfig, LocationResult] = Section(
    key="location", title=TITLE, run=run_location, configure=_configure, knobs=(),
    explain=explain_location, summarize=summarize_location, figure=location_figure, timed=False,
    snippets=naming_snippets, verbatim=torch_error,
)
