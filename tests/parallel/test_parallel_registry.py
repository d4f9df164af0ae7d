"""The registry of Why-parallel sections: the one list the page, the CLI and the benchmark walk.

Each caller is run against a registry of two made-up sections: if it kept a list of its own, it
would show the real five (or miss one). The made-up runners also check that nobody holds a device
around a section: a section holds its devices itself (`run_job`), the page and the CLI hold none.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import plotly.graph_objects as go
import pytest
import torch
from streamlit.testing.v1 import AppTest

from core.cli import build_parser, main
from core.errors import DashboardError
from core.parallel import registry
from core.parallel.section import BUDGET, Knob, Section
from core.platform.jobs import JobHooks, Progress, run_job
from core.platform.device_lock import current_holder

ROOT = Path(__file__).resolve().parents[2]


def _cpu_locked() -> bool:
    return current_holder("cpu") is not None


@dataclass(frozen=True)
class Made:
    budget_s: float
    held_before: bool  # was the CPU held when the caller handed over?
    held_inside: bool  # was it held inside the section's own job?


class Log:
    runs: list[tuple[str, Made]] = []


def _made_up(key: str, title: str, knobs: tuple[Knob, ...]) -> Section[float, Made]:
    def run(budget_s: float, hooks: JobHooks) -> Made:
        before = _cpu_locked()
        with run_job(["cpu"], hooks, label=title) as job:
            made = Made(budget_s, before, _cpu_locked())
            job.report(Progress(1, 1, "one step", made))
        Log.runs.append((key, made))
        return made

    return Section(key=key, title=title, run=run, configure=lambda v: float(v[BUDGET.name]), knobs=knobs,
                   explain=lambda gpu, budget: f"{title} explained", summarize=lambda r: f"{title} measured",
                   figure=lambda r: go.Figure())


@pytest.fixture
def two_sections(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    made = (_made_up("alpha_one", "A. Alpha", (BUDGET,)),
            _made_up("beta", "B. Beta", (Knob("beta_n", "Beta n", 3, 1, 9), BUDGET)))
    monkeypatch.setattr(registry, "SECTIONS", made)
    Log.runs = []
    return made


def _assert_held_only_inside(runs: list[tuple[str, Made]], keys: list[str]) -> None:
    assert [key for key, _ in runs] == keys
    assert all(not m.held_before and m.held_inside for _, m in runs), "the caller held a device around a section"


# the registry itself ---------------------------------------------------------------------------------


def test_the_registry_lists_the_six_sections_in_page_order():
    assert [s.key for s in registry.SECTIONS] == ["marbles", "processes", "chain", "timing_bug", "first_call",
                                                  "location"]
    assert [s.title[:2] for s in registry.SECTIONS] == ["1.", "2.", "3.", "4.", "5.", "6."]
    assert [s.timed for s in registry.SECTIONS] == [True, True, True, True, True, False]


def test_a_section_is_found_by_key_or_by_its_cli_name():
    assert registry.section("timing_bug") is registry.section("timing-bug") is registry.SECTIONS[3]
    with pytest.raises(DashboardError, match="no section 'nope'; choose one of marbles, processes, chain, timing-bug"):
        registry.section("nope")


def test_the_settings_are_every_sections_knobs_once_in_page_order():
    assert [k.name for k in registry.knobs()] == ["small_n", "large_n", "budget_s", "processes", "steps", "rows",
                                                  "width", "bug_cpu_n", "bug_gpu_n"]


def test_a_sections_config_takes_the_knobs_given_and_defaults_the_rest():
    chain = registry.section("chain")
    assert chain.config() == chain.configure({k.name: k.default for k in chain.knobs})
    config = chain.config({"steps": 7, "budget_s": 0.5, "unrelated": 1})
    assert (config.steps, config.rows, config.budget_s) == (7, 8, 0.5)
    assert registry.section("marbles").config({"small_n": 8}).sizes == (8, 1024)


# the page, the CLI and the benchmark walk the registry, and hold no device around a section -----------


def test_the_page_shows_exactly_the_registrys_sections_and_holds_nothing(app: AppTest, two_sections):
    app.switch_page("pages/why_parallel.py").run()
    assert not app.exception
    assert [h.value for h in app.subheader] == ["A. Alpha", "B. Beta"]
    assert [n.key for n in app.number_input] == ["wp_budget_s", "wp_beta_n"]
    assert "A. Alpha explained" in [m.value for m in app.markdown]
    app.number_input(key="wp_budget_s").set_value(0.5).run()
    for section in two_sections:
        app.button(key=f"wp_run_{section.key}").click().run()
        assert not app.exception and not app.error
    _assert_held_only_inside(Log.runs, ["alpha_one", "beta"])
    assert app.session_state["wp_result_beta"].budget_s == 0.5 and len(app.get("plotly_chart")) == 2


def test_the_cli_offers_and_runs_exactly_the_registrys_sections_and_holds_nothing(two_sections, capsys):
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["why-parallel"]
    assert next(a for a in sub._actions if a.dest == "section").choices == ["all", "alpha-one", "beta"]
    assert main(["why-parallel", "--json", "--budget", "0.5"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["sections"]) == ["alpha_one", "beta"]
    assert out["sections"]["beta"]["result"]["budget_s"] == 0.5
    assert out["sections"]["beta"]["summary"] == "B. Beta measured"
    assert main(["why-parallel", "--section", "alpha-one"]) == 0
    assert capsys.readouterr().out.startswith("A. Alpha  (")
    _assert_held_only_inside(Log.runs, ["alpha_one", "beta", "alpha_one"])


def test_the_benchmark_times_exactly_the_registrys_sections(two_sections):
    spec = importlib.util.spec_from_file_location("bench_why_parallel", ROOT / "bench" / "why_parallel.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    page = bench.run_page(0.25)
    assert list(page["sections"]) == ["alpha_one", "beta"]
    assert page["total_s"] == pytest.approx(sum(s["wall_s"] for s in page["sections"].values()))
    assert page["sections"]["alpha_one"]["result"]["budget_s"] == 0.25
    _assert_held_only_inside(Log.runs, ["alpha_one", "beta"])
