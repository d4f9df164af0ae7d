"""The one training loop: every batch plan reads the device once per report, never per batch, and shares
one evaluation and one divergence message."""

from __future__ import annotations

import socket
from collections import Counter

import pytest
import torch
import torch.distributed as dist

from core.classifier import distributed, fit, fullbatch, training
from core.classifier.distributed import train_data_parallel
from core.classifier.features import Features
from core.classifier.model import ClassifierConfig, preset_config
from core.classifier.training import features_for, train
from core.errors import DashboardError
from core.platform import clock
from core.platform.jobs import JobHooks
from core.platform.torchrun import WorkerEnv
from tests.review_fixtures import toy_reviews

# batches of 2 rows: ~20 steps per epoch, far more than the few reads a report makes
SMALL = dict(hidden=8, lr=0.3, batch_size=2, epochs=2, weighting="binary", ngrams=1, val_fraction=0.1, device="cpu")
READS = ("item", "tolist", "__float__", "__int__", "__bool__")  # every way a tensor's value reaches Python


@pytest.fixture(scope="module")
def features() -> Features:
    return features_for(toy_reviews(60), ClassifierConfig(**SMALL))


@pytest.fixture
def reads(monkeypatch) -> Counter[str]:
    """How often a tensor's value was read back to Python (a device synchronize on a GPU), by method."""
    counts: Counter[str] = Counter()
    for name in READS:
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            counts[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    return counts


@pytest.fixture
def one_worker():
    """A one-process gloo group: the data-parallel plan runs in this process, its collectives real."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        yield WorkerEnv(0, 1, 0)
    finally:
        dist.destroy_process_group()


def _run_minibatch(features: Features, config: ClassifierConfig) -> int:
    """Train; the number of reports made (with figures: the first epoch's batch counts and the thread line aside)."""
    steps = []
    train(features, config, JobHooks(on_progress=steps.append))
    return len([s for s in steps if s.item is not None])


def test_the_first_epoch_says_how_many_batches_are_done_without_reading_the_device(features, reads):
    """Issue 34: the first loss point came 15.6 s after Train with no sign of life in between."""
    config = ClassifierConfig(**SMALL)
    steps = []
    train(features, config, JobHooks(on_progress=steps.append))
    n_batches = -(-features.n_train // config.batch_size)
    counts = [s for s in steps if s.item is None and "batches done" in s.message]
    assert len(counts) >= min(fit.FIRST_EPOCH_TELLS, n_batches) - 2 and len(counts) < n_batches
    first = counts[0].message
    assert first.startswith(f"epoch 1 of {config.epochs}: ") and f"of {n_batches} batches" in first
    assert all(0 < s.done < n_batches and s.total == config.epochs * n_batches for s in counts)
    assert any(s.message.startswith("training on cpu with ") and "CPU thread" in s.message for s in steps)
    figures = [s for s in steps if s.item is not None]
    assert sum(reads.values()) <= 3 * len(figures), reads


def test_the_minibatch_plan_reads_the_loss_once_per_report(features, reads):
    config = ClassifierConfig(**SMALL)
    n_batches = -(-features.n_train // config.batch_size)
    assert n_batches >= 15
    reports = _run_minibatch(features, config)
    assert reports == config.epochs
    # per report: the training sums, the validation sums, the test sums
    assert sum(reads.values()) <= 3 * reports < n_batches, reads


def test_partial_reports_read_once_each_not_per_batch(features, reads):
    config = ClassifierConfig(**{**SMALL, "report_every": 5})
    reports = _run_minibatch(features, config)
    n_batches = -(-features.n_train // config.batch_size)
    assert config.epochs < reports < config.epochs * n_batches
    assert sum(reads.values()) <= 3 * reports, reads


def test_the_full_batch_plan_reads_once_per_update(features, reads):
    config = preset_config("lecture", epochs=6, device="cpu", hidden=8, weighting="binary", ngrams=1, val_fraction=0.1)
    steps = []
    result = train(features_for(toy_reviews(60), config), config, JobHooks(on_progress=steps.append))
    updates = [s for s in steps if s.item is not None]
    assert len(updates) == len(result.epochs) == 6
    assert sum(reads.values()) <= 3 * len(updates), reads


def test_the_data_parallel_plan_reads_once_per_epoch_not_per_batch(features, reads, one_worker):
    """The old worker read `float(loss)` after every batch: on a GPU, a synchronize per step."""
    config = ClassifierConfig(**SMALL)
    events: list[dict] = []
    result = train_data_parallel(features, config, torch.device("cpu"), one_worker, events.append)
    n_batches = -(-features.n_train // config.batch_size)
    epochs = [e for e in events if e["event"] == "epoch"]
    assert len(epochs) == len(result.run.epochs) == config.epochs
    # per epoch: the training sums, validation, test, the slowest worker's seconds, the all-reduce seconds
    assert sum(reads.values()) <= 5 * config.epochs < n_batches, reads


def test_one_worker_trains_like_one_process(features, one_worker):
    """The same seed and rows: the data-parallel plan on one worker is the mini-batch plan, up to float sums."""
    config = ClassifierConfig(**SMALL)
    alone = train(features, config)
    worker = train_data_parallel(features, config, torch.device("cpu"), one_worker, lambda event: None)
    assert [e.train_loss for e in worker.run.epochs] == pytest.approx([e.train_loss for e in alone.epochs], rel=1e-5)
    assert [e.test_accuracy for e in worker.run.epochs] == [e.test_accuracy for e in alone.epochs]
    assert [e.val_loss for e in worker.run.epochs] == pytest.approx([e.val_loss for e in alone.epochs], rel=1e-5)
    assert worker.run.workers == 1 and worker.run.backend == "gloo"
    assert all(e.allreduce_seconds is not None and e.allreduce_seconds >= 0 for e in worker.run.epochs)


def test_every_plan_scores_through_the_one_evaluate(features, monkeypatch, one_worker):
    calls: list[str] = []
    real = fit.evaluate

    def spy(score, plan, split):
        calls.append(type(plan).__name__)
        return real(score, plan, split)

    monkeypatch.setattr(fit, "evaluate", spy)
    config = ClassifierConfig(**{**SMALL, "epochs": 1})
    train(features, config)
    lecture = preset_config("lecture", epochs=1, device="cpu", hidden=8, weighting="binary", ngrams=1)
    train(features_for(toy_reviews(60), lecture), lecture)
    train_data_parallel(features, config, torch.device("cpu"), one_worker, lambda event: None)
    assert set(calls) == {"MiniBatches", "FullBatch", "Shard"}
    for module in (training, fullbatch, distributed):
        assert not hasattr(module, "_evaluate")


def test_the_full_batch_plan_diverges_with_the_friendly_message(monkeypatch):
    monkeypatch.setattr("core.classifier.model.MAX_LR", 1e40)
    config = preset_config("lecture", epochs=4, device="cpu", hidden=8, weighting="binary", ngrams=1, lr=1e30)
    with pytest.raises(DashboardError, match="training diverged at learning rate 1e\\+30"):
        train(features_for(toy_reviews(60), config), config)


def test_the_data_parallel_plan_diverges_with_the_friendly_message(features, monkeypatch, one_worker):
    monkeypatch.setattr("core.classifier.model.MAX_LR", 1e40)
    with pytest.raises(DashboardError, match="training diverged"):
        train_data_parallel(features, ClassifierConfig(**{**SMALL, "lr": 1e30}), torch.device("cpu"), one_worker,
                            lambda event: None)


def test_nan_outputs_never_reach_the_loss(features, monkeypatch):
    """On CUDA, BCELoss on a NaN fires a device-side assert that kills the GPU context; here it raises.
    Either way the loop must hand it only finite outputs and report the divergence itself."""
    seen_nan = []
    real_bce = torch.nn.functional.binary_cross_entropy

    def bce(p, target, *args, **kwargs):
        seen_nan.append(bool(torch.isnan(p.detach()).any()))
        return real_bce(p, target, *args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "binary_cross_entropy", bce)
    monkeypatch.setattr("core.classifier.model.MAX_LR", 1e40)
    with pytest.raises(DashboardError, match="training diverged"):
        train(features, ClassifierConfig(**{**SMALL, "lr": 1e30}))
    assert seen_nan and not any(seen_nan)


def test_nan_guard_leaves_finite_outputs_and_gradients_alone():
    p = torch.tensor([0.2, 0.9, float("nan")], requires_grad=True)
    out = fit.finite(p)
    out.sum().backward()
    assert out[:2].tolist() == pytest.approx([0.2, 0.9]) and out[2].item() == 0.5
    assert p.grad is not None and p.grad.tolist() == [1.0, 1.0, 0.0]


def test_the_allreduce_is_timed_on_the_synchronizing_clock(features, monkeypatch, one_worker):
    """Each bucket's all-reduce reads core.platform.clock (which waits for the device) before and after:
    with a clock that ticks once per reading, every step's all-reduce takes exactly one tick."""
    ticks = iter(float(i) for i in range(1_000_000))
    monkeypatch.setattr(clock, "read_clock", lambda: next(ticks))
    config = ClassifierConfig(**{**SMALL, "epochs": 1})
    result = train_data_parallel(features, config, torch.device("cpu"), one_worker, lambda event: None)
    n_batches = -(-features.n_train // config.batch_size)
    assert result.run.epochs[0].allreduce_seconds == n_batches  # one gradient bucket per step, one tick each


class _Bucket:
    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor

    def buffer(self) -> torch.Tensor:
        return self.tensor


def test_the_all_reduce_hook_never_waits_for_the_device_and_times_by_cuda_events_on_a_gpu(one_worker, gpu_model,
                                                                                           monkeypatch):
    """Issue 33: a synchronize inside the comm hook took away DDP's overlap of backward and all-reduce. The hook
    launches the all-reduce asynchronously; on a GPU its span is between CUDA events, read once after the epoch."""
    from core.classifier import distributed
    from core.platform import clock

    fake = gpu_model("A100-40GB")
    monkeypatch.setattr(clock, "now", lambda device: pytest.fail("the hook waited for the device"))
    real = distributed.dist.all_reduce

    def slow_all_reduce(tensor, **kw):
        fake.work(0.004)  # NCCL's kernel on the GPU's timeline
        return real(tensor, **kw)
    monkeypatch.setattr(distributed.dist, "all_reduce", slow_all_reduce)
    timer = distributed.AllReduceTimer(torch.device("cuda", 0))
    futures = [timer.average(_Bucket(torch.full((4,), 6.0))) for _ in range(2)]
    assert [f.wait().tolist() for f in futures] == [[6.0] * 4] * 2  # averaged over a world of one
    assert "sync" not in fake.events and fake.events.count("record") == 4
    assert timer.seconds == pytest.approx(0.008) and fake.events[-1] == "sync"  # read after the epoch
    timer.reset()
    assert timer.seconds == 0.0

    cpu = distributed.AllReduceTimer(torch.device("cpu"))
    assert cpu.average(_Bucket(torch.ones(3))).wait().tolist() == [1.0, 1.0, 1.0] and cpu.seconds > 0


def test_buckets_in_flight_together_count_once():
    from core.classifier.distributed import covered

    assert covered([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]) == 4.0
    assert covered([(1.0, 2.0), (0.0, 4.0)]) == 4.0 and covered([]) == 0.0
