"""`python -m core data add`: a local copy of a built-in data set into the cache, checked as a download is;
then `train` with no `--data` works with no network."""

from __future__ import annotations

import json
import tarfile
from dataclasses import replace

import pytest

import core.classifier.datasets as datasets
from core.classifier.datasets import BUILTIN_DATASETS, archive_path, fetch, is_cached, md5_of
from core.cli import main
from core.errors import DashboardError

RT = BUILTIN_DATASETS["rt-polarity"]
WORDS = ["good", "bad", "fine", "dull", "moving", "flat", "witty", "slow"]


def _rt_folder(tmp_path, positives: int = RT.positives, negatives: int = RT.negatives):
    """rt-polarity's two files with the original's counts (made-up sentences, Windows-1252 like the original)."""
    folder = tmp_path / "usb" / "rt-polaritydata"
    folder.mkdir(parents=True)
    pos = "".join(f"a {WORDS[i % 4]} film number {i} , truly {WORDS[(i * 3) % 4]} .\n" for i in range(positives))
    neg = "".join(f"a {WORDS[4 + i % 4]} film number {i} , sadly {WORDS[4 + (i * 3) % 4]} .\n"
                  for i in range(negatives))
    (folder / "rt-polarity.pos").write_bytes(pos.encode("cp1252"))
    (folder / "rt-polarity.neg").write_bytes(neg.encode("cp1252"))
    return folder


@pytest.fixture
def offline(monkeypatch):
    """Every download fails as it does without a network."""
    def no_network(url, part, **kwargs):
        raise datasets._Offline("[Errno -3] Temporary failure in name resolution")
    monkeypatch.setattr(datasets, "_fetch_to", no_network)


def test_the_download_failure_names_data_add(offline):
    with pytest.raises(DashboardError, match=r"`python -m core data add rt-polarity PATH`"):
        fetch("rt-polarity")
    assert not is_cached("rt-polarity")


def test_added_folder_is_read_offline_as_the_built_in_set(tmp_path, offline, capsys):
    assert main(["data", "add", "rt-polarity", str(_rt_folder(tmp_path))]) == 0
    assert "added from the folder and verified" in capsys.readouterr().out
    reviews = datasets.load_source("rt-polarity")  # the page's and the CLI's reader: no download tried
    assert (reviews.n_positive, reviews.n_negative) == (RT.positives, RT.negatives)


@pytest.mark.slow
def test_add_a_folder_then_train_with_no_data_flag_and_no_network(tmp_path, offline, capsys):
    assert not is_cached("rt-polarity")
    assert main(["data", "add", "rt-polarity", str(_rt_folder(tmp_path).parent), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["packed_from_folder"] and not info["already_cached"]
    assert (info["positive"], info["negative"]) == (RT.positives, RT.negatives)
    with tarfile.open(archive_path("rt-polarity")) as tar:  # the original's layout
        assert sorted(tar.getnames()) == ["rt-polaritydata/rt-polarity.neg", "rt-polaritydata/rt-polarity.pos"]
    assert main(["train", "--epochs", "1", "--hidden", "4", "--device", "cpu", "--max-features", "2000", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["n_test"] > 2000 and len(run["epochs"]) == 1  # the 10,662 reviews, from the cache
    assert main(["data", "add", "rt-polarity", str(tmp_path)]) == 0
    assert "already in the cache" in capsys.readouterr().out


def test_a_folder_with_the_wrong_counts_is_refused_and_nothing_is_cached(tmp_path, capsys):
    folder = _rt_folder(tmp_path, positives=100, negatives=100)
    assert main(["data", "add", "rt-polarity", str(folder)]) == 2
    assert "not 5331 and 5331" in capsys.readouterr().err
    assert not is_cached("rt-polarity") and not list(archive_path("rt-polarity").parent.iterdir())


def test_an_archive_must_be_the_original(tmp_path, monkeypatch, capsys):
    folder = _rt_folder(tmp_path)
    archive = tmp_path / "rt-polaritydata.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="rt-polaritydata")
    assert main(["data", "add", "rt-polarity", str(archive)]) == 2
    assert "is not the original rt-polaritydata.tar.gz" in capsys.readouterr().err
    assert not is_cached("rt-polarity")
    # the same bytes as the original (its md5 pinned to this file): copied in, then read like a download
    monkeypatch.setitem(BUILTIN_DATASETS, "rt-polarity", replace(RT, md5=md5_of(archive)))
    assert main(["data", "add", "rt-polarity", str(archive)]) == 0
    assert md5_of(archive_path("rt-polarity")) == md5_of(archive)


@pytest.mark.parametrize("path, message", [("nowhere", "does not exist"), ("empty", "holds no rt-polarity.pos")])
def test_a_missing_or_empty_path_is_one_line(tmp_path, path, message, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["data", "add", "rt-polarity", str(tmp_path / path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_an_imdb_folder_without_test_is_refused_before_any_packing(tmp_path, monkeypatch, capsys):
    """Issue 30: a FileNotFoundError after 14 s of packing 100,000 files."""
    import core.classifier.local_copy as local_copy

    for label in ("pos", "neg"):
        (tmp_path / "aclImdb" / "train" / label).mkdir(parents=True)
        (tmp_path / "aclImdb" / "train" / label / "0_7.txt").write_text("a film")
    monkeypatch.setattr(local_copy, "_pack", lambda *a: pytest.fail("packing started"))
    assert main(["data", "add", "imdb", str(tmp_path / "aclImdb")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "test/pos, test/neg missing" in err


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_is_refused_at_once(device, capsys):
    """Issue 30: `data add rt-polarity /dev/zero` read for ever."""
    import time

    started = time.monotonic()
    assert main(["data", "add", "rt-polarity", device]) == 2
    assert time.monotonic() - started < 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a regular file" in err


def test_an_archive_larger_than_any_original_is_refused_unread(tmp_path, monkeypatch, capsys):
    import core.classifier.local_copy as local_copy

    big = tmp_path / "big.tar.gz"
    with open(big, "wb") as f:
        f.truncate(local_copy.MAX_FILE_BYTES + 1)
    monkeypatch.setattr(local_copy, "md5_of", lambda p: pytest.fail("read"))
    assert main(["data", "add", "rt-polarity", str(big)]) == 2
    assert "more than the 200 MiB" in capsys.readouterr().err


def test_messages_name_the_source_not_an_internal_part_file(tmp_path, capsys):
    folder = _rt_folder(tmp_path, positives=100, negatives=100)
    assert main(["data", "add", "rt-polarity", str(folder)]) == 2
    err = capsys.readouterr().err
    assert ".part" not in err and "download" not in err and "the local copy of the rt-polarity archive" in err
