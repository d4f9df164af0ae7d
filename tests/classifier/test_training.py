"""Training: the loss falls, seeds reproduce, the chosen device gets everything, nothing is densified whole."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from core.platform.device_lock import current_holder
from core.platform import clock

from core.classifier import fit, training
from core.classifier.model import ClassifierConfig, SparseBatch
from core.errors import DashboardError
from core.platform.jobs import JobHooks
from core.classifier.training import (
    LOSS_TOLERANCE, compare_devices_same_seed, features_for, predict, train,
)
from core.classifier.fit import batch_order
from core.classifier.features import synthetic_features
from core.results.train import TrainRun
from tests.review_fixtures import keep_cuda_on_cpu, toy_reviews

FAST = dict(hidden=8, lr=0.3, batch_size=16, epochs=6, weighting="binary", ngrams=1, val_fraction=0.1)


@pytest.fixture(scope="module")
def toy_features():
    return features_for(toy_reviews(60), ClassifierConfig(**FAST))


def test_loss_falls_on_a_separable_toy_set(toy_features):
    result = train(toy_features, ClassifierConfig(**FAST))
    losses = [e.train_loss for e in result.epochs]
    assert len(losses) == 6 and losses[-1] < losses[0] / 3
    assert result.epochs[-1].test_accuracy == 1.0 and result.test_accuracy == 1.0
    assert not result.stopped and result.device == "cpu" and result.input_mode == "sparse"
    p = predict(result, ["great w1 w2", "awful w1 w2"])
    assert p[0] > 0.8 > 0.2 > p[1]


def test_same_seed_identical_first_epoch_losses(toy_features):
    cfg = ClassifierConfig(**{**FAST, "epochs": 1})
    a, b = train(toy_features, cfg), train(toy_features, cfg)
    assert a.epochs[0].train_loss == b.epochs[0].train_loss
    assert a.epochs[0].test_loss == b.epochs[0].test_loss
    c = train(toy_features, ClassifierConfig(**{**FAST, "epochs": 1, "seed": 1}))
    assert c.epochs[0].train_loss != a.epochs[0].train_loss


def test_batch_order_is_seeded_and_differs_per_epoch():
    a, b = list(batch_order(50, 3, 2)), list(batch_order(50, 3, 2))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[0], a[1]) and sorted(a[0]) == list(range(50))


def test_dense_and_sparse_input_train_alike(toy_features):
    s = train(toy_features, ClassifierConfig(**{**FAST, "epochs": 2, "input_mode": "sparse"}))
    d = train(toy_features, ClassifierConfig(**{**FAST, "epochs": 2, "input_mode": "dense"}))
    assert d.input_mode == "dense"
    assert [e.train_loss for e in s.epochs] == pytest.approx([e.train_loss for e in d.epochs], abs=1e-5)


@pytest.mark.parametrize("mode", ["sparse", "dense"])
def test_full_matrix_is_never_densified(toy_features, monkeypatch, mode):
    densified: list[tuple[int, int]] = []
    for cls in (sp.csr_matrix, sp.csr_array):
        original = cls.toarray

        def spy(self, *args, _original=original, **kwargs):
            densified.append(self.shape)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "toarray", spy)
    monkeypatch.setattr(cls, "todense", lambda self, *a, **k: pytest.fail("todense called"))
    monkeypatch.setattr(torch.Tensor, "to_dense", lambda self, *a, **k: pytest.fail("to_dense called"))
    monkeypatch.setattr(fit, "EVAL_BATCH", 10)
    cfg = ClassifierConfig(**{**FAST, "epochs": 1, "input_mode": mode})
    train(toy_features, cfg)
    if mode == "sparse":
        assert densified == []
    else:
        assert densified and max(rows for rows, _ in densified) <= max(cfg.batch_size, 10)
        assert all(rows < toy_features.n_train for rows, _ in densified)


def test_chosen_device_gets_model_and_every_tensor(toy_features, fake_cuda, monkeypatch):
    """With a fake GPU, every .to() must aim at cuda:0 (kept on the CPU here) and the clock must sync it."""
    targets = keep_cuda_on_cpu(monkeypatch)
    batches: list[SparseBatch] = []
    sparse_to = SparseBatch.to
    monkeypatch.setattr(SparseBatch, "to", lambda self, d: batches.append(torch.device(d)) or sparse_to(self, d))
    cfg = ClassifierConfig(**{**FAST, "epochs": 1, "device": "cuda"})
    result = train(toy_features, cfg)
    n_batches = -(-toy_features.n_train // cfg.batch_size)
    assert result.device == "cuda:0"
    assert targets.count("model") == 1
    assert batches and all(d == torch.device("cuda:0") for d in batches)
    assert len(batches) >= n_batches  # every training batch (and every evaluation batch) went to the GPU
    assert sum(t.startswith("tensor") for t in targets) >= 3 * n_batches  # indices, owner, values... and labels
    assert fake_cuda.events.count("sync") >= 2  # the clock waited for the device before each reading


def test_epoch_seconds_come_from_the_synchronizing_clock(toy_features, monkeypatch):
    ticks = iter(float(i) for i in range(10_000))
    monkeypatch.setattr(clock, "read_clock", lambda: next(ticks))
    result = train(toy_features, ClassifierConfig(**{**FAST, "epochs": 2}))
    # per epoch: start reading, end reading (one tick apart), then the elapsed and next-start readings
    assert [e.seconds for e in result.epochs] == [1.0, 1.0]
    assert result.epochs[1].elapsed_s > result.epochs[0].elapsed_s


def test_progress_reports_every_n_batches(toy_features):
    reports = []
    cfg = ClassifierConfig(**{**FAST, "epochs": 2, "report_every": 2})
    steps = []
    result = train(toy_features, cfg, JobHooks(on_progress=steps.append))
    reports = [p.item for p in steps if p.item is not None]  # the thread line and the first epoch's counts aside
    n_batches = reports[0].n_batches
    assert sum(r.partial for r in reports) == 2 * ((n_batches - 1) // 2)  # batches 2, 4, ... but not the last
    assert [r.epoch for r in reports if not r.partial] == [1, 2] and len(result.epochs) == 2
    assert all(0 <= r.test_accuracy <= 1 and r.seconds >= 0 for r in reports)
    assert [r.progress for r in reports] == sorted(r.progress for r in reports)
    assert steps[-1].done == steps[-1].total == 2 * n_batches and steps[-1].message.startswith("epoch 2/2: train loss")


def test_stop_between_batches_keeps_finished_epochs_and_frees_the_device(toy_features):
    calls = []
    n_batches = -(-toy_features.n_train // FAST["batch_size"])
    stop_after = n_batches + 2  # in the middle of the second epoch

    def should_stop() -> bool:
        calls.append(1)
        return len(calls) > stop_after

    result = train(toy_features, ClassifierConfig(**FAST), JobHooks(should_stop=should_stop))
    assert result.stopped and len(result.epochs) == 1 and result.best_epoch == 1
    assert current_holder("cpu") is None  # released


def test_training_holds_the_device_lock(toy_features):
    held = []

    def on_progress(report):
        held.append(current_holder("cpu") is not None)

    train(toy_features, ClassifierConfig(**{**FAST, "epochs": 1}), JobHooks(on_progress=on_progress))
    assert held and all(held)  # every line (thread count, batches done, the epoch) while it holds the CPU


def test_the_per_job_cap_stops_training_and_keeps_finished_epochs(toy_features, monkeypatch):
    real_step = fit._sgd_step
    steps = []

    def slow_step(*args):
        steps.append(1)
        if len(steps) > n_batches:
            time.sleep(0.05)
        return real_step(*args)

    n_batches = -(-toy_features.n_train // FAST["batch_size"])
    monkeypatch.setattr(fit, "_sgd_step", slow_step)
    # the first epoch takes milliseconds; epochs 2 to 5 would take 4 * n_batches * 0.05 s = 1.2 s, past the cap
    result = train(toy_features, ClassifierConfig(**{**FAST, "epochs": 5}), JobHooks(max_job_s=0.5))
    assert result.stopped and 1 <= len(result.epochs) < 5 and result.best_epoch is not None


def test_kept_epoch_is_the_lowest_validation_loss(toy_features):
    result = train(toy_features, ClassifierConfig(**{**FAST, "epochs": 4, "lr": 1.0}))
    val_losses = [e.val_loss for e in result.epochs]
    assert result.best_epoch == int(np.argmin(val_losses)) + 1
    probs = predict(result, [toy_reviews(60).texts[i] for i in range(3)])
    assert probs.shape == (3,) and ((0 <= probs) & (probs <= 1)).all()


def test_kept_weights_score_what_their_epoch_reported():
    reviews = toy_reviews(60)
    cfg = ClassifierConfig(**{**FAST, "epochs": 3, "val_fraction": 0.0})
    features = features_for(reviews, cfg)
    result = train(features, cfg)
    assert result.best_epoch == 3  # no validation rows: the last epoch is kept
    p = predict(result, [reviews.texts[i] for i in range(reviews.n)])
    assert p.shape == (reviews.n,)


def test_unknown_device_is_refused(toy_features):
    with pytest.raises(DashboardError, match="unknown device"):
        train(toy_features, ClassifierConfig(**{**FAST, "device": "tpu"}))


def test_result_statistics(toy_features):
    result = train(toy_features, ClassifierConfig(**{**FAST, "epochs": 2}))
    assert result.train_seconds == pytest.approx(sum(e.seconds for e in result.epochs))
    assert result.samples_per_s == pytest.approx(2 * result.n_train / result.train_seconds)
    assert result.vocab_size == toy_features.vocab_size
    saved = result.run.to_json()["epochs"][0]  # the report is the saved epoch: the old keys, and only more
    assert set(saved) == {"epoch", "train_loss", "test_loss", "test_accuracy", "seconds", "val_loss", "val_accuracy",
                          "elapsed_s"}  # a finished epoch: no batch counts
    assert saved["val_loss"] == result.epochs[0].val_loss
    back = TrainRun.from_json(result.run.to_json(), "run").epochs[0]
    assert not back.partial and back.progress == 1.0 and back.val_accuracy == result.epochs[0].val_accuracy


def test_compare_devices_same_seed_cpu_vs_cpu(toy_features):
    comparison = compare_devices_same_seed(toy_features, ClassifierConfig(**FAST), ("cpu", "cpu"), epochs=2)
    assert comparison.devices == ("cpu", "cpu")
    assert len(comparison.train_losses[0]) == 2
    assert comparison.max_loss_difference == 0.0 and comparison.close(LOSS_TOLERANCE)


def test_compare_devices_on_synthetic_data_needs_no_download():
    """What the GPU self-check can run anywhere: synthetic reviews, the default network, 2 epochs."""
    features = synthetic_features(1000, 2000, 40)
    comparison = compare_devices_same_seed(features, ClassifierConfig(), ("cpu", "cpu"), epochs=2)
    assert comparison.close(LOSS_TOLERANCE)
    assert comparison.train_losses[0][1] < comparison.train_losses[0][0]  # it learns


def test_a_different_seed_is_not_close():
    """The comparison can fail: two seeds differ by far more than the tolerance."""
    features = synthetic_features(1000, 2000, 40)
    a = train(features, ClassifierConfig(epochs=2, seed=0))
    b = train(features, ClassifierConfig(epochs=2, seed=1))
    assert max(abs(x.train_loss - y.train_loss) for x, y in zip(a.epochs, b.epochs)) > LOSS_TOLERANCE


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a real CUDA device")
@pytest.mark.cuda
def test_compare_devices_same_seed_cpu_vs_cuda():
    comparison = compare_devices_same_seed(synthetic_features(1000, 2000, 40), ClassifierConfig(), ("cpu", "cuda"),
                                           epochs=2)
    assert comparison.devices == ("cpu", "cuda:0") and comparison.close(LOSS_TOLERANCE), comparison


def test_prepare_builds_features_and_baseline_while_holding_the_cpu(monkeypatch):
    import threading

    from core.platform.device_lock import JobCancelled, hold_devices

    seen = []

    def probe_cpu(*args, **kwargs):  # another session asking for the CPU meanwhile is refused
        def other():
            try:
                with hold_devices(["cpu"], should_cancel=lambda: True):
                    seen.append("free")
            except JobCancelled:
                seen.append("held")
        t = threading.Thread(target=other)
        t.start()
        t.join(10)
        return real(*args, **kwargs)

    real = training.features_for
    monkeypatch.setattr(training, "features_for", probe_cpu)
    features, baseline = training.prepare(toy_reviews(60), ClassifierConfig(**FAST))
    assert seen == ["held"]
    assert features.n_train > 0 and 0 <= baseline.accuracy <= 1


def test_a_diverging_run_is_one_clear_error_not_a_traceback(toy_features, monkeypatch):
    # ClassifierConfig refuses such rates; lift its bound to reach the guard that backs it up
    monkeypatch.setattr("core.classifier.model.MAX_LR", 1e40)
    with pytest.raises(DashboardError, match="training diverged at learning rate 1e\\+30"):
        train(toy_features, ClassifierConfig(**{**FAST, "lr": 1e30}))
    assert current_holder("cpu") is None


def test_batch_orders_are_made_one_epoch_at_a_time():
    orders = batch_order(10, 0, 1_000_000)  # a million epochs of orders would not fit in memory at once
    first = next(orders)
    assert sorted(first.tolist()) == list(range(10))


def test_a_network_bigger_than_memory_is_refused_before_it_is_built(toy_features, monkeypatch):
    monkeypatch.setattr("core.classifier.model.free_device_bytes", lambda device: 1024)
    with pytest.raises(DashboardError, match="fewer hidden units"):
        train(toy_features, ClassifierConfig(**FAST))


def test_preparing_stops_between_its_steps_when_asked(monkeypatch):
    from core.classifier.training import prepare
    from core.platform.device_lock import JobCancelled
    from core.platform.jobs import WaitCancelled

    built, fitted = [], []
    real_features_for = training.features_for
    monkeypatch.setattr(training, "features_for", lambda *a: built.append(1) or real_features_for(*a))
    monkeypatch.setattr(training, "logistic_regression", lambda features: fitted.append(1))
    with pytest.raises(JobCancelled) as stopped:
        prepare(toy_reviews(20), ClassifierConfig(**FAST), JobHooks(should_stop=lambda: True))
    assert not isinstance(stopped.value, WaitCancelled), "the CPU was free: it stopped between the steps"
    assert built == [1] and fitted == [], "the baseline was not fitted after the stop"
    assert current_holder("cpu") is None


def _test_accuracy_of(result, features) -> float:
    """The kept weights' accuracy on the test rows, recomputed outside the loop."""
    p = predict(result, [])
    assert p.shape == (0,)
    from core.classifier.model import forward, make_batch
    with torch.no_grad():
        out = forward(result.model, make_batch(features.x_test, "sparse")).numpy()
    return float(((out > 0.5) == (features.y_test > 0.5)).mean())


def test_the_averaged_weights_are_kept_and_scored_as_reported():
    """average_from=2 of 4 epochs: the kept network is the mean of epochs 2-4's weights, and the accuracy
    the run reports for its kept epoch is that network's own, not the last SGD iterate's."""
    reviews = toy_reviews(60)
    plain_cfg = ClassifierConfig(**{**FAST, "epochs": 4, "val_fraction": 0.0})
    features = features_for(reviews, plain_cfg)
    plain = train(features, plain_cfg)
    averaged = train(features, ClassifierConfig(**{**plain_cfg.to_dict(), "average_from": 2}))
    assert [e.train_loss for e in averaged.epochs] == [e.train_loss for e in plain.epochs]  # SGD's path unchanged
    assert averaged.epochs[0].test_loss == plain.epochs[0].test_loss  # before the average starts
    assert averaged.epochs[-1].test_loss != plain.epochs[-1].test_loss
    assert not torch.equal(averaged.model[0].weight, plain.model[0].weight)
    assert averaged.test_accuracy == pytest.approx(_test_accuracy_of(averaged, features))


def test_the_nb_logit_is_kept_and_scored_as_reported_and_leaves_sgd_alone():
    """nb_logit on 'nb' features: the same SGD path (training losses) as without, a kept network two hidden
    units wider, and the accuracy the run reports is that network's own."""
    cfg = ClassifierConfig(**{**FAST, "weighting": "nb", "epochs": 3, "val_fraction": 0.0, "average_from": 2,
                              "nb_logit": 0.0})
    features = features_for(toy_reviews(60), cfg)
    plain = train(features, cfg)
    blended = train(features, ClassifierConfig(**{**cfg.to_dict(), "nb_logit": 0.3}))
    assert [e.train_loss for e in blended.epochs] == [e.train_loss for e in plain.epochs]
    assert blended.epochs[-1].test_loss != plain.epochs[-1].test_loss
    assert plain.model[0].out_features == cfg.hidden and blended.model[0].out_features == cfg.hidden + 2
    assert torch.equal(blended.model[0].weight[:cfg.hidden], plain.model[0].weight)
    assert blended.test_accuracy == pytest.approx(_test_accuracy_of(blended, features))


def test_an_average_of_one_epoch_is_that_epoch():
    cfg = ClassifierConfig(**{**FAST, "epochs": 2, "val_fraction": 0.0})
    features = features_for(toy_reviews(60), cfg)
    plain = train(features, cfg)
    last_only = train(features, ClassifierConfig(**{**cfg.to_dict(), "average_from": 2}))
    for a, b in zip(plain.model.parameters(), last_only.model.parameters()):
        assert torch.allclose(a, b)
    assert [e.test_loss for e in last_only.epochs] == pytest.approx([e.test_loss for e in plain.epochs])
