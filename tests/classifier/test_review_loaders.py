"""Every local source and every bad input a user can bring, on tiny files the tests write."""

from __future__ import annotations

import numpy as np
import pytest

from core.classifier import loaders as review_loaders
from core.errors import DashboardError
from core.classifier.loaders import decode_text, load_path, load_upload, load_uploads
from tests.review_fixtures import (
    NEGATIVE, POSITIVE, csv_bytes, labelled_rows, tar_gz, write_imdb_folder, write_rt_folder,
)


def _counts(reviews):
    return reviews.n_positive, reviews.n_negative


def test_rt_folder(tmp_path):
    reviews = load_path(write_rt_folder(tmp_path / "rt"))
    assert _counts(reviews) == (len(POSITIVE), len(NEGATIVE))
    assert reviews.texts[0] == POSITIVE[0] and reviews.labels[0] == 1 and reviews.labels[-1] == 0
    assert reviews.is_test is None


def test_rt_folder_one_level_down_and_windows_1252(tmp_path):
    pos = POSITIVE + ["a caf\u00e9 scene with \u2019curly\u2019 quotes"]  # both in cp1252, not valid UTF-8 once encoded
    write_rt_folder(tmp_path / "rt-polaritydata", pos=pos, encoding="cp1252")
    reviews = load_path(tmp_path)
    assert "a caf\u00e9 scene with \u2019curly\u2019 quotes" in reviews.texts


def test_latin1_fallback_for_bytes_cp1252_leaves_undefined():
    assert decode_text(b"na\xefve \x81", "x") == "na\u00efve \x81"  # 0x81 is undefined in cp1252


def test_imdb_folder_uses_its_own_split_and_skips_unlabelled(tmp_path):
    reviews = load_path(write_imdb_folder(tmp_path / "aclImdb"))
    assert reviews.n == 8 and _counts(reviews) == (4, 4)
    assert reviews.is_test.sum() == 4
    assert all("no label here" not in t for t in reviews.texts)
    assert "<br />" in reviews.texts[0]  # raw as read; cleaning is core.classifier.features' job


def test_imdb_folder_found_from_its_parent(tmp_path):
    write_imdb_folder(tmp_path / "aclImdb")
    assert load_path(tmp_path).n == 8


@pytest.mark.parametrize("layout", ["rt", "imdb"])
def test_tar_gz_of_either_layout_from_path_and_upload(tmp_path, layout):
    if layout == "rt":
        data = tar_gz(write_rt_folder(tmp_path / "src"), "rt-polaritydata")
        expected = (len(POSITIVE), len(NEGATIVE))
    else:
        data = tar_gz(write_imdb_folder(tmp_path / "src"), "aclImdb")
        expected = (4, 4)
    archive = tmp_path / "data.tar.gz"
    archive.write_bytes(data)
    from_path = load_path(archive)
    from_upload = load_upload(data, "data.tar.gz")
    assert _counts(from_path) == _counts(from_upload) == expected
    assert from_path.texts == from_upload.texts
    if layout == "imdb":
        assert from_path.is_test.sum() == 4


@pytest.mark.parametrize("pos,neg", [("1", "0"), ("pos", "neg"), ("positive", "negative"), ("true", "false"),
                                     ("POS", "Neg"), (" 1 ", "0")])
def test_csv_with_each_label_spelling(tmp_path, pos, neg):
    path = tmp_path / "reviews.csv"
    path.write_bytes(csv_bytes(labelled_rows(pos, neg)))
    reviews = load_path(path)
    assert _counts(reviews) == (len(POSITIVE), len(NEGATIVE))
    assert list(reviews.labels[: len(POSITIVE)]) == [1] * len(POSITIVE)


def test_tsv_and_other_column_names(tmp_path):
    path = tmp_path / "reviews.tsv"
    path.write_bytes(csv_bytes(labelled_rows("positive", "negative"), header=("Review", "Sentiment"), sep="\t"))
    assert _counts(load_path(path)) == (len(POSITIVE), len(NEGATIVE))


def test_csv_texts_with_commas_quotes_and_a_bom(tmp_path):
    rows = [('he said "wow" , loved it', "1"), ("bad , bad , bad", "0")] * 2
    data = b"\xef\xbb\xbf" + csv_bytes(rows)
    reviews = load_upload(data, "r.csv")
    assert reviews.texts[0] == 'he said "wow" , loved it'


def test_upload_and_path_agree(tmp_path):
    data = csv_bytes(labelled_rows())
    (tmp_path / "r.csv").write_bytes(data)
    a, b = load_path(tmp_path / "r.csv"), load_upload(data, "r.csv")
    assert a.texts == b.texts and np.array_equal(a.labels, b.labels)


def test_uploaded_pos_neg_pair():
    reviews = load_uploads([("rt-polarity.neg", "\n".join(NEGATIVE).encode()),
                            ("rt-polarity.pos", "\n".join(POSITIVE).encode())])
    assert _counts(reviews) == (len(POSITIVE), len(NEGATIVE))


def test_empty_texts_are_dropped_and_counted():
    rows = labelled_rows() + [("", "1"), ("   ", "0")]
    reviews = load_upload(csv_bytes(rows), "r.csv")
    assert reviews.dropped_empty == 2 and reviews.n == len(POSITIVE) + len(NEGATIVE)


BAD_UPLOADS = {
    "empty file": (b"", "r.csv", "is empty"),
    "only a header": (b"text,label\n", "r.csv", "has no reviews"),
    "blank text": (b"  \n\n", "r.csv", "is empty"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "r.csv", "not a text file"),
    "utf-16": (csv_bytes(labelled_rows()).decode().encode("utf-16"), "r.csv", "UTF-16"),
    "utf-16 without BOM": (csv_bytes(labelled_rows()).decode().encode("utf-16-le"), "r.csv", "UTF-16"),
    "no text column": (csv_bytes(labelled_rows(), header=("words", "label")), "r.csv", "no text column"),
    "no label column": (csv_bytes(labelled_rows(), header=("text", "stars")), "r.csv", "no label column"),
    "unknown labels": (csv_bytes([("good", "5"), ("bad", "1"), ("ok", "3")] * 2), "r.csv", "2, 4, 5.; use"),
    "malformed": (b'text,label\n"unclosed quote,1\nbad,0\n', "r.csv", "not a valid CSV"),
    "too many fields": (b"text,label\ngood,1\nbad,0,extra,fields\n", "r.csv", "not a valid CSV"),
    "single class": (csv_bytes([(t, "1") for t in POSITIVE]), "r.csv", "only positive reviews"),
    "one of a class": (csv_bytes([(t, "1") for t in POSITIVE] + [("bad", "0")]), "r.csv", "at least 2 of each"),
    "all empty texts": (csv_bytes([("", "1"), ("", "0")] * 3), "r.csv", "only empty texts"),
    "unknown type": (b"hello", "r.docx", "unknown file type"),
    "not an archive": (b"this is not gzip" * 10, "r.tar.gz", "not a readable .tar.gz"),
}


@pytest.mark.parametrize("case", list(BAD_UPLOADS))
def test_bad_uploads_say_what_is_wrong(case):
    data, name, message = BAD_UPLOADS[case]
    with pytest.raises(DashboardError, match=message.replace("(", r"\(")) as err:
        load_upload(data, name)
    assert name in str(err.value) or case in ("single class", "one of a class")
    assert "\n" not in str(err.value)


def test_archive_without_reviews(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "notes.txt").write_text("hello")
    with pytest.raises(DashboardError, match="holds no reviews"):
        load_upload(tar_gz(tmp_path / "src", "x"), "x.tar.gz")


def test_too_large(monkeypatch):
    monkeypatch.setattr(review_loaders, "MAX_FILE_BYTES", 100)
    with pytest.raises(DashboardError, match="more than"):
        load_upload(csv_bytes(labelled_rows()), "r.csv")


def test_archive_unpacking_too_much(tmp_path, monkeypatch):
    data = tar_gz(write_rt_folder(tmp_path / "src"), "rt")
    monkeypatch.setattr(review_loaders, "MAX_UNPACKED_BYTES", 50)
    with pytest.raises(DashboardError, match="unpacks to more than"):
        load_upload(data, "rt.tar.gz")


def test_bad_paths(tmp_path):
    with pytest.raises(DashboardError, match="does not exist"):
        load_path(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DashboardError, match="holds no reviews"):
        load_path(tmp_path / "empty")
    (tmp_path / "e.csv").write_bytes(b"")
    with pytest.raises(DashboardError, match="is empty"):
        load_path(tmp_path / "e.csv")


def test_three_uploads_refused():
    with pytest.raises(DashboardError, match="3 files uploaded"):
        load_uploads([("a.csv", b"x"), ("b.csv", b"y"), ("c.csv", b"z")])


def test_real_rt_polarity(rt_polarity_dir):
    reviews = load_path(rt_polarity_dir)
    assert _counts(reviews) == (5331, 5331)
