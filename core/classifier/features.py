"""From review texts to a sparse document-term matrix, and a seeded, stratified train/validation/test split.

The matrix stays a scipy CSR matrix from here on: rt-polarity with bigrams has ~100k columns and IMDB
~1M, so a dense float32 copy would be 4 GB and 200 GB. Only one batch at a time is ever densified
(or, by default, not even that; see core.classifier.training).

Weightings, all fitted on the training rows only:
- counts: how often each word occurs (the lecture's bag of words);
- binary: whether it occurs (repetition within one short review carries little sentiment);
- tfidf: (1 + log count) x idf, so words common to many reviews count less; rows are NOT scaled to
  length 1: unit rows make every input ~100x smaller than a count, and the lecture's net with
  PyTorch's default initialisation then barely learns (rt-polarity, default settings, 5-fold CV
  inside the training split, after 10 epochs: 0.59 with unit rows, 0.76 without);
- nb: binary, each column scaled by its naive-Bayes log-count ratio log(P(word|pos) / P(word|neg)),
  the feature weighting of NBSVM (Wang & Manning 2012), so words that separate the classes start
  large and neutral ones small: on short snippets it lets a discriminative model catch up with
  naive Bayes, which it otherwise trails;
- nbchars: 'nb' over the words (and pairs) plus the letter groups of 2-4 characters inside each
  word (scikit-learn's char_wb), so "brilliant", "brilliantly" and "brilliance" share evidence and a
  word seen once in training still counts by its parts. On validation folds of rt-polarity's training
  80% it added 0.6 points to the network and ~1 to linear models, but on the 10-fold protocol neither
  gained (network 78.92 against 78.93 with 'nb', NBSVM 79.37 against 79.35), and with ~270 non-zeros a
  row instead of ~35 an epoch takes ~2x as long and the features ~5x (bench/classifier.py, VALIDATION):
  an option, not the default.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.model_selection import train_test_split

from core.errors import DashboardError
from core.classifier.loaders import Reviews

WEIGHTINGS = {  # short labels for a selectbox; the module docstring says what each one is
    "nb": "NB-weighted words (NBSVM)",
    "nbchars": "NB-weighted words + letter groups",
    "tfidf": "TF-IDF",
    "binary": "binary",
    "counts": "counts (the lecture)",
}
NB_WEIGHTINGS = ("nb", "nbchars")  # every input column scaled by its naive-Bayes log-count ratio
NB_ALPHA = 1.0  # Laplace smoothing of the naive-Bayes ratios: a word seen once is not a verdict
CHAR_NGRAMS = (2, 4)  # 'nbchars': letter groups of 2 to 4 characters, within word boundaries
_MARKUP = re.compile(r"<[^>]*>")  # HTML tags, IMDB's <br /> above all
_SPACE = re.compile(r"\s+")


def clean_text(text: str) -> str:
    """Lowercase, markup stripped, entities decoded, whitespace collapsed."""
    text = _MARKUP.sub(" ", html.unescape(text))
    return _SPACE.sub(" ", text).strip().lower()


@dataclass(frozen=True, eq=False)
class Vectorizer:
    """A fitted sklearn vectorizer plus the optional per-column scale of the 'nb' weightings.

    With 'nbchars' a second vectorizer counts letter groups; its columns follow the words', and a
    vocabulary cap keeps `columns`, the most frequent of both together.
    """

    vectorizer: CountVectorizer  # words (and word pairs)
    column_scale: np.ndarray | None  # (V,) float32, or None
    chars: CountVectorizer | None = None  # letter groups ('nbchars' only)
    columns: np.ndarray | None = None  # kept columns of [words | letter groups] under a cap ('nbchars' only)

    @property
    def vocab_size(self) -> int:
        if self.columns is not None:
            return len(self.columns)
        return len(self.vectorizer.vocabulary_) + (0 if self.chars is None else len(self.chars.vocabulary_))

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        """(n, V) float32 CSR for new texts, weighted exactly as the training rows were."""
        texts = list(texts)
        if not texts:  # e.g. no validation rows; TF-IDF refuses an empty input
            return sp.csr_matrix((0, self.vocab_size), dtype=np.float32)
        x = _with_chars(self.vectorizer.transform(texts), self.chars, texts, self.columns)
        if self.column_scale is not None:
            x = x @ sp.diags(self.column_scale)
        return sp.csr_matrix(x, dtype=np.float32)


def _with_chars(words: sp.spmatrix, chars: CountVectorizer | None, texts: list[str],
                columns: np.ndarray | None) -> sp.csr_matrix:
    """The word columns, then (with a letter-group vectorizer) its columns, cut to `columns` under a cap."""
    x = sp.csr_matrix(words, dtype=np.float32)
    if chars is not None:
        x = sp.hstack([x, chars.transform(texts)], format="csr", dtype=np.float32)
    return x if columns is None else x[:, columns]


def _most_frequent(x: sp.csr_matrix, cap: int | None) -> np.ndarray | None:
    """Column ids of the `cap` columns in most rows (ties: the lower id), in order; None when all fit."""
    if cap is None or cap >= x.shape[1]:
        return None
    in_rows = np.diff(x.tocsc().indptr)
    return np.sort(np.argsort(-in_rows, kind="stable")[:cap])


def _sklearn_vectorizer(weighting: str, ngrams: int, max_features: int | None, min_df: int) -> CountVectorizer:
    common = dict(preprocessor=clean_text, ngram_range=(1, ngrams), max_features=max_features, min_df=min_df,
                  dtype=np.float32)
    if weighting == "tfidf":
        return TfidfVectorizer(sublinear_tf=True, norm=None, **common)
    if weighting in ("binary", "nb", "nbchars"):
        return CountVectorizer(binary=True, **common)
    if weighting == "counts":
        return CountVectorizer(**common)
    raise DashboardError(f"unknown weighting {weighting!r}; choose one of: {', '.join(WEIGHTINGS)}")


def nb_log_ratios(x: sp.csr_matrix, y: np.ndarray, alpha: float = NB_ALPHA) -> np.ndarray:
    """(V,) log of (smoothed share of each column among positives) / (share among negatives)."""
    pos = alpha + np.asarray(x[y == 1].sum(axis=0)).ravel()
    neg = alpha + np.asarray(x[y == 0].sum(axis=0)).ravel()
    return np.log((pos / pos.sum()) / (neg / neg.sum())).astype(np.float32)


def fit_vectorizer(
    texts: Sequence[str], labels: np.ndarray, *, weighting: str, ngrams: int, max_features: int | None,
    min_df: int = 1,
) -> tuple[Vectorizer, sp.csr_matrix]:
    """Fit on training texts (and, for 'nb', their labels); returns the vectorizer and their matrix."""
    chars = weighting == "nbchars"
    vec = _sklearn_vectorizer(weighting, ngrams, None if chars else max_features, min_df)
    texts = list(texts)
    try:
        x = vec.fit_transform(texts)
    except ValueError as exc:  # "empty vocabulary; perhaps the documents only contain stop words"
        raise DashboardError(
            f"no words left to learn from ({exc}); the texts may hold only punctuation or one-letter words"
        ) from None
    letters, columns = None, None
    if chars:
        letters = CountVectorizer(binary=True, analyzer="char_wb", ngram_range=CHAR_NGRAMS, preprocessor=clean_text,
                                  min_df=min_df, dtype=np.float32).fit(texts)
        x = _with_chars(x, letters, texts, None)
        columns = _most_frequent(x, max_features)
        x = x if columns is None else x[:, columns]
    scale = nb_log_ratios(x, np.asarray(labels)) if weighting in NB_WEIGHTINGS else None
    fitted = Vectorizer(vec, scale, letters, columns)
    x = sp.csr_matrix(x if scale is None else x @ sp.diags(scale), dtype=np.float32)
    return fitted, x


@dataclass(frozen=True)
class Split:
    """Row indices into the Reviews: training, validation (carved from training) and test."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


def split_rows(reviews: Reviews, *, test_size: float, val_fraction: float, seed: int) -> Split:
    """Stratified and seeded, so every run and every baseline sees the same rows.

    The data set's own test split (aclImdb) is used when it has one. The validation rows come out of
    the training rows; they choose the kept epoch so that the test rows stay unseen until reported.
    """
    y = reviews.labels
    rows = np.arange(reviews.n)
    try:
        if reviews.is_test is not None:
            train, test = rows[~reviews.is_test], rows[reviews.is_test]
        else:
            train, test = train_test_split(rows, test_size=test_size, stratify=y, random_state=seed)
        val = np.array([], dtype=int)
        if val_fraction > 0:
            train, val = train_test_split(train, test_size=val_fraction, stratify=y[train], random_state=seed)
    except ValueError as exc:  # too few rows of a class for the requested split
        raise DashboardError(
            f"{reviews.source}: {reviews.n_positive} positive and {reviews.n_negative} negative reviews are too few "
            f"to split into train, validation and test ({exc}); add reviews or lower the test/validation share"
        ) from None
    return Split(np.sort(train), np.sort(val), np.sort(test))


@dataclass(frozen=True, eq=False)
class Features:
    """The split document-term matrices (float32 CSR) and labels (float32 0/1), ready to train on."""

    vectorizer: Vectorizer
    x_train: sp.csr_matrix
    y_train: np.ndarray
    x_val: sp.csr_matrix
    y_val: np.ndarray
    x_test: sp.csr_matrix
    y_test: np.ndarray
    weighting: str
    source: str

    @property
    def vocab_size(self) -> int:
        return self.x_train.shape[1]

    @property
    def n_train(self) -> int:
        return self.x_train.shape[0]

    @property
    def n_val(self) -> int:
        return self.x_val.shape[0]

    @property
    def n_test(self) -> int:
        return self.x_test.shape[0]

    @property
    def nnz_per_row(self) -> float:
        return self.x_train.nnz / max(1, self.n_train)


BUILD_STEPS = 3  # what build_features reports: the vocabulary and training matrix, the validation rows, the test rows

StepReport = Callable[[int, int, str], None]  # (steps done, steps in all, what comes next)


def build_features(
    reviews: Reviews, *, weighting: str, ngrams: int, max_features: int | None, test_size: float,
    val_fraction: float, seed: int, min_df: int = 1, progress: StepReport | None = None,
) -> Features:
    """Split the rows, fit the vectorizer on the training rows only, transform all three parts.

    `progress` hears each step before it starts (on rt-polarity the first takes seconds; the page showed one
    spinner for all of them), so a caller can say what is being built while it waits."""
    tell = progress or (lambda done, total, message: None)
    split = split_rows(reviews, test_size=test_size, val_fraction=val_fraction, seed=seed)
    y = reviews.labels.astype(np.float32)
    texts = reviews.texts
    tell(0, BUILD_STEPS, f"document-term matrix: learning the vocabulary of {len(split.train):,} training reviews")
    vec, x_train = fit_vectorizer([texts[i] for i in split.train], reviews.labels[split.train], weighting=weighting,
                                  ngrams=ngrams, max_features=max_features, min_df=min_df)
    tell(1, BUILD_STEPS, f"document-term matrix: {vec.vocab_size:,} terms; weighting {len(split.val):,} "
                         "validation reviews")
    x_val = vec.transform([texts[i] for i in split.val])
    tell(2, BUILD_STEPS, f"document-term matrix: weighting {len(split.test):,} test reviews")
    x_test = vec.transform([texts[i] for i in split.test])
    return Features(
        vectorizer=vec,
        x_train=x_train,
        y_train=y[split.train],
        x_val=x_val,
        y_val=y[split.val],
        x_test=x_test,
        y_test=y[split.test],
        weighting=weighting,
        source=reviews.source,
    )


def synthetic_features(
    n_docs: int, vocab_size: int, nnz_per_row: int, *, test_size: float = 0.2, seed: int = 0,
) -> Features:
    """A random binary document-term matrix shaped like real reviews, with labels a model can learn.

    Column frequencies follow Zipf's law like words do; a review is positive when it holds more than
    the median number of the 200 most frequent terms. For memory benchmarks at IMDB scale and for a
    device self-check that needs no download.
    """
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, vocab_size + 1)
    indices = rng.choice(vocab_size, size=n_docs * nnz_per_row, p=zipf / zipf.sum()).astype(np.int32)
    indptr = np.arange(0, (n_docs + 1) * nnz_per_row, nnz_per_row, dtype=np.int64)
    x = sp.csr_matrix((np.ones(len(indices), np.float32), indices, indptr), shape=(n_docs, vocab_size))
    x.sum_duplicates()  # a term drawn twice in one review counts once
    x.data[:] = 1.0
    frequent = np.asarray(x[:, :200].sum(axis=1)).ravel()
    y = (frequent > np.median(frequent)).astype(np.float32)
    cut = int(n_docs * (1 - test_size))
    empty = sp.csr_matrix((0, vocab_size), dtype=np.float32)
    terms = CountVectorizer(vocabulary={f"t{i}": i for i in range(vocab_size)}, binary=True, dtype=np.float32)
    vectorizer = Vectorizer(terms.fit([]), None)  # term i is the word "t<i>"
    return Features(vectorizer, x[:cut], y[:cut], empty, np.zeros(0, np.float32), x[cut:], y[cut:], "binary",
                    f"synthetic {n_docs} x {vocab_size}")
