"""Cleaning, the sparse document-term matrix in each weighting, and the seeded stratified split."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from core.errors import DashboardError
from core.classifier.loaders import Reviews
from core.classifier.features import (
    build_features, clean_text, fit_vectorizer, nb_log_ratios, split_rows, synthetic_features,
)
from tests.review_fixtures import toy_reviews


def test_clean_text_strips_markup_and_lowercases():
    assert clean_text("Great film.<br /><br />Really <i>GREAT</i> &amp; fun") == "great film. really great & fun"


def test_matrix_is_sparse_float32_and_bigrams_optional():
    texts = ["not good at all", "very good indeed"]
    vec1, x1 = fit_vectorizer(texts, np.array([0, 1]), weighting="counts", ngrams=1, max_features=None)
    vec2, x2 = fit_vectorizer(texts, np.array([0, 1]), weighting="counts", ngrams=2, max_features=None)
    assert sp.issparse(x1) and x1.format == "csr" and x1.dtype == np.float32
    assert "not good" in vec2.vectorizer.vocabulary_ and "not good" not in vec1.vectorizer.vocabulary_
    assert x2.shape[1] > x1.shape[1]


def test_vocabulary_cap_keeps_the_most_frequent_terms():
    texts = ["good good good bad", "good ugly", "good bad"]
    vec, x = fit_vectorizer(texts, np.array([1, 0, 1]), weighting="counts", ngrams=1, max_features=2)
    assert set(vec.vectorizer.vocabulary_) == {"good", "bad"} and x.shape == (3, 2)


def test_binary_counts_and_tfidf():
    texts = ["good good good film", "bad film"]
    _, counts = fit_vectorizer(texts, np.array([1, 0]), weighting="counts", ngrams=1, max_features=None)
    _, binary = fit_vectorizer(texts, np.array([1, 0]), weighting="binary", ngrams=1, max_features=None)
    vec, tfidf = fit_vectorizer(texts, np.array([1, 0]), weighting="tfidf", ngrams=1, max_features=None)
    assert counts.max() == 3 and binary.max() == 1
    vocab = vec.vectorizer.vocabulary_
    idf_good = 1 + np.log(3 / 2)  # smoothed idf of a word in 1 of 2 reviews; 'film' is in both: idf 1
    assert tfidf[0, vocab["good"]] == pytest.approx((1 + np.log(3)) * idf_good)  # sublinear tf, rows not normalized
    assert tfidf[0, vocab["film"]] == pytest.approx(1.0)


@pytest.mark.parametrize("weighting", ["counts", "binary", "tfidf", "nb", "nbchars"])
def test_transform_of_no_texts(weighting):
    vec, x = fit_vectorizer(["good film", "bad film"], np.array([1, 0]), weighting=weighting, ngrams=1,
                            max_features=None)
    assert vec.transform([]).shape == (0, x.shape[1])


def test_nb_weighting_signs_follow_the_classes():
    texts = ["great fun", "great film", "awful film", "awful mess"]
    y = np.array([1, 1, 0, 0])
    vec, x = fit_vectorizer(texts, y, weighting="nb", ngrams=1, max_features=None)
    vocab = vec.vectorizer.vocabulary_
    scale = vec.column_scale
    assert scale[vocab["great"]] > 0 > scale[vocab["awful"]] and abs(scale[vocab["film"]]) < 1e-6
    new = vec.transform(["great great awful"])  # binary, then scaled
    assert new[0, vocab["great"]] == pytest.approx(scale[vocab["great"]])
    assert np.allclose(nb_log_ratios(sp.csr_matrix(np.eye(2)), np.array([1, 0])), [np.log(2), -np.log(2)])


def test_nbchars_adds_letter_groups_after_the_words_with_the_same_nb_scaling():
    texts = ["brilliant film", "brilliantly done", "dull film", "dull mess"]
    y = np.array([1, 1, 0, 0])
    words, xw = fit_vectorizer(texts, y, weighting="nb", ngrams=1, max_features=None)
    vec, x = fit_vectorizer(texts, y, weighting="nbchars", ngrams=1, max_features=None)
    n_words = words.vocab_size
    assert vec.chars is not None and vec.vocab_size == x.shape[1] == n_words + len(vec.chars.vocabulary_)
    letters = vec.chars.vocabulary_
    assert {" b", "br", "bri", "ill", "nt "} <= set(letters) and "brill" not in letters  # 2-4 letters, word edges
    raw = fit_vectorizer(texts, y, weighting="binary", ngrams=1, max_features=None)[1]
    assert np.allclose(x[:, :n_words].toarray(), raw.toarray() * vec.column_scale[:n_words])  # words first
    bri = vec.column_scale[n_words + letters["bri"]]
    assert bri > 0 > vec.column_scale[n_words + letters["dul"]]
    unseen = vec.transform(["brilliance"])  # a word never seen in training still counts by its letters
    assert unseen[0, n_words + letters["bri"]] == pytest.approx(bri)
    assert np.allclose(vec.transform(texts).toarray(), x.toarray())


def test_nbchars_vocabulary_cap_keeps_the_columns_in_most_reviews_of_both_kinds():
    texts = ["good film", "good fun", "bad film", "bad idea"]
    y = np.array([1, 1, 0, 0])
    full, x = fit_vectorizer(texts, y, weighting="nbchars", ngrams=1, max_features=None)
    vec, capped = fit_vectorizer(texts, y, weighting="nbchars", ngrams=1, max_features=6)
    assert capped.shape == (4, 6) and vec.vocab_size == 6 and vec.transform(["good"]).shape == (1, 6)
    in_rows = np.diff(sp.csc_matrix(x).indptr)
    assert np.sort(in_rows[vec.columns]).tolist() == np.sort(in_rows)[-6:].tolist()
    assert vec.columns is not None and np.all(np.diff(vec.columns) > 0)  # the kept columns keep their order


def test_unknown_weighting_and_empty_vocabulary():
    with pytest.raises(DashboardError, match="unknown weighting"):
        fit_vectorizer(["a b"], np.array([1]), weighting="bm25", ngrams=1, max_features=None)
    with pytest.raises(DashboardError, match="no words left"):
        fit_vectorizer(["! ?", ". ,"], np.array([1, 0]), weighting="counts", ngrams=1, max_features=None)


def test_split_is_stratified_seeded_and_disjoint():
    reviews = toy_reviews(50)
    a = split_rows(reviews, test_size=0.2, val_fraction=0.1, seed=3)
    b = split_rows(reviews, test_size=0.2, val_fraction=0.1, seed=3)
    c = split_rows(reviews, test_size=0.2, val_fraction=0.1, seed=4)
    assert all(np.array_equal(x, y) for x, y in zip((a.train, a.val, a.test), (b.train, b.val, b.test)))
    assert not np.array_equal(a.test, c.test)
    assert len(a.test) == 20 and reviews.labels[a.test].sum() == 10  # half positive, like the data
    assert len(set(a.train) | set(a.val) | set(a.test)) == reviews.n == len(a.train) + len(a.val) + len(a.test)


def test_own_split_is_used():
    reviews = toy_reviews(10)
    is_test = np.zeros(reviews.n, dtype=bool)
    is_test[::4] = True
    own = Reviews(reviews.texts, reviews.labels, "own", is_test)
    split = split_rows(own, test_size=0.5, val_fraction=0.0, seed=0)
    assert np.array_equal(split.test, np.flatnonzero(is_test)) and len(split.val) == 0


def test_too_few_reviews_to_split():
    tiny = Reviews(("good", "fine", "bad", "awful"), np.array([1, 1, 0, 0], dtype=np.int8), "tiny")
    with pytest.raises(DashboardError, match="too few"):
        split_rows(tiny, test_size=0.2, val_fraction=0.1, seed=0)


def test_features_fit_on_training_rows_only():
    base = toy_reviews(30)
    texts = list(base.texts)
    split = split_rows(base, test_size=0.2, val_fraction=0.0, seed=0)
    texts[split.test[0]] += " zebra"  # a word seen only in a test review
    reviews = Reviews(tuple(texts), base.labels, "toy")
    f = build_features(reviews, weighting="counts", ngrams=1, max_features=None, test_size=0.2, val_fraction=0.0,
                       seed=0)
    assert "zebra" not in f.vectorizer.vectorizer.vocabulary_
    assert sp.issparse(f.x_train) and sp.issparse(f.x_test) and f.x_val.shape == (0, f.vocab_size)
    assert f.n_train + f.n_test == reviews.n and f.y_train.dtype == np.float32


def test_synthetic_features_are_sparse_balanced_and_seeded():
    a, b = synthetic_features(400, 1000, 30, seed=1), synthetic_features(400, 1000, 30, seed=1)
    assert (a.n_train, a.n_test, a.vocab_size) == (320, 80, 1000) and a.n_val == 0
    assert sp.issparse(a.x_train) and a.x_train.dtype == np.float32 and a.x_train.max() == 1
    assert (a.x_train != b.x_train).nnz == 0 and 0.3 < a.y_train.mean() < 0.7
    assert a.nnz_per_row <= 30
    assert a.vectorizer.transform(["t3 t7"]).nnz == 2  # term i is the word "t<i>"
