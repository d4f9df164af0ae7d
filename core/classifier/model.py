"""The lecture's review classifier: its configuration, the network, and how a batch goes through it.

The network is exactly the lecture's `nn.Sequential(Linear(V, hidden), ReLU, Linear(hidden, 1),
Sigmoid)`. What differs is only how the first layer is fed. A batch of reviews is a sparse (B, V)
matrix with ~30 non-zeros per row out of V ~ 50,000 columns. Densifying it per batch and calling
`Linear` multiplies mostly zeros; the sparse path sums the Linear's own weight columns of the words
present (`first_layer_sparse`: gather those columns, scale, add per review), which is the same product,
so both paths give the same numbers and the same gradients (tests/classifier/test_classifier_model.py checks).
Measured on rt-polarity with bigrams (bench/classifier.py): the sparse path is faster per epoch, and
it never allocates a (B, V) dense block.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from core.errors import DashboardError
from core.platform.devices import device_key
from core.platform.memory import free_device_bytes
from core.platform.units import byte_size
from core.classifier.features import NB_WEIGHTINGS, WEIGHTINGS

INPUT_MODES = {  # short labels for a selectbox
    "auto": "auto (sparse; dense on MPS)",  # Apple MPS's sparse kernels are incomplete
    "sparse": "sparse (words present only)",  # sum the Linear's weight columns of the words present
    "dense": "dense per batch",  # densify each batch, then the plain Linear layer
}

# Bounds on what a user may ask for: each is far beyond any useful run, and each keeps a typo
# (an extra zero, "inf") from becoming a traceback, a NaN loss or a terabyte allocation.
MAX_FEATURES = 10_000_000
MAX_HIDDEN = 65_536
MAX_LR = 100.0  # SGD on a sigmoid output: far above this the weights overflow and the loss is NaN
MAX_WEIGHT_DECAY = 10.0
MAX_BATCH = 1 << 20
MAX_EPOCHS = 100_000
MAX_THREADS = 1024
MAX_SEED = 2**32 - 1  # numpy's and scikit-learn's seeds must fit in 32 bits
MAX_NB_LOGIT = 100.0  # the naive-Bayes log-odds' weight in the output; far above 1 the network has no say
NB_UNITS = 2  # hidden units that carry the naive-Bayes log-odds s to the output: relu(s) - relu(-s) = s
PARAMETER_COPIES = 5  # weights, gradients, momentum buffer, the epochs' average and the kept copy
FLOAT32_BYTES = 4
PRESETS = {  # short labels for a radio; `preset_config` says what each one sets
    "minibatch": "mini-batch (sparse input, batches of 64)",
    "lecture": "the lecture (dense matrix, full-batch steps)",
}


@dataclass(frozen=True)
class ClassifierConfig:
    """Everything that decides a run. The defaults train rt-polarity in seconds on a 2-core CPU; they
    were chosen by cross-validation inside the training 80% of the fixed split, never on its test 20%
    nor on the 10 folds of the published protocol (bench/classifier.py: VALIDATION lists the candidates
    and their validation accuracy, and it measures the result)."""

    # data
    weighting: str = "nb"  # see core.classifier.features.WEIGHTINGS; 'nb' closes most of the gap to naive Bayes
    #   ('nbchars' won on validation folds but not on the 10 folds, and doubles an epoch: bench, VALIDATION)
    ngrams: int = 2  # 1: single words; 2: words and word pairs, so "not good" is a feature
    max_features: int | None = None  # vocabulary cap (most frequent terms); None keeps every term (~100k here)
    test_size: float = 0.2  # share of reviews held out for testing (unless the data set has its own split)
    val_fraction: float = 0.0  # share of training reviews held back to choose the kept epoch; 0 keeps the last
    #   epoch: on rt-polarity, holding back 10% cost more accuracy (0.4 points in CV) than choosing the epoch gained
    # model
    hidden: int = 16  # units in the one hidden layer; 64 was no better in CV, only slower
    # optimizer: torch.optim.SGD (fused where torch has the kernel: make_sgd)
    lr: float = 0.03  # learning rate: 0.01 was still climbing at epoch 10 in CV
    momentum: float = 0.9  # heavy-ball momentum
    weight_decay: float = 1e-3  # L2 penalty: the lecture's net has no dropout, so this is its regularizer
    # loop
    batch_size: int = 64  # reviews per step
    epochs: int = 10  # passes over the training reviews; cross-validated accuracy plateaus from about epoch 6
    average_from: int = 5  # keep the mean of the weights at the end of epochs average_from..epochs, scored as
    #   such from then on (core.classifier.fit.EpochAverage); 0: each epoch's own weights. The second half of
    #   10 epochs: +0.3 points on inner validation folds over the last epoch alone, the same on the fixed split,
    #   -0.03 on the 10 outer folds (bench/classifier.py, VALIDATION_INNER10)
    nb_logit: float = 0.3  # with the 'nb' weightings: the scored and kept network adds this times the naive-Bayes
    #   log-odds of the review (the sum of its NB-scaled inputs) to its output's logit, through two more hidden
    #   units (with_nb_logit), after training: NBSVM's interpolation with naive Bayes. SGD's path is unchanged.
    #   0: none. Chosen on inner validation folds (+0.16 there), then 10-fold 78.90 -> 79.78 (bench, VALIDATION_ROUND3)
    seed: int = 0  # initial weights, batch order and the split all follow from it
    device: str = "auto"  # auto | cpu | cuda | cuda:N | mps
    input_mode: str = "auto"  # see INPUT_MODES
    report_every: int = 0  # also report every N batches (0: once per epoch)
    threads: int | None = None  # CPU threads for torch; None: the cores free when the run starts (not oversubscribed)
    preset: str = "minibatch"  # 'lecture': the whole dense matrix on the device, one update per epoch (fullbatch.py)

    def __post_init__(self) -> None:
        _check(self.weighting in WEIGHTINGS, "weighting", self.weighting, f"one of {', '.join(WEIGHTINGS)}")
        _check(self.ngrams in (1, 2), "ngrams", self.ngrams, "1 or 2")
        _check(self.max_features is None or 1 <= self.max_features <= MAX_FEATURES, "max features",
               self.max_features, f"between 1 and {MAX_FEATURES:,} (or none for no cap)")
        _check(0 < self.test_size < 1, "test share", self.test_size, "between 0 and 1")
        _check(0 <= self.val_fraction < 1, "validation share", self.val_fraction, "at least 0 and below 1")
        _check(1 <= self.hidden <= MAX_HIDDEN, "hidden size", self.hidden, f"between 1 and {MAX_HIDDEN:,}")
        _check(0 < self.lr <= MAX_LR, "learning rate", self.lr, f"above 0 and at most {MAX_LR:g}")
        _check(0 <= self.momentum < 1, "momentum", self.momentum, "at least 0 and below 1")
        _check(0 <= self.weight_decay <= MAX_WEIGHT_DECAY, "weight decay", self.weight_decay,
               f"between 0 and {MAX_WEIGHT_DECAY:g}")
        _check(1 <= self.batch_size <= MAX_BATCH, "batch size", self.batch_size, f"between 1 and {MAX_BATCH:,}")
        _check(1 <= self.epochs <= MAX_EPOCHS, "epochs", self.epochs, f"between 1 and {MAX_EPOCHS:,}")
        _check(0 <= self.average_from <= MAX_EPOCHS, "average from epoch", self.average_from,
               f"0 (no average) or an epoch number up to {MAX_EPOCHS:,}")
        _check(0 <= self.nb_logit <= MAX_NB_LOGIT, "naive-Bayes weight", self.nb_logit,
               f"between 0 (none) and {MAX_NB_LOGIT:g}")
        _check(0 <= self.seed <= MAX_SEED, "seed", self.seed, f"a whole number from 0 to {MAX_SEED:,}")
        _check(self.input_mode in INPUT_MODES, "input mode", self.input_mode, f"one of {', '.join(INPUT_MODES)}")
        _check(self.preset in PRESETS, "preset", self.preset, f"one of {', '.join(PRESETS)}")
        _check(0 <= self.report_every <= MAX_BATCH, "report every", self.report_every,
               "0 (per epoch) or a number of batches")
        _check(self.threads is None or 1 <= self.threads <= MAX_THREADS, "threads", self.threads,
               f"between 1 and {MAX_THREADS} (or none for the free cores)")

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


LECTURE_VOCAB = 10_000  # 8.5k x 10k float32 = 0.34 GB: fits a laptop's RAM and any GPU
LECTURE = dict(  # the lecture's run: ten full-batch updates over a capped dense bag of words
    preset="lecture",
    weighting="nb",  # words and pairs, as the lecture had them (its lr was chosen on these), whatever the default
    max_features=LECTURE_VOCAB,
    epochs=10,  # "ten updates": each epoch of this preset is one full-batch step
    lr=3.0,  # chosen on a validation fifth of rt-polarity's training 80%: 1 and 2 barely move in ten
    momentum=0.9,  # steps, 5 and up diverge; plain SGD (momentum 0) stayed at 0.64 validation accuracy
    weight_decay=0.0,
    average_from=0,  # the lecture keeps its last update's weights
    nb_logit=0.0,  # the lecture's network alone, as trained
    batch_size=MAX_BATCH,  # unused (the batch is every training review); recorded so the settings say so
)


def preset_config(preset: str, **overrides: object) -> ClassifierConfig:
    """The config a preset starts from, with the caller's settings on top (the device, a seed, ...)."""
    if preset not in PRESETS:
        raise DashboardError(f"preset {preset!r} is unknown; choose one of {', '.join(PRESETS)}")
    base: dict[str, object] = dict(LECTURE) if preset == "lecture" else {}
    return ClassifierConfig(**{**base, **overrides, "preset": preset})  # type: ignore[arg-type]


def _check(ok: bool, what: str, value: object, wanted: str) -> None:
    if not ok:
        raise DashboardError(f"{what} {value!r} is out of range; it must be {wanted}")


def build_model(vocab_size: int, hidden: int, seed: int) -> nn.Sequential:
    """The lecture's network, initialised on the CPU from `seed` (PyTorch's default init).

    Built on the CPU and moved by the caller, so the same seed gives bit-identical starting weights
    on every device; the global RNG is left as it was.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(vocab_size, hidden), nn.ReLU(), nn.Linear(hidden, 1), nn.Sigmoid())


def nb_logit_weight(config: ClassifierConfig) -> float:
    """The naive-Bayes log-odds' weight the kept network gets: the config's with an 'nb' weighting, else 0.

    Only there is the sum of a review's inputs its naive-Bayes log-odds (each column is scaled by its
    log-count ratio); over counts or TF-IDF that sum would be the review's length, not evidence.
    """
    return config.nb_logit if config.weighting in NB_WEIGHTINGS else 0.0


def kept_hidden(config: ClassifierConfig) -> int:
    """Hidden units of the network a run keeps: the trained ones, plus NB_UNITS when the NB log-odds are added."""
    return config.hidden + (NB_UNITS if nb_logit_weight(config) else 0)


def with_nb_logit(model: nn.Sequential, weight: float) -> nn.Sequential:
    """`model` with NB_UNITS more hidden units, so its logit becomes model's + weight * (sum of the inputs).

    On NB-scaled inputs the sum of a review's inputs is its naive-Bayes log-odds s = sum_j b_j log r_j,
    so this is NBSVM's interpolation (Wang & Manning 2012) of a discriminative model with naive Bayes,
    written in the lecture's own shape: one unit computes relu(s), one relu(-s) (first-layer rows of +1
    and -1, bias 0), and the output weighs them +weight and -weight, since relu(s) - relu(-s) = s.
    Applied to the weights SGD trained (the training loss never sees it: trained with the term in,
    the network learned to lean on it and scored lower on validation folds, VALIDATION_ROUND3), so it
    adds no work per batch. A copy on the weights' own device; `model` is left as it is. weight 0: `model`.
    """
    if not weight:
        return model
    first, second = model[0], model[2]
    if not isinstance(first, nn.Linear) or not isinstance(second, nn.Linear):
        raise TypeError("with_nb_logit needs build_model's Linear, ReLU, Linear, Sigmoid")
    w = first.weight.detach()
    ones = torch.ones(1, first.in_features, dtype=w.dtype, device=w.device)
    hidden = first.out_features + NB_UNITS
    into = nn.Linear(first.in_features, hidden, device="meta").to_empty(device=w.device)  # meta: no random init,
    out = nn.Linear(hidden, 1, device="meta").to_empty(device=w.device)  # so the global RNG is left as it was
    with torch.no_grad():
        into.weight.copy_(torch.cat([w, ones, -ones]))
        into.bias.copy_(torch.cat([first.bias.detach(), first.bias.new_zeros(NB_UNITS)]))
        out.weight.copy_(torch.cat([second.weight.detach(), second.weight.new_tensor([[weight, -weight]])], dim=1))
        out.bias.copy_(second.bias.detach())
    wide = nn.Sequential(into, nn.ReLU(), out, nn.Sigmoid())
    return wide.train(model.training)


def make_sgd(params: Iterable[nn.Parameter], config: ClassifierConfig) -> torch.optim.Optimizer:
    """torch's SGD with the config's momentum and weight decay, fused into one kernel where torch has one.

    Unfused, every step walks the whole first-layer weight (105k x 16 on rt-polarity) once per term
    (weight decay, momentum, update); the fused kernel walks it once: 1.05 -> 0.71 s per epoch on a
    2-core CPU, with bit-identical losses. torch 2.3 (inside our range) has no CPU kernel, and torch
    checks only at the first step, so a one-element step on the parameters' device decides.
    """
    params = list(params)
    return torch.optim.SGD(params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay,
                           fused=True if params and _fused_sgd_runs(params[0].device) else None)


def _fused_sgd_runs(device: torch.device) -> bool:
    probe = nn.Parameter(torch.zeros(1, device=device))
    probe.grad = torch.zeros_like(probe)
    try:
        torch.optim.SGD([probe], lr=0.1, momentum=0.9, weight_decay=0.1, fused=True).step()
    except RuntimeError:
        return False
    return True


def model_bytes(vocab_size: int, hidden: int) -> int:
    """Bytes the network takes while it trains: its parameters, PARAMETER_COPIES times over."""
    parameters = vocab_size * hidden + hidden + hidden + 1
    return parameters * FLOAT32_BYTES * PARAMETER_COPIES


def check_model_fits(vocab_size: int, hidden: int, device: torch.device) -> None:
    """Refuse, before allocating, a network that would not fit in the device's free memory.

    An allocation of terabytes would otherwise end in an allocator traceback (or, on a CPU that
    overcommits, in the machine swapping for everyone on a classroom server).
    """
    need = model_bytes(vocab_size, hidden)
    free = free_device_bytes(device)
    if need > free:
        raise DashboardError(
            f"{hidden:,} hidden units over {vocab_size:,} terms need about {byte_size(need)} on {device_key(device)}, "
            f"but only {byte_size(free)} is free; choose fewer hidden units or a vocabulary cap"
        )


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`tensor` on `device` without making the host wait for a GPU.

    A copy from ordinary (pageable) host memory to a GPU blocks the host until it is done, so a
    training loop that copies every batch can never run ahead of the GPU. From page-locked memory
    with `non_blocking=True` the copy is queued like a kernel; torch's pinned-memory allocator keeps
    the host buffer alive until the copy has run.
    """
    if device.type != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)


@dataclass(frozen=True)
class SparseBatch:
    """One CSR batch as `first_layer_sparse` wants it: column ids, the review of each, values (one device)."""

    indices: torch.Tensor  # (nnz,) int64 column ids
    owner: torch.Tensor  # (nnz,) int64 row (review) of each non-zero: made on the CPU, so the device never waits
    values: torch.Tensor  # (nnz,) float32
    rows: int

    def to(self, device: torch.device) -> "SparseBatch":
        return SparseBatch(to_device(self.indices, device), to_device(self.owner, device),
                           to_device(self.values, device), self.rows)


def resolve_input_mode(mode: str, device: torch.device) -> str:
    if mode == "auto":
        return "dense" if device.type == "mps" else "sparse"
    return mode


def make_batch(x: sp.csr_matrix, mode: str) -> SparseBatch | torch.Tensor:
    """A few CSR rows as a CPU batch: SparseBatch, or a dense (B, V) float32 tensor of just these rows."""
    if mode == "dense":
        return torch.from_numpy(np.asarray(x.toarray(), dtype=np.float32))
    owner = np.repeat(np.arange(x.shape[0], dtype=np.int64), np.diff(x.indptr))
    return SparseBatch(
        indices=torch.from_numpy(x.indices.astype(np.int64)),
        owner=torch.from_numpy(owner),
        values=torch.from_numpy(x.data.astype(np.float32, copy=False)),
        rows=x.shape[0],
    )


def forward(model: nn.Sequential, batch: SparseBatch | torch.Tensor) -> torch.Tensor:
    """p(positive) per review, shape (B,)."""
    if isinstance(batch, torch.Tensor):
        return model(batch).squeeze(1)
    first = model[0]
    if not isinstance(first, nn.Linear):  # build_model's network always starts with one
        raise TypeError(f"the sparse path needs a network that starts with nn.Linear, not {type(first).__name__}")
    return model[1:](first_layer_sparse(first, batch)).squeeze(1)


def first_layer_sparse(first: nn.Linear, batch: SparseBatch) -> torch.Tensor:
    """dense_batch @ W.T + b, (B, hidden), from the weight columns of the words present only.

    Gathers those columns (`index_select`), scales them by the values and adds them up per review
    (`index_add_`). Its backward scatters into the columns present. `F.embedding_bag` over
    `weight.t()` gives the same numbers, but it copies the whole transposed (V, hidden) weight to
    a contiguous block every step and the whole gradient back: at rt-polarity's 105k terms that
    copying was 60 % of an epoch's CPU time (torch.profiler), and this path ran ~2x faster.
    """
    columns = first.weight.index_select(1, batch.indices).t() * batch.values[:, None]  # (nnz, hidden)
    summed = torch.zeros(batch.rows, first.out_features, dtype=columns.dtype, device=columns.device)
    return summed.index_add_(0, batch.owner, columns) + first.bias  # nothing here reads the device back
