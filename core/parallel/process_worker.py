"""One worker process of the marbles across processes: its rows of one big A @ B, then all_gather.

`torchrun` starts K copies (core.parallel.processes launches them). Every copy builds the same A and
B from one seed before any clock starts, as if each friend had been handed the bag. Then, for each
worker count k of the ladder (1, 2, 4, ... K), the first k processes form a gloo group and repeat
rounds of: multiply my block of A's rows by B (count my marbles), `all_gather` every block to every
worker (add up the counts). k = 1 is the one-process baseline: the whole product, nothing to gather.
Processes outside the group wait at a barrier, asleep.

Each round's clock is read on every worker and the slowest one counts, because the product is only
done when the last block is in: compute is the slowest worker's product, the round is the slowest
worker's product plus gather (which includes waiting for the others). Rank 0 checks the gathered C
against the one-process C and prints one event per worker count; core.platform.torchrun reads them.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence

import torch
import torch.distributed as dist

from core.errors import DashboardError
from core.platform.torchrun import Emit, WorkerEnv, exit_now, process_group, worker_main

MAX_ROUNDS = 50  # enough for a steady median; a tiny product would otherwise repeat thousands of times


def block_rows(n: int, workers: int) -> int:
    """Rows per worker: ceil(n / k), so k equal blocks cover A (all_gather needs equal sizes; the last is padded)."""
    return -(-n // workers)


def my_block(a: torch.Tensor, workers: int, rank: int) -> torch.Tensor:
    """This worker's rows of A, zero-padded to the common block size."""
    rows = block_rows(a.shape[0], workers)
    block = a[rank * rows:(rank + 1) * rows]
    if block.shape[0] < rows:
        block = torch.cat([block, block.new_zeros(rows - block.shape[0], a.shape[1])])
    return block


def rounds_for(budget_s: float, warm_round_s: float) -> int:
    """How many timed rounds fit the budget after one warm-up round: at least one, at most MAX_ROUNDS."""
    if warm_round_s <= 0:
        return MAX_ROUNDS
    return max(1, min(MAX_ROUNDS, math.floor(budget_s / warm_round_s)))


class Step:
    """The first k processes multiplying their blocks and gathering them, round after round."""

    def __init__(self, a: torch.Tensor, b: torch.Tensor, workers: int, rank: int,
                 group: dist.ProcessGroup | None) -> None:
        self.b, self.workers, self.group = b, workers, group
        self.block = a if workers == 1 else my_block(a, workers, rank)
        self.parts = [torch.empty_like(self.block) for _ in range(workers)] if workers > 1 else []
        self.result = torch.empty(0)

    def round(self) -> tuple[float, float]:
        """(seconds in my product, seconds in my product plus the gather) for one round on this worker."""
        if self.group is not None:
            dist.barrier(group=self.group)  # a common start: the slowest worker's time is the round's length
        t0 = time.perf_counter()
        part = self.block @ self.b
        t1 = time.perf_counter()
        if self.workers > 1:
            dist.all_gather(self.parts, part, group=self.group)
            t2 = time.perf_counter()
            self.result = torch.cat(self.parts)
        else:
            t2 = t1
            self.result = part
        return t1 - t0, t2 - t0

    def slowest(self, times: tuple[float, float]) -> tuple[float, float]:
        """The round as the group saw it: each time's maximum over the workers."""
        if self.group is None:
            return times
        t = torch.tensor(times, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.group)
        return float(t[0]), float(t[1])

    def rounds(self, budget_s: float) -> tuple[int, float]:
        """(timed rounds, the warm-up round's seconds): rank 0 chooses from the warm-up, every worker
        repeats as often."""
        warm = self.slowest(self.round())[1]
        count = torch.tensor([rounds_for(budget_s, warm)])
        if self.group is not None:
            dist.broadcast(count, src=0, group=self.group)
        return int(count.item()), warm


def _group_of_first(k: int) -> dist.ProcessGroup | None:
    """The gloo group of ranks 0..k-1 (None for k = 1: one process talks to nobody). Every rank must call
    this for every k, members or not, in the same order: torch.distributed's rule for new groups."""
    if k == 1:
        return None
    made = dist.new_group(list(range(k)))
    return made if isinstance(made, dist.ProcessGroup) else None  # a non-member gets a marker, never used


def run_ladder(env: WorkerEnv, n: int, ladder: Sequence[int], budget_s: float, seed: int, emit: Emit) -> None:
    """Every worker count in turn; rank 0 emits one 'step' event each. Collective: every rank calls it."""
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(n, n, generator=generator)
    b = torch.randn(n, n, generator=generator)
    emit({"event": "ready", "workers": env.world_size, "threads": torch.get_num_threads()})
    reference: torch.Tensor | None = None
    for k in ladder:
        group = _group_of_first(k)
        if env.rank < k:
            step = Step(a, b, k, env.rank, group)
            count, warm = step.rounds(budget_s / len(ladder))
            samples = [step.slowest(step.round()) for _ in range(count)]
            if env.rank == 0:
                if reference is None:
                    reference = step.result
                error = float((step.result[:n] - reference).abs().max()) if n else 0.0
                emit({"event": "step", "workers": k, "first_round_s": warm, "compute_s": [s[0] for s in samples],
                      "round_s": [s[1] for s in samples], "max_error": error})
        dist.barrier()  # the others sleep here while the group works


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m core.parallel.process_worker",
                                description="one worker of the marbles across processes (start it with torchrun)")
    p.add_argument("--size", type=int, required=True,  # not --n: torchrun would read it as its own --nnodes
                   help="A and B are n x n float32")
    p.add_argument("--ladder", required=True, help="worker counts to time, comma-separated, e.g. 1,2,4")
    p.add_argument("--budget-s", type=float, required=True, help="seconds of timed rounds over the whole ladder")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout-s", type=float, required=True, help="fail when a collective waits this long")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def body(env: WorkerEnv, emit: Emit) -> dict[str, str]:
        ladder = [int(k) for k in args.ladder.split(",")]
        if not ladder or max(ladder) > env.world_size or min(ladder) < 1:
            raise DashboardError(f"--ladder {args.ladder} needs 1 to {env.world_size} workers each")
        torch.set_num_threads(1)  # one friend, one pair of hands: processes, not threads, are what is split here
        with process_group("gloo", args.timeout_s):
            run_ladder(env, args.size, ladder, args.budget_s, args.seed, emit)
        return {"event": "done"}

    return worker_main(body)


if __name__ == "__main__":
    exit_now(main())
