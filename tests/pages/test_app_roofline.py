"""AppTests of the Roofline page: it opens, one click measures and draws both charts, the run is saved, errors show."""

from dataclasses import replace

import pytest

from tests.result_samples import save_payload
import torch
from streamlit.testing.v1 import AppTest

from core.store.database import open_store

PAGE = "pages/roofline.py"


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def test_page_opens_with_its_settings(app: AppTest, no_gpu):
    app.switch_page(PAGE).run()
    assert not app.exception
    assert app.multiselect(key="rl_devices").value == ["cpu"]
    assert "fixed cost of starting one operation" in app.caption[0].value


def test_one_click_measures_draws_and_saves(app: AppTest, no_gpu):
    app.switch_page(PAGE).run()
    app.select_slider(key="rl_budget").set_value(0.05)
    app.text_input(key="rl_label").input("Ana's laptop")
    app.button(key="rl_run").click().run()
    assert not app.exception and not app.error
    charts = app.get("plotly_chart")
    assert len(charts) == 2
    assert len(app.dataframe) == 1 and "launch µs" in app.dataframe[0].value.columns
    text = " ".join(str(x.value) for x in [*app.info, *app.success, *app.warning])  # warning: noisy constants
    assert "crossover" in text
    (run,) = open_store().list_runs(kind="roofline")
    assert run.label == "Ana's laptop" and run.result.points
    captions = " ".join(c.value for c in app.caption)
    assert "Markers: measured seconds per product" in captions
    assert "plus the copies" not in captions  # no GPU: none drawn
    table = app.dataframe[0].value
    assert not {"None", "nan"} & {str(v) for row in table.values.tolist() for v in row}  # blank, never None


def test_no_device_chosen_is_an_error_not_a_crash(app: AppTest, no_gpu):
    app.switch_page(PAGE).run()
    app.multiselect(key="rl_devices").set_value([])
    app.button(key="rl_run").click().run()
    assert not app.exception
    assert "choose at least one device" in app.error[0].value


def test_a_fake_gpu_is_offered(app: AppTest, fake_cuda):
    app.switch_page(PAGE).run()
    assert not app.exception
    assert "cuda:0" in app.multiselect(key="rl_devices").options


def test_saved_rooflines_appear_on_results_beside_each_other(app: AppTest, no_gpu):
    from tests.roofline.test_roofline import _synthetic_run

    store = open_store()
    save_payload(store, "roofline", _synthetic_run().to_json(), {}, label="lab GPU")
    save_payload(store, "roofline", _synthetic_run().to_json() | {"wall_s": 1.0}, {}, label="Ana's laptop")
    app.switch_page("pages/results.py").run()
    assert not app.exception
    assert "roofline" in app.multiselect(key="results_kinds").options
    listing = app.dataframe[0].value
    assert list(listing["kind"]) == ["roofline", "roofline"] and "crossover predicted 49" in listing["result"].iloc[0]
    (chart,) = [c for c in app.get("plotly_chart") if "Rooflines" in c.proto.spec]
    assert "#1 lab GPU" in chart.proto.spec and "Ana's laptop" in chart.proto.spec


def test_a_busy_run_reads_cannot_tell_in_a_warning(app: AppTest, no_gpu, monkeypatch):
    """The measured crossover by the race's verdicts: a sweep timed while others took the cores it needed is
    'cannot tell on a machine this busy', shown as a warning, with no measured size."""
    from core.matmul import verdict
    from core.roofline import run as roofline_run
    from tests.roofline.test_roofline_spread import _run

    monkeypatch.setattr(verdict, "usable_cores", lambda: 2)
    busy = replace(_run((20e-6,) * 3, others=1.0), wall_s=1.0)
    monkeypatch.setattr(roofline_run, "run_roofline", lambda config, hooks=None: busy)
    app.switch_page(PAGE).run()
    app.button(key="rl_run").click().run()
    assert not app.exception and not app.error
    (warning,) = [w.value for w in app.warning if "crossover" in w.value]
    assert "The sweep: cannot tell on a machine this busy" in warning and "measured it at" not in warning
    assert warning.startswith("Cannot tell") or warning.startswith("The sweep: cannot tell")  # the caveat leads
    assert not [s.value for s in app.success if "crossover" in s.value]


def test_after_a_run_the_chart_comes_first_and_no_field_name_shows(app: AppTest, no_gpu, monkeypatch):
    """At 1280 × 720 the chart must follow the buttons, not a long verdict box and the roofs table (issue 34);
    and what the page says names constants in words ('memory bandwidth'), never 'bandwidth_gbs'."""
    from core.roofline import run as roofline_run
    from core.roofline.spread import NAMES
    from tests.roofline.test_roofline_spread import _run

    busy = replace(_run((20e-6,) * 3, others=1.0), wall_s=1.0)  # noisy constants: every note and flag shown
    monkeypatch.setattr(roofline_run, "run_roofline", lambda config, hooks=None: busy)
    app.switch_page(PAGE).run()
    app.button(key="rl_run").click().run()
    assert not app.exception
    order = [getattr(n, "type", "") for n in _walk(app.main)]
    first_chart = order.index("plotly_chart")
    assert first_chart < order.index("dataframe") and first_chart < order.index("warning"), order
    shown = [str(x.value) for x in [*app.markdown, *app.caption, *app.info, *app.success, *app.warning]]
    shown += [str(c) for c in app.dataframe[0].value.columns] + [str(v) for v in app.dataframe[0].value.values.ravel()]
    leaked = [(field, text) for field in NAMES for text in shown if field in text]
    assert not leaked, leaked


def _walk(node):
    """Every element under a node, in page order."""
    children = getattr(node, "children", None)
    if not children:
        yield node
        return
    for key in sorted(children):
        yield from _walk(children[key])
