"""The lecture's full-batch run: cuBLAS's (or MKL's) first-product set-up happens before the clock starts,
and the warm-up leaves the weights as they were (issue 24, item 8)."""

from __future__ import annotations

import torch
from torch import nn

from core.classifier import fullbatch
from core.classifier.model import ClassifierConfig, build_model
from core.classifier.training import features_for, train
from core.platform import clock
from tests.review_fixtures import toy_reviews

LECTURE = dict(preset="lecture", hidden=8, lr=0.3, epochs=2, weighting="binary", ngrams=1, val_fraction=0.0)


def test_a_forward_and_backward_run_before_the_first_clock_read(monkeypatch):
    features = features_for(toy_reviews(40), ClassifierConfig(**LECTURE))
    events: list[str] = []
    real_now, real_forward = clock.now, nn.Sequential.forward
    monkeypatch.setattr(clock, "now", lambda device: events.append("clock") or real_now(device))
    monkeypatch.setattr(nn.Sequential, "forward", lambda self, x: events.append("forward") or real_forward(self, x))
    train(features, ClassifierConfig(**LECTURE))
    assert "clock" in events and events.index("forward") < events.index("clock")


def test_the_warm_up_changes_no_weight_and_keeps_no_gradient():
    features = features_for(toy_reviews(40), ClassifierConfig(**LECTURE))
    device = torch.device("cpu")
    plan = fullbatch.FullBatch(fullbatch.move_dense(features, device), device)
    model = build_model(features.vocab_size, 8, seed=0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    fullbatch.warm_up(model, plan)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())
