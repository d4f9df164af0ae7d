"""Baselines on the same split: LogisticRegression on the network's matrix, and the issue's reference set-ups."""

import numpy as np
import pytest

from core.classifier.baseline import logistic_regression, reference_baselines
from core.classifier.model import ClassifierConfig
from core.classifier.features import split_rows
from core.classifier.training import features_for
from core.classifier.loaders import load_path
from tests.review_fixtures import toy_reviews


def test_logistic_regression_on_the_networks_features():
    features = features_for(toy_reviews(60), ClassifierConfig(weighting="binary", ngrams=1))
    result = logistic_regression(features)
    assert result.name == "LogisticRegression" and "binary" in result.features
    assert result.accuracy == 1.0 and 0 < result.test_loss < 0.7 and result.fit_seconds >= 0


@pytest.mark.slow
def test_reference_baselines_reproduce_the_issues_figures(rt_polarity_dir):
    """Fixed 80/20 stratified split, random_state=0: MultinomialNB 0.781, LogisticRegression about 0.77."""
    reviews = load_path(rt_polarity_dir)
    split = split_rows(reviews, test_size=0.2, val_fraction=0.0, seed=0)
    texts = np.array(reviews.texts, dtype=object)
    nb, lr = reference_baselines(texts[split.train], reviews.labels[split.train], texts[split.test],
                                 reviews.labels[split.test])
    assert nb.name == "MultinomialNB" and nb.accuracy == pytest.approx(0.781, abs=0.003)
    assert lr.name == "LogisticRegression" and lr.accuracy == pytest.approx(0.77, abs=0.006)
