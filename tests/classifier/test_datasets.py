"""Downloads through a local HTTP server the test starts: success, bad checksum, cut-off, stall, offline."""

from __future__ import annotations

import hashlib
import http.server
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from core.classifier import datasets
from core.cli import main
from core.classifier.datasets import (BUILTIN_DATASETS, archive_path, download, fetch, is_cached, load_dataset,
                                      load_source)
from core.errors import DashboardError
from core.platform.paths import cache_dir
from tests.review_fixtures import NEGATIVE, POSITIVE, tar_gz, write_rt_folder

STALL_S = 2.0  # how long the server goes quiet in the timeout cases
TIMEOUT_S = 0.3  # the client's patience in those cases


class Server:
    """Serves `routes[path] = (bytes, mode)`; mode: ok | cut (half, then close) | stall | stall_mid."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[bytes, str]] = {}
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_GET(self):
                try:
                    self._serve()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up first, as intended
                    pass

            def _serve(self):
                server.requests.append(self.path)
                if self.path not in server.routes:
                    self.send_error(404, "Not Found")
                    return
                body, mode = server.routes[self.path]
                if mode == "stall":
                    time.sleep(STALL_S)
                self.send_response(200)
                self.send_header("Content-Type", "application/gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if mode == "cut":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if mode == "stall_mid":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    time.sleep(STALL_S)
                    return
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


@pytest.fixture
def tiny_rt(tmp_path, monkeypatch, server) -> tuple[bytes, str]:
    """A small rt-polarity archive standing in for the real one: the built-in entry points at the server."""
    archive = tar_gz(write_rt_folder(tmp_path / "rt-polaritydata"), "rt-polaritydata")
    md5 = hashlib.md5(archive).hexdigest()
    ds = replace(BUILTIN_DATASETS["rt-polarity"], url=f"{server.url}/rt.tar.gz", md5=md5,
                 positives=len(POSITIVE), negatives=len(NEGATIVE))
    monkeypatch.setitem(BUILTIN_DATASETS, "rt-polarity", ds)
    return archive, md5


def _leftovers() -> list[Path]:
    folder = cache_dir() / "datasets"
    return sorted(folder.iterdir()) if folder.exists() else []


def test_download_success_with_progress(server, tiny_rt):
    archive, _ = tiny_rt
    server.routes["/rt.tar.gz"] = (archive, "ok")
    seen: list[tuple[int, int | None]] = []
    path = fetch("rt-polarity", progress=lambda done, total: seen.append((done, total)))
    assert path == archive_path("rt-polarity") and path.read_bytes() == archive
    assert seen[0] == (0, len(archive)) and seen[-1] == (len(archive), len(archive))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert _leftovers() == [path]  # no temp file beside it
    reviews = load_dataset("rt-polarity")
    assert (reviews.n_positive, reviews.n_negative) == (len(POSITIVE), len(NEGATIVE))


def test_cached_archive_is_not_downloaded_again(server, tiny_rt):
    server.routes["/rt.tar.gz"] = (tiny_rt[0], "ok")
    fetch("rt-polarity")
    fetch("rt-polarity")
    load_source("rt-polarity")
    assert server.requests == ["/rt.tar.gz"]


def test_checksum_mismatch_leaves_nothing(server, tiny_rt):
    server.routes["/rt.tar.gz"] = (tiny_rt[0] + b"tampered", "ok")
    with pytest.raises(DashboardError, match="checksum mismatch.*expected md5"):
        fetch("rt-polarity")
    assert _leftovers() == [] and not is_cached("rt-polarity")


def test_interrupted_download_leaves_no_partial_file(server, tiny_rt):
    server.routes["/rt.tar.gz"] = (tiny_rt[0] * 50, "cut")  # big enough to be cut mid-way
    with pytest.raises(DashboardError, match="interrupted"):
        download(f"{server.url}/rt.tar.gz", archive_path("rt-polarity"), md5=None)
    assert _leftovers() == []


@pytest.mark.parametrize("mode", ["stall", "stall_mid"])
def test_stalled_server_times_out(server, tiny_rt, mode):
    server.routes["/rt.tar.gz"] = (tiny_rt[0] * 50, mode)
    start = time.monotonic()
    with pytest.raises(DashboardError, match="stalled"):
        fetch("rt-polarity", timeout_s=TIMEOUT_S)
    assert time.monotonic() - start < STALL_S  # gave up on its own, did not wait for the server
    assert _leftovers() == []


def test_wrong_structure_with_right_checksum(server, tiny_rt, monkeypatch):
    archive, md5 = tiny_rt
    ds = replace(BUILTIN_DATASETS["rt-polarity"], positives=5331, negatives=5331)
    monkeypatch.setitem(BUILTIN_DATASETS, "rt-polarity", ds)
    server.routes["/rt.tar.gz"] = (archive, "ok")
    with pytest.raises(DashboardError, match="not 5331 and 5331"):
        fetch("rt-polarity")
    assert _leftovers() == []


def test_http_error(server, tiny_rt):
    with pytest.raises(DashboardError, match="404"):
        fetch("rt-polarity")  # no route: the server answers 404
    assert _leftovers() == []


def test_offline_says_how_to_get_the_data(tiny_rt, monkeypatch, server):
    url = server.url
    server.close()  # nothing listens there any more: connection refused, as offline
    monkeypatch.setitem(BUILTIN_DATASETS, "rt-polarity", replace(BUILTIN_DATASETS["rt-polarity"], url=f"{url}/x"))
    with pytest.raises(DashboardError) as err:
        load_source("rt-polarity")
    message = str(err.value)
    assert "python -m core data fetch rt-polarity" in message and "path" in message and "upload" in message
    assert _leftovers() == []


def test_downloads_off_and_nothing_cached():
    with pytest.raises(DashboardError, match="python -m core data fetch imdb"):
        load_dataset("imdb", allow_download=False)


def test_unknown_name():
    with pytest.raises(DashboardError, match="unknown data set"):
        fetch("sst2")


def test_builtin_entries_are_pinned():
    assert BUILTIN_DATASETS["imdb"].md5 == "7c2ac02c03563afcf9b574c7e56c153a"
    assert all(len(ds.md5) == 32 for ds in BUILTIN_DATASETS.values())
    assert datasets.DOWNLOAD_TIMEOUT_S > 0


def test_cli_fetch(server, tiny_rt, capsys):
    server.routes["/rt.tar.gz"] = (tiny_rt[0], "ok")
    assert main(["data", "fetch", "rt-polarity"]) == 0
    out = capsys.readouterr()
    assert "downloaded and verified" in out.out and "downloaded" in out.err
    assert main(["data", "fetch", "rt-polarity", "--json"]) == 0
    assert '"already_cached": true' in capsys.readouterr().out
    assert main(["data", "list"]) == 0
    assert "rt-polarity" in capsys.readouterr().out


def test_cli_fetch_checksum_mismatch_exits_2(server, tiny_rt, capsys):
    server.routes["/rt.tar.gz"] = (b"not the archive", "ok")
    assert main(["data", "fetch", "rt-polarity"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: checksum mismatch") and len([e for e in err if e.startswith("error")]) == 1


def test_cli_fetch_unknown_name_exits_2(capsys):
    assert main(["data", "fetch", "sst2"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_no_connection_within_the_timeout_counts_as_offline(monkeypatch):
    """A network that drops packets times out on connect: that is offline too, with the same guidance."""
    import urllib.error

    def blackhole(*args, **kwargs):
        raise urllib.error.URLError(TimeoutError("timed out"))

    monkeypatch.setattr(datasets.urllib.request, "urlopen", blackhole)
    with pytest.raises(DashboardError, match="no connection to the server within 30 s.*python -m core data fetch imdb"):
        load_source("imdb")
    assert _leftovers() == []
