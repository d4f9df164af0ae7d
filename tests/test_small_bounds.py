"""Issue 21's small bounds: the password only out of the URL's field, the label before the run, workers
by the cores, data roots that are not the system, one refusal for every file a browser may not read."""

from __future__ import annotations

import pytest

from core.classifier import browser_paths
from core.classifier.browser_paths import allowed_path
from core.classifier.model import ClassifierConfig
from core.classifier.workers import check_workers
from core.cli import main
from core.errors import DashboardError
from core.store.database import Store


@pytest.mark.parametrize("message, shown", [
    ('password authentication failed for user "t": password expired',
     'password authentication failed for user "t": password expired'),
    ("could not connect to postgresql://t:p@db:5432/class", "could not connect to postgresql://t:***@db:5432/class"),
    ("conninfo: host=db password=p user=t", "conninfo: host=db password=*** user=t"),
    ("conninfo: password='p'", "conninfo: password=***"),
])
def test_only_the_password_field_is_blanked(message, shown):
    assert Store("postgresql://t:p@db:5432/class")._redact(message) == shown


def test_a_label_too_long_is_refused_before_the_run(capsys, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the run started")

    monkeypatch.setattr("core.cli.matmul.run_sweep", never, raising=False)
    assert main(["matmul", "--sizes", "64", "--devices", "cpu", "--save", "--label", "x" * 201]) == 2
    err = capsys.readouterr().err
    assert "--label: expected a string of at most 200 characters" in err and "\n" not in err.strip()


def test_workers_bounded_by_twice_the_usable_cores(monkeypatch):
    monkeypatch.setattr("core.classifier.workers.usable_cores", lambda: 2)
    check_workers(4, ClassifierConfig())
    with pytest.raises(DashboardError,
                       match="--workers 5 is more than twice this machine's 2 usable cores; use at most 4"):
        check_workers(5, ClassifierConfig())


@pytest.mark.parametrize("root", ["/", "/etc", "/proc", "/root", "/home", "~"])
def test_data_roots_naming_a_system_or_home_folder_are_refused(monkeypatch, root):
    monkeypatch.setenv(browser_paths.DATA_ROOTS_ENV, f"/srv/reviews:{root}")
    with pytest.raises(DashboardError, match="a system or home folder"):
        browser_paths.data_roots()


def test_one_refusal_for_a_missing_file_and_an_existing_file_of_another_kind(tmp_path):
    root = tmp_path / "reviews"
    root.mkdir()
    (root / "notes.json").write_text("{}")
    (root / "reviews.csv").write_text("text,label\nfine,1\n")
    messages = set()
    for name in ("notes.json", "missing.csv", "../reviews/notes.json"):
        with pytest.raises(DashboardError) as refused:
            allowed_path(str(root / name), roots=[root])
        messages.add(str(refused.value))
    assert len(messages) == 1
    assert allowed_path(str(root / "reviews.csv"), roots=[root]) == (root / "reviews.csv").resolve()
    assert allowed_path(str(root), roots=[root]) == root.resolve(), "a folder (rt-polarity, aclImdb) is read"
