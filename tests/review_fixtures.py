"""Tiny review data sets the tests write themselves, in every layout the loaders accept."""

from __future__ import annotations

import io
import random
import tarfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

from core.classifier.loaders import Reviews

POSITIVE = ["a wonderful , moving film", "great acting and a clever script", "funny , warm and beautifully shot",
            "the best film of the year", "a delight from start to finish", "smart , touching and great fun"]
NEGATIVE = ["a dull , lifeless mess", "boring and far too long", "the worst script in years",
            "a tedious waste of time", "flat jokes and awful acting", "clumsy , dull and forgettable"]


def write_rt_folder(folder: Path, pos=POSITIVE, neg=NEGATIVE, encoding: str = "utf-8") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rt-polarity.pos").write_bytes(("\n".join(pos) + "\n").encode(encoding))
    (folder / "rt-polarity.neg").write_bytes(("\n".join(neg) + "\n").encode(encoding))
    return folder


def write_imdb_folder(root: Path) -> Path:
    """aclImdb layout with two reviews per class and split, plus the unlabelled part the loader must skip."""
    for split in ("train", "test"):
        for label, texts in (("pos", POSITIVE), ("neg", NEGATIVE)):
            d = root / split / label
            d.mkdir(parents=True, exist_ok=True)
            offset = 0 if split == "train" else 2
            for i, text in enumerate(texts[offset:offset + 2]):
                (d / f"{i}_{8 if label == 'pos' else 2}.txt").write_text(f"{text}.<br /><br />Really.")
    unsup = root / "train" / "unsup"
    unsup.mkdir(parents=True, exist_ok=True)
    (unsup / "0_0.txt").write_text("no label here")
    return root


def tar_gz(folder: Path, arcname: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(folder, arcname=arcname)
    return buf.getvalue()


def csv_bytes(rows: list[tuple[str, str]], header=("text", "label"), sep=",") -> bytes:
    import csv

    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=sep)
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue().encode()


def labelled_rows(pos_label: str = "1", neg_label: str = "0") -> list[tuple[str, str]]:
    return [(t, pos_label) for t in POSITIVE] + [(t, neg_label) for t in NEGATIVE]


def toy_reviews(n_per_class: int = 60, seed: int = 0) -> Reviews:
    """A separable toy set: each review has one telling word among random filler."""
    rng = random.Random(seed)
    filler = [f"w{i}" for i in range(40)]
    texts, labels = [], []
    for label, cue in ((1, ["great", "superb", "lovely"]), (0, ["awful", "boring", "dreadful"])):
        for _ in range(n_per_class):
            words = rng.sample(filler, 6) + [rng.choice(cue)]
            rng.shuffle(words)
            texts.append(" ".join(words))
            labels.append(label)
    return Reviews(tuple(texts), np.asarray(labels, dtype=np.int8), "toy")


def keep_cuda_on_cpu(monkeypatch) -> list[str]:
    """With the `fake_cuda` fixture: every `.to('cuda...')` is recorded and the tensor or model stays on
    the CPU, so code written for a GPU runs here and a test can see what it sent there."""
    targets: list[str] = []
    tensor_to, module_to = torch.Tensor.to, nn.Module.to

    def where(args, kwargs) -> torch.device | None:
        for a in (*args, kwargs.get("device")):
            if isinstance(a, (str, torch.device)):
                return torch.device(a)
        return None

    def fake_tensor_to(self, *args, **kwargs):
        device = where(args, kwargs)
        if device is not None and device.type == "cuda":
            targets.append(f"tensor {tuple(self.shape)}")
            return self
        return tensor_to(self, *args, **kwargs)

    def fake_module_to(self, *args, **kwargs):
        device = where(args, kwargs)
        if device is not None and device.type == "cuda":
            targets.append("model")
            return self
        return module_to(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "to", fake_tensor_to)
    monkeypatch.setattr(nn.Module, "to", fake_module_to)
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self, *a, **k: self)  # page-locking needs a real driver
    return targets
