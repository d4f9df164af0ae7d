"""What the 'why parallel' page says: plain explanations for students, as data.

Each explanation has a GPU-present and a GPU-absent branch (`gpu` is a device key such as
'cuda:0' or 'mps', or None). Summaries turn a measured result into one or two sentences that
quote only the numbers measured. Kept out of the page so tests can check every branch.
"""

from __future__ import annotations

from core.lecture import LECTURE_GPU_S
from core.parallel.demos import (
    CPU,
    ChainResult,
    FirstCallResult,
    LocationResult,
    MarblesResult,
    TimingBugResult,
)

BUSY_LOAD_PER_CORE = 0.5  # a load average above half the cores means others compete for them

SECTIONS: dict[str, str] = {  # key -> title, in page order
    "marbles": "1. Marbles: one worker or many",
    "chain": "2. One big array or a chain of tiny steps",
    "timing_bug": "3. The timing bug: reading the clock too early",
    "first_call": "4. The first call is slow",
    "location": "5. Where a tensor lives is part of its value",
}


def format_duration(seconds: float) -> str:
    """3 significant digits in ms, or in µs below a millisecond (also used by the charts)."""
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.3g} µs"


def _times(x: float) -> str:
    return f"{x:.2g}×" if x < 10 else f"{x:.0f}×"


def _sync_call(gpu: str | None) -> str:
    return "torch.mps.synchronize()" if gpu == "mps" else "torch.cuda.synchronize()"


def _gpu_name(gpu: str | None) -> str:
    return "cuda" if gpu is None or gpu.startswith("cuda") else gpu


# 1. Marbles ---------------------------------------------------------------------------------


def explain_marbles(gpu: str | None) -> str:
    text = (
        "Counting a bag of marbles alone is one worker (one CPU thread computing `a @ a`); split the bag "
        "with a friend and add the two counts, and it takes about half as long (two threads). "
        "Here the same product runs with 1, 2, 4, … threads, and the dashed line is the ideal where k workers "
        "are k times faster. A small matrix gains little or nothing, because splitting the bag and adding the "
        "counts costs as much as the counting itself. "
    )
    if gpu:
        return text + (f"The GPU ({gpu}) splits the bag across thousands of small cores: its star shows how many "
                       "times faster it is than one CPU thread.")
    return text + ("A GPU would split the bag across thousands of small cores; there is no GPU here, so only the "
                   "CPU is measured.")


def summarize_marbles(result: MarblesResult) -> str:
    lines = []
    for size in result.sizes:
        cpu = [p for p in result.cpu_points(size) if p.threads and p.threads > 1]
        parts = [f"{p.threads} threads ran {_times(result.speedup(p))} as fast as 1 (ideal {p.threads}×)"
                 for p in cpu if result.speedup(p) is not None]
        gpu = result.gpu_point(size)
        if gpu is not None and result.speedup(gpu) is not None:
            parts.append(f"the GPU ran {_times(result.speedup(gpu))} as fast as 1 CPU thread")
        if parts:
            lines.append(f"n = {size}: " + "; ".join(parts) + ".")
    if result.load_before is not None and result.load_before > BUSY_LOAD_PER_CORE * result.cores:
        lines.append(
            f"Other programs were keeping this machine busy (load average {result.load_before:.1f} on "
            f"{result.cores} cores): an extra thread then waits for a free core at every step, which can make "
            "it slower than one thread. Run again when the machine is quiet to see the real gain."
        )
    return "\n\n".join(lines)


# 2. The chain -----------------------------------------------------------------------------------


def explain_chain(gpu: str | None, steps: int = 1000) -> str:
    text = (
        f"Some work cannot be split: in `x = torch.tanh(x @ W)` repeated {steps} times, every step needs the "
        "result of the step before, like a line of people passing one bucket along. Here the same arithmetic "
        f"runs twice: once as one large operation on all rows at once, and once as {steps} tiny steps in order. "
    )
    if gpu:
        return text + (
            f"The GPU ({gpu}) pays a fixed cost of a few microseconds to launch each step and wait for it, "
            "however small the step, so the one big operation flies but the chain gains nothing over the CPU, or loses."
        )
    return text + (
        "On a GPU each tiny step pays a fixed launch cost of a few microseconds, however small it is, so the chain "
        "gains nothing there even when one big operation is many times faster; there is no GPU here, so only "
        "the CPU is measured."
    )


def summarize_chain(result: ChainResult) -> str:
    lines = []
    for device in [CPU] + ([result.gpu] if result.gpu else []):
        one, chain, step = result.time_s(device, "one op"), result.time_s(device, "chain"), result.per_step_s(device)
        if one is not None and chain is not None and step is not None:
            lines.append(f"{device}: one operation {format_duration(one)}, the chain {format_duration(chain)} ({format_duration(step)} per step).")
    big, small = result.gpu_speedup("one op"), result.gpu_speedup("chain")
    if big is not None and small is not None:
        verdict = f"{_times(small)} as fast" if small >= 1 else f"{_times(1 / small)} slower"
        lines.append(f"The GPU did the one operation {_times(big)} as fast as the CPU, but the chain only {verdict}.")
    return "\n\n".join(lines)


# 3. The timing bug --------------------------------------------------------------------------------


def explain_timing_bug(gpu: str | None) -> str:
    if gpu:
        return (
            f"A GPU ({gpu}) works in the background: `c = a @ a` returns as soon as the work is queued, long "
            "before it is done. Read the clock then and you time the queueing, not the product, so the GPU looks "
            "almost free. "
            f"`{_sync_call(gpu)}` waits until the GPU has finished, so call it before each clock reading; on the "
            "CPU both readings agree, because a CPU finishes the product before the line returns."
        )
    return (
        "On a GPU, `c = a @ a` returns as soon as the work is queued, long before it is done, so a clock read "
        f"right after it measures almost nothing: in the lecture a large product took about {LECTURE_GPU_S:.0f} s "
        "when timed with `torch.cuda.synchronize()`, and the clock showed nearly zero without it. "
        "On a CPU there is nothing asynchronous: the line returns only when the product is done, so both "
        "readings below agree. There is no GPU here to show the bug live."
    )


def timing_snippets(gpu: str | None) -> tuple[str, str]:
    """(wrong, right) code for timing one product on the GPU."""
    name, sync = _gpu_name(gpu), _sync_call(gpu)
    wrong = (
        f'a_gpu = torch.randn(8192, 8192, device="{name}")\n'
        "start = time.perf_counter()\n"
        "c_gpu = a_gpu @ a_gpu  # only queued\n"
        "elapsed = time.perf_counter() - start\n"
        "# WRONG: the GPU is still working"
    )
    right = (
        f'a_gpu = torch.randn(8192, 8192, device="{name}")\n'
        f"{sync}  # nothing queued\n"
        "start = time.perf_counter()\n"
        "c_gpu = a_gpu @ a_gpu\n"
        f"{sync}  # wait for it\n"
        "elapsed = time.perf_counter() - start"
    )
    return wrong, right


def summarize_timing_bug(result: TimingBugResult) -> str:
    lines = []
    for p in result.points:
        where = "CPU" if p.device == CPU else f"GPU ({p.device})"
        line = (f"{where}, n = {p.size}: without synchronize {format_duration(p.unsynced.median_s)}, "
                f"with synchronize {format_duration(p.synced.median_s)}")
        if p.device == CPU:
            line += f" (ratio {p.ratio:.2g}: a CPU has nothing to wait for, so any gap is noise)."
        else:
            line += f": the wrong reading is {_times(p.ratio)} too small."
        lines.append(line)
    return "\n\n".join(lines)


# 4. First call ------------------------------------------------------------------------------------


def explain_first_call(gpu: str | None) -> str:
    text = (
        "The first product a program computes is slow: PyTorch sets up its math library, starts its threads "
        "and picks a method for that size, which later calls skip, so a fair benchmark runs the operation "
        "once before timing (a warm-up) and never counts it. We time the first call in a brand-new Python "
        "process, because this dashboard has usually multiplied matrices already and its own first call (the "
        "middle bar) is often no slower than the rest. For a large matrix the set-up is lost in the work. "
    )
    if gpu:
        return text + (f"On the GPU ({gpu}) the first product also loads the GPU's matrix library, which can take "
                       "far longer than the product itself.")
    return text + ("On a GPU the first product also loads the GPU's matrix library, often a large fraction of a "
                   "second; there is no GPU here.")


def summarize_first_call(result: FirstCallResult) -> str:
    lines = []
    for p in result.points:
        lines.append(
            f"n = {p.size} on {p.device}: the first call in a fresh process took {format_duration(p.fresh.first_call_s)}, "
            f"{_times(p.cold_ratio)} the warmed median of {format_duration(p.fresh.median_s)}; in this server the first "
            f"call took {_times(p.here_ratio)} its median."
        )
    return "\n\n".join(lines)


# 5. Location --------------------------------------------------------------------------------------

NAMING_SNIPPET = (
    "a_cpu = torch.randn(1000, 1000)        # lives in the computer's memory (RAM)\n"
    'a_gpu = a_cpu.to("cuda")               # a copy in the GPU\'s own memory\n'
    "c_gpu = a_gpu @ a_gpu                  # fine: both on the GPU\n"
    "c_cpu = c_gpu.cpu()                    # bring the result back to print or plot it\n"
    "# a_cpu @ a_gpu                        # error: the two live in different places"
)


def explain_location(gpu: str | None) -> str:
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
