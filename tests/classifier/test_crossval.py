"""10-fold cross-validation: folds fitted without their test rows, the baselines, the published figures."""

from __future__ import annotations

import numpy as np
import pytest

from core.classifier import crossval
from core.classifier.crossval import (
    MNB, NBSVM, NETWORK, PUBLISHED, cross_validate, default_scorers, fold_features, folds_of,
)
from core.classifier.datasets import load_source
from core.classifier.model import ClassifierConfig
from core.errors import DashboardError
from tests.review_fixtures import toy_reviews


def test_folds_are_stratified_disjoint_and_cover_every_review():
    labels = toy_reviews(30).labels
    splits = folds_of(labels, 5, seed=0)
    tests = np.concatenate([test for _, test in splits])
    assert sorted(tests.tolist()) == list(range(len(labels)))
    for train, test in splits:
        assert not set(train) & set(test) and labels[test].mean() == pytest.approx(0.5)
    with pytest.raises(DashboardError, match="10 reviews of each class"):
        folds_of(labels[:12], 10, seed=0)


def test_a_folds_vectorizer_never_sees_its_test_reviews():
    reviews = toy_reviews(30)
    train, test = folds_of(reviews.labels, 3, seed=0)[0]
    features = fold_features(reviews, train, test, ClassifierConfig(weighting="nb"))
    seen = set(features.vectorizer.vectorizer.vocabulary_)
    train_words = {w for i in train for w in reviews.texts[i].split()}
    assert seen <= train_words | {f"{a} {b}" for i in train for a, b in zip(reviews.texts[i].split(),
                                                                              reviews.texts[i].split()[1:])}
    assert (features.n_train, features.n_test, features.n_val) == (len(train), len(test), 0)


def test_every_model_scores_every_fold_on_a_toy_set():
    seen = []
    config = ClassifierConfig(hidden=4, epochs=8, weighting="binary", ngrams=1, lr=0.3, batch_size=16)
    cv = cross_validate(toy_reviews(30), default_scorers(config), folds=3, on_fold=lambda *a: seen.append(a))
    assert [m.name for m in cv.models] == [NETWORK, MNB, NBSVM] and len(seen) == 9
    assert all(len(m.accuracies) == 3 and m.mean > 0.8 for m in cv.models)  # one telling word per review
    table = cv.table()
    assert [row[0] for row in table[3:]] == [f"published: {name}" for name in PUBLISHED]


def test_nbsvm_interpolates_towards_the_mean_weight(monkeypatch):
    monkeypatch.setattr(crossval, "NBSVM_BETA", 1.0)  # beta 1: the plain SVM on NB-scaled features
    reviews = toy_reviews(30)
    train, test = folds_of(reviews.labels, 3, seed=0)[0]
    assert crossval.nbsvm_bi(reviews, train, test) > 0.8


@pytest.mark.slow
def test_the_baselines_reproduce_the_published_figures_on_rt_polarity(rt_polarity_dir):
    cv = cross_validate(load_source(str(rt_polarity_dir)), default_scorers(network=False), folds=10)
    mnb, nbsvm = cv.models
    assert abs(100 * mnb.mean - PUBLISHED["MNB-bi (Wang & Manning 2012)"]) < 1.0
    assert abs(100 * nbsvm.mean - PUBLISHED["NBSVM-bi (Wang & Manning 2012)"]) < 1.0
