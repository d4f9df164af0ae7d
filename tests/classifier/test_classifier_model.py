"""The lecture's network, its config checks, and the sparse path against the dense reference."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch import nn

from core.classifier.model import (
    ClassifierConfig, SparseBatch, build_model, forward, kept_hidden, make_batch, nb_logit_weight, preset_config,
    resolve_input_mode, with_nb_logit,
)
from core.errors import DashboardError


def test_architecture_is_the_lectures():
    model = build_model(50, 8, seed=0)
    assert [type(m) for m in model] == [nn.Linear, nn.ReLU, nn.Linear, nn.Sigmoid]
    assert model[0].in_features == 50 and model[0].out_features == 8 and model[2].out_features == 1


def test_same_seed_same_weights_and_global_rng_untouched():
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    a, b, c = build_model(40, 4, seed=7), build_model(40, 4, seed=7), build_model(40, 4, seed=8)
    assert torch.equal(torch.rand(3), before)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
    assert not torch.equal(a[0].weight, c[0].weight)


def test_sparse_forward_and_gradients_match_dense():
    rng = np.random.default_rng(0)
    x = sp.random(9, 30, density=0.2, format="lil", dtype=np.float32, random_state=1)
    x[3] = 0  # an empty review: all its words unknown
    x = sp.csr_matrix(x)
    assert x[3].nnz == 0
    y = torch.from_numpy(rng.integers(0, 2, 9).astype(np.float32))
    grads = []
    outputs = []
    for mode in ("dense", "sparse"):
        model = build_model(30, 5, seed=0)
        p = forward(model, make_batch(x, mode))
        nn.BCELoss()(p, y).backward()
        outputs.append(p.detach())
        grads.append([q.grad.clone() for q in model.parameters()])
    assert outputs[0].shape == (9,)
    assert torch.allclose(outputs[0], outputs[1], atol=1e-6)
    for gd, gs in zip(*grads):
        assert torch.allclose(gd, gs, atol=1e-6)


def test_input_mode_auto():
    assert resolve_input_mode("auto", torch.device("cpu")) == "sparse"
    assert resolve_input_mode("auto", torch.device("mps")) == "dense"
    assert resolve_input_mode("dense", torch.device("cpu")) == "dense"


@pytest.mark.parametrize("field,value,message", [
    ("lr", 0.0, "learning rate"), ("lr", -1.0, "learning rate"), ("epochs", 0, "epochs"),
    ("batch_size", 0, "batch size"), ("hidden", 0, "hidden size"), ("momentum", 1.0, "momentum"),
    ("weight_decay", -0.1, "weight decay"), ("ngrams", 3, "ngrams"), ("weighting", "bm25", "weighting"),
    ("max_features", 0, "max features"), ("test_size", 1.0, "test share"), ("val_fraction", 1.0, "validation"),
    ("input_mode", "csr", "input mode"), ("report_every", -1, "report every"), ("nb_logit", -0.1, "naive-Bayes"),
])
def test_config_out_of_range(field, value, message):
    with pytest.raises(DashboardError, match=message) as err:
        ClassifierConfig(**{field: value})
    assert repr(value) in str(err.value)


def test_defaults_are_valid_and_round_trip():
    config = ClassifierConfig()
    assert ClassifierConfig(**config.to_dict()) == config


def test_the_nb_logit_adds_the_input_sum_to_the_logit_in_the_lectures_shape():
    """with_nb_logit: two more hidden units, and logit = the network's + weight x the sum of the review's inputs
    (its naive-Bayes log-odds on NB-scaled inputs), on both input paths; the network given is left as it was."""
    x = sp.random(7, 20, density=0.3, format="csr", dtype=np.float32, random_state=2)
    x.data = x.data * 4 - 2  # negative and positive NB ratios both
    model = build_model(20, 5, seed=3)
    before = [q.clone() for q in model.parameters()]
    torch.manual_seed(5)
    rng_state = torch.get_rng_state()
    wide = with_nb_logit(model, 0.3)
    assert torch.equal(torch.get_rng_state(), rng_state)  # no random init of the copy
    assert [type(m) for m in wide] == [nn.Linear, nn.ReLU, nn.Linear, nn.Sigmoid]
    assert wide[0].out_features == 7 and wide[2].in_features == 7
    row_sums = torch.from_numpy(np.asarray(x.sum(axis=1)).ravel())
    with torch.no_grad():
        logit = torch.logit(forward(model, make_batch(x, "sparse")).double())
        for mode in ("sparse", "dense"):
            got = torch.logit(forward(wide, make_batch(x, mode)).double())
            assert torch.allclose(got, logit + 0.3 * row_sums, atol=1e-4)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert with_nb_logit(model, 0.0) is model


def test_the_nb_logit_applies_to_nb_weightings_only_and_not_to_the_lecture():
    assert nb_logit_weight(ClassifierConfig()) == ClassifierConfig().nb_logit > 0
    assert kept_hidden(ClassifierConfig()) == ClassifierConfig().hidden + 2
    assert nb_logit_weight(ClassifierConfig(weighting="nbchars")) > 0
    assert nb_logit_weight(ClassifierConfig(weighting="tfidf")) == 0  # there the inputs' sum is not evidence
    assert kept_hidden(ClassifierConfig(weighting="binary", hidden=8)) == 8
    assert nb_logit_weight(preset_config("lecture")) == 0


def test_the_gathered_first_layer_equals_embedding_bag_with_an_empty_review():
    """first_layer_sparse replaced F.embedding_bag over weight.t(): same sums and gradients, empty rows too."""
    from core.classifier.model import first_layer_sparse

    x = sp.random(6, 50, density=0.2, format="csr", dtype=np.float32, random_state=1)
    x = sp.csr_matrix(sp.vstack([x[:2], sp.csr_matrix((1, 50), dtype=np.float32), x[2:]]))  # row 2: no known word
    batch = make_batch(x, "sparse")
    first = build_model(50, 4, seed=0)[0]
    assert isinstance(first, nn.Linear)
    ours = first_layer_sparse(first, batch)
    (grad_ours,) = torch.autograd.grad(ours.square().sum(), first.weight)
    assert isinstance(batch, SparseBatch)
    offsets = torch.from_numpy(x.indptr[:-1].astype(np.int64))
    bag = torch.nn.functional.embedding_bag(batch.indices, first.weight.t(), offsets, mode="sum",
                                            per_sample_weights=batch.values) + first.bias
    (grad_bag,) = torch.autograd.grad(bag.square().sum(), first.weight)
    assert torch.allclose(ours, bag, atol=1e-6) and torch.allclose(grad_ours, grad_bag, atol=1e-6)
    assert torch.equal(ours[2], first.bias.detach())


def test_a_batch_reaches_a_gpu_without_making_the_host_wait(monkeypatch, fake_cuda):
    """Every per-batch copy to a GPU is queued (pinned source, non_blocking), none reads the device back.

    On the fake GPU the tensors stay on the CPU; what is recorded is how each copy was asked for. A
    copy from pageable memory, or a `new_tensor` from a Python list, would make the host wait every
    batch, and the GPU could never run ahead.
    """
    from core.classifier.features import build_features
    from core.classifier.fit import MiniBatches
    from core.classifier.loaders import Reviews

    copies: list[tuple[bool, bool]] = []  # (source pinned, non_blocking) of each copy to the GPU
    pinned: set[int] = set()
    real_to = torch.Tensor.to

    def pin_memory(self):
        pinned.add(id(self))
        return self

    def to(self, *args, **kwargs):
        device = torch.device(args[0]) if args and isinstance(args[0], (str, torch.device)) else None
        if device is not None and device.type == "cuda":
            copies.append((id(self) in pinned, bool(kwargs.get("non_blocking"))))
            return self
        return real_to(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "pin_memory", pin_memory)
    monkeypatch.setattr(torch.Tensor, "to", to)
    monkeypatch.setattr(torch.Tensor, "new_tensor", lambda *a, **k: pytest.fail("new_tensor copies to the device"))
    texts = [f"a fine film {i}" for i in range(20)] + [f"a dull film {i}" for i in range(20)]
    reviews = Reviews(tuple(texts), np.array([1] * 20 + [0] * 20, dtype=np.int8), "toy")
    config = ClassifierConfig(batch_size=8, epochs=1)
    features = build_features(reviews, weighting=config.weighting, ngrams=config.ngrams,
                              max_features=config.max_features, test_size=0.25, val_fraction=0.0, seed=0)
    for mode in ("sparse", "dense"):
        copies.clear()
        plan = MiniBatches(features, config, torch.device("cuda:0"), mode)
        batch, target = next(plan.epoch())
        p = forward(build_model(features.vocab_size, 4, seed=0), batch)  # the fake GPU's tensors are CPU ones
        assert p.shape == target.shape
        expected = 4 if mode == "sparse" else 2  # indices, owner, values, labels; or the dense rows and labels
        assert copies == [(True, True)] * expected, mode

