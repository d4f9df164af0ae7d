"""Hostile or careless input to the classifier's data and settings: refused in one line, never read or echoed."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
import torch

from core.classifier import browser_paths, loaders
from core.classifier.browser_paths import allowed_path, load_for_browser
from core.classifier.model import ClassifierConfig, check_model_fits
from core.errors import DashboardError
from tests.review_fixtures import csv_bytes, labelled_rows, write_rt_folder


def _secret(tmp_path: Path) -> Path:
    secret = tmp_path / "elsewhere" / "creds.txt"
    secret.parent.mkdir()
    secret.write_text("DB_PASSWORD=hunter2,x\n1,2\n")
    return secret


def test_a_browser_path_outside_the_roots_is_refused_without_reading_it(tmp_path):
    secret = _secret(tmp_path)
    root = tmp_path / "allowed"
    root.mkdir()
    with pytest.raises(DashboardError) as refused:
        load_for_browser(str(secret), roots=[root])
    assert "hunter2" not in str(refused.value) and "DB_PASSWORD" not in str(refused.value)
    with pytest.raises(DashboardError) as missing:
        load_for_browser(str(tmp_path / "elsewhere" / "nothing.txt"), roots=[root])
    assert str(missing.value) == str(refused.value)  # missing and forbidden look the same


def test_a_symlink_out_of_the_root_is_refused(tmp_path):
    secret = _secret(tmp_path)
    root = tmp_path / "allowed"
    root.mkdir()
    (root / "link.csv").symlink_to(secret)
    with pytest.raises(DashboardError, match="not available here"):
        allowed_path(str(root / "link.csv"), roots=[root])
    with pytest.raises(DashboardError, match="not available here"):
        allowed_path(str(root / ".." / "elsewhere" / "creds.txt"), roots=[root])


def test_a_path_under_a_root_is_read(tmp_path):
    root = tmp_path / "allowed"
    write_rt_folder(root / "rt")
    reviews = load_for_browser(str(root / "rt"), roots=[root])
    assert reviews.n > 0


def test_the_default_root_is_the_data_set_cache(monkeypatch, tmp_path):
    monkeypatch.delenv(browser_paths.DATA_ROOTS_ENV, raising=False)
    monkeypatch.setenv("GPU_VS_CPU_CACHE_DIR", str(tmp_path / "cache"))
    assert browser_paths.data_roots() == ((tmp_path / "cache" / "datasets").resolve(),)
    monkeypatch.setenv(browser_paths.DATA_ROOTS_ENV, f"{tmp_path / 'a'}:{tmp_path / 'b'}")
    assert browser_paths.data_roots() == ((tmp_path / "a").resolve(), (tmp_path / "b").resolve())


def test_messages_never_quote_a_files_content():
    with pytest.raises(DashboardError) as no_column:
        loaders.parse_table(b"DB_PASSWORD=hunter2,x\n1,2\n", "creds.csv")
    assert "hunter2" not in str(no_column.value) and "2 column(s)" in str(no_column.value)
    with pytest.raises(DashboardError) as bad_label:
        loaders.parse_table(csv_bytes([("fine", "1"), ("ok", "SECRET-TOKEN")]), "x.csv")
    assert "SECRET" not in str(bad_label.value) and "line(s) 3" in str(bad_label.value)


def _tar(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_skipped_archive_members_count_toward_the_unpack_cap(monkeypatch):
    monkeypatch.setattr(loaders, "MAX_UNPACKED_BYTES", 1000)
    data = _tar({"junk.bin": b"\0" * 2000, "rt-polarity.pos": b"good\n", "rt-polarity.neg": b"bad\n"})
    with pytest.raises(DashboardError, match="unpacks to more than"):
        loaders.parse_archive(data, "bomb.tar.gz")


def test_an_oversized_member_and_too_many_lines_are_refused(monkeypatch):
    bomb = _tar({"rt-polarity.pos": b"a\n" * 5000, "rt-polarity.neg": b"b\n"})  # compresses to ~100 bytes
    monkeypatch.setattr(loaders, "MAX_FILE_BYTES", 5000)
    assert len(bomb) < 5000
    with pytest.raises(DashboardError, match="a member is"):
        loaders.parse_archive(bomb, "big.tar.gz")
    monkeypatch.setattr(loaders, "MAX_FILE_BYTES", 200 * 2**20)
    monkeypatch.setattr(loaders, "MAX_REVIEWS", 10)
    with pytest.raises(DashboardError, match="more than 10 reviews"):
        loaders.parse_archive(_tar({"rt-polarity.pos": b"a\n" * 20, "rt-polarity.neg": b"b\n"}), "many.tar.gz")
    with pytest.raises(DashboardError, match="more than 10 reviews"):
        loaders.parse_table(csv_bytes(labelled_rows() * 10), "many.csv")


@pytest.mark.parametrize("field, value", [
    ("lr", float("inf")), ("lr", 1e30), ("lr", float("nan")), ("hidden", 10_000_000), ("epochs", 1_000_000),
    ("seed", -1), ("batch_size", 0), ("max_features", 10**12), ("weight_decay", float("inf")),
])
def test_settings_out_of_range_are_refused_in_one_line(field, value):
    with pytest.raises(DashboardError, match="out of range") as refused:
        ClassifierConfig(**{field: value})
    assert "\n" not in str(refused.value)


def test_a_network_too_big_for_memory_is_refused_before_allocating(monkeypatch):
    monkeypatch.setattr("core.classifier.model.free_device_bytes", lambda device: 10 * 2**20)
    check_model_fits(10_000, 16, torch.device("cpu"))  # 2.6 MB: fits
    with pytest.raises(DashboardError, match="fewer hidden units"):
        check_model_fits(100_000, 1_000, torch.device("cpu"))
