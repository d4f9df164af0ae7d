"""The lecture's way to train: the whole dense document-term matrix on the device, one update per pass.

The lecture moved its dense (reviews x terms) float32 matrix, the network and the loss to CUDA once
and took ten full-batch gradient steps. Each step is one (n x V) @ (V x hidden) product forward and
two of the same size backward: a few big array operations, exactly the work a GPU splits well, so
the GPU's speed-up grows with the matrix. The mini-batch plan (core.classifier.fit) does the same
arithmetic as ~130 tiny steps per epoch instead, where per-step overhead dominates. Both run in the
one loop, `fit.fit`; this module is the lecture's batch plan and the size check before it.

The dense matrix is the cost: n x V x 4 bytes. Its size is known from the sparse features before
anything dense exists, so `check_dense_fits` refuses it (with the largest vocabulary cap that would
fit) before allocating. It is built on the device from the CSR matrix (`sparse_csr_tensor(...).to(
device).to_dense()`), so a GPU run never holds a dense copy in RAM.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from core.classifier.features import Features
from torch import nn

from core.classifier.fit import Job, OneProcess, Step, finite
from core.classifier.model import FLOAT32_BYTES, PARAMETER_COPIES, ClassifierConfig, model_bytes
from core.errors import DashboardError
from core.platform.devices import device_key
from core.platform.jobs import Progress
from core.platform.memory import free_device_bytes
from core.platform.units import byte_size

MB = 1_000_000
HEADROOM = 0.8  # use at most this share of the free memory: activations, the allocator's slack, the OS


@dataclass(frozen=True)
class DenseSize:
    """What the lecture preset will allocate on its device, known before it allocates it."""

    rows: int  # training + validation + test reviews, each row held densely
    terms: int
    hidden: int

    @property
    def matrix_bytes(self) -> int:
        return self.rows * self.terms * FLOAT32_BYTES

    @property
    def matrix_mb(self) -> float:
        return self.matrix_bytes / MB

    @property
    def total_bytes(self) -> int:
        """The matrices, the network with its copies, and the (rows x hidden) activations with their gradients."""
        return self.matrix_bytes + model_bytes(self.terms, self.hidden) + 3 * self.rows * self.hidden * FLOAT32_BYTES

    def largest_cap(self, free_bytes: int) -> int:
        """The largest vocabulary cap whose dense run would fit in `free_bytes` (0 if none would)."""
        per_term = (self.rows + self.hidden * PARAMETER_COPIES) * FLOAT32_BYTES  # model_bytes' copies
        fixed = 3 * self.rows * self.hidden * FLOAT32_BYTES + model_bytes(0, self.hidden)  # biases, second layer
        return max(0, int((free_bytes * HEADROOM - fixed) // per_term))


def dense_size(features: Features, hidden: int) -> DenseSize:
    return DenseSize(features.n_train + features.n_val + features.n_test, features.vocab_size, hidden)


def check_dense_fits(size: DenseSize, device: torch.device) -> None:
    """Refuse, before allocating, a dense matrix the device cannot hold, naming a vocabulary cap that fits."""
    free = free_device_bytes(device)
    if size.total_bytes > free * HEADROOM:
        cap = size.largest_cap(free)
        advice = (f"set a vocabulary cap of at most {cap:,} terms" if cap >= 1
                  else "use the minibatch preset, which never densifies the matrix")
        raise DashboardError(
            f"the lecture preset's dense matrix ({size.rows:,} reviews x {size.terms:,} terms) needs "
            f"{byte_size(size.total_bytes)} on {device_key(device)} but only {byte_size(free)} is free "
            f"(at most {HEADROOM:.0%} of it is used); {advice}"
        )


def to_dense(x: sp.csr_matrix, device: torch.device) -> torch.Tensor:
    """The CSR matrix as a dense float32 tensor on `device`, densified there (never a dense copy in RAM first)."""
    if x.shape[0] == 0:
        return torch.zeros(x.shape, dtype=torch.float32).to(device)
    with warnings.catch_warnings():  # "sparse CSR support is in beta": construction and to_dense are what we use
        warnings.simplefilter("ignore", UserWarning)
        csr = torch.sparse_csr_tensor(torch.from_numpy(x.indptr.astype(np.int64)),
                                      torch.from_numpy(x.indices.astype(np.int64)),
                                      torch.from_numpy(x.data.astype(np.float32, copy=False)), size=x.shape)
    if device.type == "mps":  # MPS cannot densify a sparse tensor: densify on the CPU, move once
        return csr.to_dense().to(device)
    return csr.to(device).to_dense()


@dataclass(frozen=True)
class DenseData:
    """The split's matrices and labels, dense, on the device: moved once, used by every update."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_val: torch.Tensor
    y_val: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def move_dense(features: Features, device: torch.device) -> DenseData:
    def labels(y: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(y.astype(np.float32)).to(device)

    return DenseData(to_dense(features.x_train, device), labels(features.y_train), to_dense(features.x_val, device),
                     labels(features.y_val), to_dense(features.x_test, device), labels(features.y_test))


class FullBatch(OneProcess):
    """The batch plan of the lecture: every epoch is one step on the whole dense training matrix.

    Each split is scored in one product too; `fit` reports every update like an epoch of the
    mini-batch plan (one batch per epoch): the loss before the step, the test figures after it.
    """

    n_batches = 1

    def __init__(self, data: DenseData, device: torch.device) -> None:
        self.data = data
        self.device = device

    def epoch(self) -> Iterator[Step]:
        yield self.data.x_train, self.data.y_train

    def split(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        d = self.data
        return (d.x_val, d.y_val) if split == "val" else (d.x_test, d.y_test)

    def eval_steps(self, split: str) -> Iterator[Step]:
        yield self.split(split)

    def eval_rows(self, split: str) -> int:
        return int(self.split(split)[0].shape[0])


def full_batch_plan(features: Features, config: ClassifierConfig, device: torch.device, job: Job) -> FullBatch:
    """Move the dense matrices to `device` (the caller holds it), saying so first: on a big vocabulary it
    takes a while."""
    size = dense_size(features, config.hidden)
    job.report(Progress(0, config.epochs,
                        f"moving the dense matrix to {device_key(device)}: {byte_size(size.matrix_bytes)}"))
    return FullBatch(move_dense(features, device), device)


WARM_UP_ROWS = 8  # enough to run every kernel an update runs; the gradients are thrown away


def warm_up(model: nn.Sequential, plan: FullBatch) -> None:
    """One forward and backward on a few rows before the clock starts; the weights are not changed.

    The first product on a GPU creates cuBLAS's handle and workspace (hundreds of milliseconds on a
    fresh process). The lecture's run is ten updates, each timed on its own: without this, that
    set-up would be billed to the first update and to the run's total.
    """
    x, y = plan.data.x_train[:WARM_UP_ROWS], plan.data.y_train[:WARM_UP_ROWS]
    nn.functional.binary_cross_entropy(finite(model(x).squeeze(1)), y).backward()
    model.zero_grad(set_to_none=True)
