"""10-fold cross-validation on rt-polarity, the protocol of the published table (Wang & Manning 2012; Kim 2014).

rt-polarity has no standard split, so papers report the mean accuracy over 10 folds. Each fold
here is stratified and seeded; every model, the network included, is fitted on the other nine
folds only (vectorizer, naive-Bayes ratios and all) and scored once on its own fold. Nothing is
tuned on a test fold: the network runs with its fixed defaults (chosen earlier by CV inside the
fixed split's training 80%), the baselines with the published settings (NBSVM: C = 1, beta = 0.25,
alpha = 1).

The two baselines:
- MNB-bi: MultinomialNB on binary 1-2-gram counts;
- NBSVM-bi: a linear SVM (squared hinge, C = 1) on binary 1-2-grams scaled by the naive-Bayes
  log-count ratios, its weights interpolated with their mean magnitude (beta = 0.25), as in the paper.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import StratifiedKFold
from sklearn.naive_bayes import MultinomialNB
from sklearn.svm import LinearSVC

from core.classifier.features import Features, clean_text, fit_vectorizer, nb_log_ratios
from core.classifier.loaders import Reviews
from core.classifier.model import ClassifierConfig
from core.errors import DashboardError

PUBLISHED = {  # rt-polarity ("MR"), 10-fold CV accuracy in percent
    "MNB-bi (Wang & Manning 2012)": 79.0,
    "NBSVM-bi (Wang & Manning 2012)": 79.4,
    "CNN-non-static (Kim 2014)": 81.5,
}
NETWORK, MNB, NBSVM = "this network, default preset", "MNB-bi, binary 1-2-grams", "NBSVM-bi, binary 1-2-grams"
NBSVM_C, NBSVM_BETA = 1.0, 0.25  # the paper's settings, not tuned here

FoldScorer = Callable[[Reviews, np.ndarray, np.ndarray], float]  # (reviews, train rows, test rows) -> accuracy


def _texts(reviews: Reviews, rows: np.ndarray) -> list[str]:
    return [reviews.texts[i] for i in rows]


def _bigrams(train: list[str]) -> tuple[CountVectorizer, sp.csr_matrix]:
    vec = CountVectorizer(binary=True, ngram_range=(1, 2), preprocessor=clean_text)
    return vec, vec.fit_transform(train).tocsr()


def mnb_bi(reviews: Reviews, train: np.ndarray, test: np.ndarray) -> float:
    vec, x = _bigrams(_texts(reviews, train))
    model = MultinomialNB().fit(x, reviews.labels[train])
    return float(model.score(vec.transform(_texts(reviews, test)), reviews.labels[test]))


def nbsvm_bi(reviews: Reviews, train: np.ndarray, test: np.ndarray) -> float:
    vec, x = _bigrams(_texts(reviews, train))
    y = reviews.labels[train].astype(int)
    r = nb_log_ratios(x, y)
    scale = sp.diags(r)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        svm = LinearSVC(C=NBSVM_C, loss="squared_hinge", max_iter=5000).fit(x @ scale, y)
    w = svm.coef_.ravel()
    w = (1 - NBSVM_BETA) * np.abs(w).mean() + NBSVM_BETA * w  # the paper's interpolation
    scores = (vec.transform(_texts(reviews, test)) @ scale) @ w + svm.intercept_[0]
    return float(((scores > 0).astype(int) == reviews.labels[test]).mean())


def fold_features(reviews: Reviews, train: np.ndarray, test: np.ndarray, config: ClassifierConfig) -> Features:
    """The network's features for one fold: the vectorizer (and its NB ratios) fitted on the nine training folds."""
    y = reviews.labels.astype(np.float32)
    vec, x_train = fit_vectorizer(_texts(reviews, train), reviews.labels[train], weighting=config.weighting,
                                  ngrams=config.ngrams, max_features=config.max_features)
    empty = sp.csr_matrix((0, vec.vocab_size), dtype=np.float32)
    return Features(vec, x_train, y[train], empty, np.zeros(0, np.float32), vec.transform(_texts(reviews, test)),
                    y[test], config.weighting, reviews.source)


def network_scorer(config: ClassifierConfig) -> FoldScorer:
    """The network with `config` (the default preset, on the CPU, unless told otherwise), kept epoch scored."""
    from core.classifier.training import train  # torch: only when the network is part of the run

    def score(reviews: Reviews, train_rows: np.ndarray, test_rows: np.ndarray) -> float:
        result = train(fold_features(reviews, train_rows, test_rows, config), config)
        if result.test_accuracy is None:
            raise DashboardError("a fold's training run stopped before its first epoch ended")
        return result.test_accuracy

    return score


@dataclass(frozen=True)
class ModelScores:
    name: str
    accuracies: tuple[float, ...]  # one per fold
    seconds: float  # wall time over all folds (features and fitting)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.accuracies)

    @property
    def stdev(self) -> float:
        return statistics.stdev(self.accuracies) if len(self.accuracies) > 1 else 0.0


@dataclass(frozen=True)
class CrossValidation:
    folds: int
    seed: int
    n_reviews: int
    models: tuple[ModelScores, ...]

    def table(self) -> list[list[object]]:
        """Rows of (model, mean %, stdev %, seconds), then the published figures for comparison."""
        rows: list[list[object]] = [[m.name, round(100 * m.mean, 2), round(100 * m.stdev, 2), round(m.seconds, 1)]
                                    for m in self.models]
        return rows + [[f"published: {name}", value, None, None] for name, value in PUBLISHED.items()]


def folds_of(labels: np.ndarray, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified, shuffled, seeded folds: (training rows, test rows) for each."""
    if folds < 2 or np.bincount(labels.astype(int), minlength=2).min() < folds:
        raise DashboardError(f"{folds}-fold cross-validation needs at least {folds} reviews of each class and 2 folds")
    kfold = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return [(train, test) for train, test in kfold.split(np.zeros(len(labels)), labels)]


def cross_validate(reviews: Reviews, scorers: dict[str, FoldScorer], *, folds: int = 10, seed: int = 0,
                   on_fold: Callable[[str, int, float], None] | None = None) -> CrossValidation:
    """Each scorer on each fold in turn; `on_fold(model, fold, accuracy)` hears every result as it lands."""
    splits = folds_of(reviews.labels, folds, seed)
    models = []
    for name, scorer in scorers.items():
        start, accuracies = time.perf_counter(), []
        for k, (train, test) in enumerate(splits, start=1):
            accuracies.append(scorer(reviews, train, test))
            if on_fold is not None:
                on_fold(name, k, accuracies[-1])
        models.append(ModelScores(name, tuple(accuracies), time.perf_counter() - start))
    return CrossValidation(folds, seed, len(reviews.labels), tuple(models))


def default_scorers(config: ClassifierConfig | None = None, *, network: bool = True) -> dict[str, FoldScorer]:
    """The network (default preset on the CPU), MNB-bi and NBSVM-bi."""
    scorers: dict[str, FoldScorer] = {}
    if network:
        scorers[NETWORK] = network_scorer(replace(config or ClassifierConfig(), device="cpu", val_fraction=0.0))
    return scorers | {MNB: mnb_bi, NBSVM: nbsvm_bi}
