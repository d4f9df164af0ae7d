"""The registry of result kinds: the import, the store's tables and exports, the Results page and the Class board
all walk `core.results.kinds.RESULT_KINDS` (and the Results page `core.charts.results.VIEWS`). A made-up kind
registered in those two lists only must reach every one of them, so a caller that kept a list of its own fails."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import ClassVar

import plotly.graph_objects as go
import pytest
from pydantic import Field
from pydantic.dataclasses import dataclass
from streamlit.testing.v1 import AppTest

from core.charts import results as views
from core.charts.results import Control, ResultsView
from core.results import fields as f
from core.results import files, kinds
from core.results.machine import Machine, unknown_machine
from core.results.result_kind import Frame, ResultKind
from core.results.schema import Declared, Kind
from core.store.database import open_store
from core.store.frames import kind_frame, tidy_frame
from tests.result_samples import save_payload


@dataclass(frozen=True, kw_only=True)
class CopyPoint(Declared):
    n: f.Size
    seconds: f.Number


@dataclass(frozen=True, kw_only=True)
class CopyRun(Kind):
    """A made-up kind: seconds to copy n floats on one device."""

    kind: ClassVar[str] = "copytest"
    schema_version: ClassVar[int] = 1

    device: f.Device
    copies: f.Items[CopyPoint] = ()
    machine: Machine = Field(default_factory=unknown_machine)
    settings: f.Settings = Field(default_factory=dict)  # what Store.save keeps beside the run

    @property
    def devices(self) -> list[str]:
        return [self.device]

    @property
    def headline(self) -> str:
        return f"copied up to n {max(p.n for p in self.copies):,}"


def _rows(run: CopyRun, device_title: Callable[[str], str]) -> Iterator[tuple[str, dict[str, object]]]:
    for point in run.copies:
        yield f"{device_title(run.device)} copies", {"device": run.device, "n": point.n, "seconds": point.seconds}


COPY = ResultKind(name="copytest", schema=CopyRun, title="copy test", detect=("copies",),
                  frame=Frame(("device", "n", "seconds"), _rows))
VIEW = ResultsView("copytest", lambda runs, choices: [("chart", go.Figure(layout={"title": f"log {choices[0]}"}))],
                   heading="Copy tests", controls=(Control("results_copytest_log", "Log axis"),))
BARE = {"device": "cpu", "copies": [{"n": 1024, "seconds": 0.001}, {"n": 4096, "seconds": 0.004}]}


@pytest.fixture
def registered(monkeypatch):
    """The made-up kind in the two lists, and nowhere else."""
    every = (*kinds.RESULT_KINDS, COPY)
    monkeypatch.setattr(kinds, "RESULT_KINDS", every)
    for name, value in kinds.derived(every).items():
        monkeypatch.setattr(kinds, name, value)
    monkeypatch.setattr(views, "VIEWS", (*views.VIEWS, VIEW))


def test_a_bare_file_of_the_kind_is_detected_and_imported(registered):
    assert kinds.detect_kind(BARE) == "copytest" and kinds.KIND_TITLES["copytest"] == "copy test"
    (record,) = files.read_import(json.dumps(BARE).encode(), file="copy.json")
    assert record.kind == "copytest" and isinstance(record.result, CopyRun)
    with pytest.raises(Exception, match="'copies' \\(copytest\\)"):  # the message lists what marks each kind
        files.read_import(b'{"hello": 1}')


def test_the_store_keeps_tabulates_exports_and_imports_it_again(registered):
    store = open_store()
    run_id = save_payload(store, "copytest", BARE, {"n": [1024, 4096]}, label="lab")
    (run,) = store.list_runs(kind="copytest")
    assert run.run_id == run_id and run.headline == "copied up to n 4,096"
    frame = kind_frame("copytest", [run])
    assert list(frame["n"]) == [1024, 4096] and frame["series"][0].startswith(f"#{run_id} ")
    assert frame["series"][0].endswith("copies · lab")
    assert {"device", "n", "seconds"} <= set(tidy_frame([run]).columns)
    assert "copytest" in store.export_csv([run_id]).decode()
    records = files.read_import(store.export_json([run_id]))
    assert [r.kind for r in records] == ["copytest"] and records[0].result == run.result


def test_the_results_page_and_the_class_board_show_it(registered, app: AppTest):
    save_payload(open_store(), "copytest", BARE, {}, label="lab")
    app.switch_page("pages/results.py").run()
    assert not app.exception, app.exception
    assert "copy test" in app.multiselect(key="results_kinds").options  # shown by title
    assert "Copy tests" in [h.value for h in app.subheader]
    assert app.toggle(key="results_copytest_log").value is True
    assert any("results_copytest_chart" in str(c.proto.id) for c in app.get("plotly_chart"))
    app.switch_page("pages/class_board.py").run()
    assert not app.exception, app.exception
    assert "copied up to n 4,096" in " ".join(d.value.astype(str).to_string() for d in app.dataframe)
