"""Simple baselines on the same split, so the network's accuracy has something honest to beat.

- `logistic_regression(features)`: scikit-learn's LogisticRegression on the very matrix the network
  trains on (same rows, same weighting): what a hidden layer adds over a linear model.
- `reference_baselines(...)`: the two classic set-ups the issue quotes, refitted on the same
  training rows and scored on the same test rows: MultinomialNB on binary 1-2-gram counts and
  LogisticRegression (C=10) on TF-IDF 1-2-grams.

`features_and_baseline` is the whole untimed preparation of a training run (the matrices, then the first
baseline), importing no torch: a server runs it in a quiet child process
(core.classifier.training.prepare_quietly).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.naive_bayes import MultinomialNB

from core.classifier.features import BUILD_STEPS, Features, StepReport, build_features, clean_text
from core.classifier.loaders import Reviews

LR_MAX_ITER = 2000  # lbfgs iterations; enough for 100k sparse columns, bounded for huge inputs
REFERENCE_LR_C = 10.0  # the reference set-up for LogisticRegression on TF-IDF bigrams


@dataclass(frozen=True)
class BaselineResult:
    name: str  # e.g. "LogisticRegression"
    features: str  # what it was fitted on, in words
    accuracy: float  # on the test rows
    test_loss: float | None  # mean binary cross-entropy on the test rows, comparable to the network's test loss
    fit_seconds: float


class _Classifier(Protocol):
    """What _fit_score needs of a scikit-learn classifier (sklearn ships no type hints)."""

    def fit(self, x: sp.spmatrix, y: np.ndarray) -> object: ...

    def predict_proba(self, x: sp.spmatrix) -> np.ndarray: ...

    def score(self, x: sp.spmatrix, y: np.ndarray) -> float: ...


def _fit_score(
    model: _Classifier, x_train: sp.spmatrix, y_train: np.ndarray, x_test: sp.spmatrix, y_test: np.ndarray,
) -> tuple[float, float, float]:
    """(test accuracy, test log-loss, fit seconds)."""
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a few extra iterations would not change the story
        model.fit(x_train, y_train)
    seconds = time.perf_counter() - start
    loss = float(log_loss(y_test, model.predict_proba(x_test)[:, 1], labels=[0, 1]))
    return float(model.score(x_test, y_test)), loss, seconds


def logistic_regression(features: Features) -> BaselineResult:
    """LogisticRegression on the network's own training matrix, scored on its test matrix."""
    acc, loss, s = _fit_score(LogisticRegression(max_iter=LR_MAX_ITER), features.x_train,
                              features.y_train.astype(int), features.x_test, features.y_test.astype(int))
    return BaselineResult("LogisticRegression", f"same features as the network ({features.weighting})", acc, loss, s)


PREPARE_STEPS = BUILD_STEPS + 1  # the document-term matrices' steps, then the baseline


def features_and_baseline(reviews: Reviews, settings: Mapping[str, Any],
                          progress: StepReport | None = None) -> tuple[Features, BaselineResult]:
    """`build_features(reviews, **settings)` and `logistic_regression` on them; `progress` hears each of the
    PREPARE_STEPS steps before it starts, as (done, PREPARE_STEPS, what comes next)."""
    tell = progress or (lambda done, total, message: None)
    features = build_features(reviews, **settings, progress=lambda done, _steps, message: tell(done, PREPARE_STEPS,
                                                                                                 message))
    tell(BUILD_STEPS, PREPARE_STEPS, baseline_step(features))
    return features, logistic_regression(features)


def baseline_step(features: Features) -> str:
    """What the last step of a preparation says."""
    return f"LogisticRegression baseline on {features.n_train:,} training reviews, {features.vocab_size:,} terms"


def reference_baselines(
    train_texts: Sequence[str], y_train: np.ndarray, test_texts: Sequence[str], y_test: np.ndarray,
) -> list[BaselineResult]:
    """MultinomialNB on binary 1-2-gram counts and LogisticRegression(C=10) on TF-IDF 1-2-grams."""
    out = []
    for name, model, vec, words in (
        ("MultinomialNB", MultinomialNB(), CountVectorizer(binary=True, ngram_range=(1, 2), preprocessor=clean_text),
         "binary 1-2-gram counts"),
        ("LogisticRegression", LogisticRegression(C=REFERENCE_LR_C, max_iter=LR_MAX_ITER),
         TfidfVectorizer(ngram_range=(1, 2), preprocessor=clean_text), "TF-IDF 1-2-grams, C=10"),
    ):
        x_train = vec.fit_transform(list(train_texts))
        x_test = vec.transform(list(test_texts))
        acc, loss, s = _fit_score(model, x_train, np.asarray(y_train, dtype=int), x_test, np.asarray(y_test, dtype=int))
        out.append(BaselineResult(name, words, acc, loss, s))
    return out
