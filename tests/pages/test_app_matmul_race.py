"""AppTests of the Matmul race page: without a GPU, with a fake one, a tiny real run, stop, errors."""

import json
import os
import threading
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from core.store.access import new_owner_token
from core.store.database import open_store
from pages.shared.result_store import OWNER_TOKEN
from tests.lock_helpers import hold_cpu_for

PAGE = "pages/matmul_race.py"
ROOT_APP = Path(__file__).resolve().parents[2] / "app.py"


def _text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [i.value for i in at.info] + [w.value for w in at.warning]
    parts += [s.value for s in at.success] + [e.value for e in at.error] + [c.value for c in at.caption]
    parts += [f"[{link.proto.label}]({link.proto.page})" for link in at.get("page_link")]
    return "\n".join(str(p) for p in parts)


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)


def _tiny_run(app: AppTest) -> AppTest:
    app.switch_page(PAGE).run()
    app.select_slider(key="mm_sizes").set_value((16, 32))
    app.select_slider(key="mm_budget").set_value(0.25)
    app.multiselect(key="mm_threads").set_value([1])
    return app.button(key="mm_run").click().run()


def test_page_without_gpu_says_what_a_gpu_would_add(app, no_gpu):
    app.switch_page(PAGE).run()
    assert not app.exception
    text = _text(app)
    assert "from which size do more CPU threads win?" in text and "does the GPU win" not in text  # the race run
    assert "crossover size" in text and "[No GPU here. How to get one free: Hardware check](hardware)" in text
    assert "Runtime > Change runtime type > GPU" not in text  # the full advice is on Hardware check only
    assert app.multiselect(key="mm_devices").value == ["cpu"]
    cores = os.cpu_count() or 1
    assert app.multiselect(key="mm_threads").value == ([1, cores] if cores > 1 else [None])  # 1 against all cores
    assert app.checkbox(key="mm_end_to_end").help.endswith("needs a GPU, and PyTorch sees none on this machine")
    assert app.select_slider(key="mm_sizes").value == (64, 2048)
    offered = [int(n.replace(",", "")) for n in app.select_slider(key="mm_sizes").options]  # shown as 16,384
    assert offered[:8] == [16, 32, 64, 128, 256, 512, 1024, 2048]  # and on, doubling, while RAM allows
    assert all(b == 2 * a for a, b in zip(offered, offered[1:]))
    assert app.radio(key="mm_tf32").disabled and app.checkbox(key="mm_end_to_end").disabled
    assert not app.get("plotly_chart")  # nothing is timed before Run


def test_tiny_run_shows_charts_table_and_downloads(app, no_gpu):
    _tiny_run(app)
    assert not app.exception, app.exception
    assert not app.error
    results = app.session_state["mm_sweep"].results
    assert [r.n for r in results] == [16, 32]
    assert len(app.get("plotly_chart")) == 3
    table = app.dataframe[0].value
    assert table["n"].tolist() == [16, 32] and all(float(ms) > 0 for ms in table["median ms"])  # shown as text
    assert not {"None", "nan"} & {str(v) for row in table.values.tolist() for v in row}  # empty cells are blank
    assert len(app.get("download_button")) == 2
    assert app.session_state["mm_sweep"].final is not None and "Stopped" not in _text(app)


def test_stop_keeps_the_measured_rows(app, no_gpu):
    _tiny_run(app)
    app.session_state["mm_sweep"].final = None  # as if Stop had interrupted the sweep after these rows
    app.button(key="mm_stop").click().run()
    assert not app.exception
    assert "Stopped after 2 of 2 steps" in _text(app)
    assert app.dataframe[0].value["n"].tolist() == [16, 32] and len(app.get("plotly_chart")) == 3


def test_bad_choice_is_an_error_message_not_a_traceback(app, no_gpu):
    app.switch_page(PAGE).run()
    app.multiselect(key="mm_devices").set_value([])
    app.button(key="mm_run").click().run()
    assert not app.exception
    assert "choose at least one device" in app.error[0].value


def test_on_a_server_with_several_gpus_the_default_is_one_gpu_and_the_cpu(app, gpu_model):
    gpu_model("A100-80GB", count=8)
    app.switch_page(PAGE).run()
    assert not app.exception
    assert app.multiselect(key="mm_devices").value == ["cuda:0", "cpu"]
    assert "cuda:7" in app.multiselect(key="mm_devices").options


def test_page_with_fake_gpu_offers_it_and_tf32(app, fake_cuda):
    app.switch_page(PAGE).run()
    assert not app.exception
    assert "cuda:0" in app.multiselect(key="mm_devices").value
    assert not app.radio(key="mm_tf32").disabled
    assert "No GPU here" not in _text(app)
    assert app.multiselect(key="mm_threads").value == [None]  # the cores free when the sweep starts
    assert "bfloat16" in app.multiselect(key="mm_dtypes").options


def test_on_a_t4_the_tf32_choice_is_disabled_with_its_reason(app, gpu_model):
    """Issue 33: "TF32 on" silently timed TF32 off on a T4 while the page still offered it."""
    gpu_model("T4")
    app.switch_page(PAGE).run()
    radio = app.radio(key="mm_tf32")
    assert not app.exception and radio.disabled and "cuda:0 has no TF32 tensor cores" in radio.help


# ---------------------------------------------------------------- the classroom: line, cap, saving (issue 5)


def _values(array) -> list:
    """A plotly JSON array as a list: plain, or typed ({'dtype': 'i2', 'bdata': base64})."""
    if isinstance(array, dict):
        import base64

        import numpy as np

        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def _progress_text(at: AppTest) -> str:
    return " ".join(str(p.proto.text) for p in at.get("progress"))


def test_a_finished_sweep_is_saved_with_its_label_and_overlays_on_results(app, no_gpu):
    cores = os.cpu_count() or 1
    app.switch_page(PAGE).run()
    app.select_slider(key="mm_sizes").set_value((16, 32))
    app.select_slider(key="mm_budget").set_value(0.25)
    app.multiselect(key="mm_threads").set_value(sorted({1, cores}))
    app.text_input(key="mm_label").input("Ana's laptop")
    app.button(key="mm_run").click().run()
    assert not app.exception and not app.error
    assert "Saved as run #1" in _text(app)
    assert not [b for b in app.button if b.key == "mm_save"], "nothing left to save"
    [run] = open_store().list_runs()
    assert run.kind == "matmul" and run.label == "Ana's laptop"
    assert run.payload == app.session_state["mm_sweep"].final.to_json() | {"machine": run.payload["machine"]}
    assert run.settings["threads"] == sorted({1, cores}) and not run.payload["stopped"]

    app.switch_page("pages/results.py").run()
    assert not app.exception
    chart = json.loads(app.get("plotly_chart")[0].proto.spec)
    lines = {t["name"]: _values(t["x"]) for t in chart["data"] if t["name"].startswith("#1 ")}
    expected = {f"float32 {t} thread{'s' if t > 1 else ''}" for t in {1, cores}}  # one line per thread count
    # the CPU's name sits in parentheses and may hold its own: "cpu (Intel(R) Xeon(R) Processor) float32 1 thread"
    assert {name.rsplit(") ", 1)[1].removesuffix(" · Ana's laptop") for name in lines} == expected
    assert all(name.startswith("#1 cpu (") and name.endswith(" · Ana's laptop") for name in lines)
    assert all(x == [16, 32] for x in lines.values()), "one point per size on each line"


def test_a_stopped_sweep_is_saved_only_on_request(app, no_gpu):
    _tiny_run(app)
    open_store().delete(1)
    app.session_state["mm_sweep"].final = None  # as if Stop had interrupted the sweep after these rows
    app.session_state["mm_sweep"].saved_run = None
    app.button(key="mm_stop").click().run()
    assert "an incomplete sweep is saved only on request" in _text(app)
    assert not open_store().list_runs()
    app.button(key="mm_save").click().run()
    assert not app.exception
    [run] = open_store().list_runs()
    assert run.payload["stopped"] and [r["n"] for r in run.payload["results"]] == [16, 32]
    assert "Saved as run #2" in _text(app)


def test_the_per_job_cap_stops_the_sweep_and_keeps_its_rows(app, no_gpu, monkeypatch):
    monkeypatch.setenv("GPU_VS_CPU_MAX_JOB_S", "0.2")
    app.switch_page(PAGE).run()
    app.select_slider(key="mm_sizes").set_value((16, 256))
    app.selectbox(key="mm_per_doubling").set_value(4)
    app.select_slider(key="mm_budget").set_value(0.25)  # each size takes about 0.25 s: the cap hits after one
    app.multiselect(key="mm_threads").set_value([1])
    app.button(key="mm_run").click().run()
    assert not app.exception and not app.error
    final = app.session_state["mm_sweep"].final
    assert final.stopped and 1 <= len(final.results) < 17
    text = _text(app)
    assert "the limit per job" in text and "GPU_VS_CPU_MAX_JOB_S" in text and "Stopped after" in text
    assert "an incomplete sweep is saved only on request" in text and not open_store().list_runs()
    assert len(app.get("plotly_chart")) == 3, "the rows measured before the cap are drawn"


def test_a_sweep_waits_for_a_busy_cpu_and_says_so(app, no_gpu):
    app.switch_page(PAGE).run()
    app.select_slider(key="mm_sizes").set_value((16, 32))
    app.select_slider(key="mm_budget").set_value(0.25)
    app.multiselect(key="mm_threads").set_value([1])
    holder = hold_cpu_for(1.5)
    app.button(key="mm_run").click().run()
    holder.join(10)
    assert not app.exception and not app.error
    assert any(c.value.startswith("Waited ") and c.value.endswith(" s for cpu.") for c in app.caption)
    assert "after waiting" in _progress_text(app) and "for cpu" in _progress_text(app)
    assert [r.n for r in app.session_state["mm_sweep"].final.results] == [16, 32]


def test_sizes_beyond_memory_are_skipped_with_a_message_and_nothing_is_saved(app, no_gpu, monkeypatch):
    app.switch_page(PAGE).run()
    app.select_slider(key="mm_sizes").set_value((16, 32))
    app.multiselect(key="mm_threads").set_value([1])
    monkeypatch.setattr("core.matmul.guards.free_device_bytes", lambda device: 1024)  # memory gone since the page drew
    app.button(key="mm_run").click().run()
    assert not app.exception and not app.error
    text = _text(app)
    assert "Skipped n = 16 on cpu float32 1 thread: n=16 float32 on cpu needs" in text
    assert "choose a smaller size" in text
    assert "Nothing was measured, so nothing was saved" in text and not open_store().list_runs()
    assert not [b for b in app.button if b.key == "mm_save"]


def test_a_gpu_that_vanished_since_the_page_drew_is_a_message(app, fake_cuda, monkeypatch):
    app.switch_page(PAGE).run()
    assert "cuda:0" in app.multiselect(key="mm_devices").value
    app.select_slider(key="mm_sizes").set_value((16, 32)).run()
    fake_cuda.count = 0  # the GPU is gone (driver reset, another process took the MIG slice, ...)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    app.button(key="mm_run").click().run()
    assert not app.exception, app.exception
    text = _text(app)
    assert "No GPU here" in text
    assert app.multiselect(key="mm_devices").value == ["cpu"], "the page offers what is there now"
    assert {r.device for r in app.session_state["mm_sweep"].final.results} == {"cpu"}, "and times only that"


# ---------------------------------------------------------------- verdicts (issue 20)


def _fake_race(monkeypatch, others_cores):
    """1 thread n^3 ns, 2 threads 0.4 ms + n^3/2 ns: 2 threads win from n ~ 93 (between 64 and 128)."""
    import dataclasses
    from core.matmul import sweep
    from tests.matmul.test_sweep import fake_result, per_series

    def one(series, n, options):
        seconds = n**3 / 1e9 if series.threads == 1 else 4e-4 + n**3 / 2e9
        return dataclasses.replace(fake_result(series, n, seconds), others_cores=others_cores)

    monkeypatch.setattr(sweep, "time_interleaved", per_series(one))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


def _race(app: AppTest) -> AppTest:
    app.switch_page(PAGE).run()
    app.select_slider(key="mm_sizes").set_value((32, 512))
    app.multiselect(key="mm_threads").set_value([1, 2])
    return app.button(key="mm_run").click().run()


def test_a_found_crossover_is_green_with_its_interval(app, no_gpu, monkeypatch):
    _fake_race(monkeypatch, others_cores=0.0)
    _race(app)
    assert not app.exception
    (success,) = app.success
    assert "2 threads beats cpu float32 1 thread from a size between n = 64 and n = 128" in success.value
    assert "cannot tell" not in _text(app)
    calls = app.dataframe[0].value
    assert calls["call"].tolist() == ["faster"] * 5 and calls["n"].tolist() == [32, 64, 128, 256, 512]


def test_a_busy_machine_says_cannot_tell_and_no_green_crossover(app, no_gpu, monkeypatch):
    _fake_race(monkeypatch, others_cores=1.0)
    _race(app)
    assert not app.exception and not app.success
    assert any(w.value.startswith("**Comparison:** cannot tell on a machine this busy") for w in app.warning)
    assert "wins from" not in _text(app) and "beats cpu" not in _text(app)
    calls = app.dataframe[0].value
    assert set(calls["call"]) == {"unclear"} and set(calls["why unclear"]) == {"machine busy"}


def test_free_cores_equal_to_one_thread_is_said_not_raced(app, no_gpu, monkeypatch):
    from core.platform import jobs
    from core.results.load import MachineLoad
    _fake_race(monkeypatch, others_cores=0.0)
    monkeypatch.setattr(jobs, "probe_load", lambda **k: MachineLoad(cores=2, others_cores=1.0, free_cores=1, busy=True))
    app.switch_page(PAGE).run()
    app.select_slider(key="mm_sizes").set_value((32, 64))
    app.multiselect(key="mm_threads").set_value([1, None])
    app.button(key="mm_run").click().run()
    assert not app.exception
    assert any("not a race against itself" in i.value for i in app.info)
    assert {r.series for r in app.session_state["mm_sweep"].result().results} == {"cpu float32 1 thread"}


def test_the_cache_switch_times_cold_and_the_charts_say_so(app, no_gpu):
    app.switch_page(PAGE).run()
    assert app.radio(key="mm_cache").value == "warm"  # as before the switch existed
    app.radio(key="mm_cache").set_value("cold")
    _tiny_run(app)
    assert not app.exception and not app.error
    final = app.session_state["mm_sweep"].final
    assert final.cache == "cold" and all(r.calls_per_block == 1 for r in final.results)  # one call per flushed sample
    time_chart = app.get("plotly_chart")[0]
    assert "cold cache: evicted before each call" in time_chart.proto.spec


def _tiny_settings(app: AppTest, label: str, guess: str) -> AppTest:
    app.switch_page(PAGE).run()
    app.select_slider(key="mm_sizes").set_value((16, 32))
    app.select_slider(key="mm_budget").set_value(0.25)
    app.multiselect(key="mm_threads").set_value([1])
    app.text_input(key="mm_label").input(label)
    app.text_input(key="mm_guess").input(guess)
    # AppTest's runtime is one per process and goes when either session's run ends: the owner token set now
    # keeps the save from reading the browser's cookie through it while the other session still runs
    app.session_state[OWNER_TOKEN] = new_owner_token()
    return app


def _two_sessions(button: str) -> tuple[AppTest, AppTest]:
    """Session A presses Run while the CPU is busy (its race waits in line); session B then presses `button`."""
    from core.platform.shared_jobs import SHARED_JOBS
    from tests.lock_helpers import wait_until

    first = _tiny_settings(AppTest.from_file(str(ROOT_APP), default_timeout=120), "Ana", "32")
    second = _tiny_settings(AppTest.from_file(str(ROOT_APP), default_timeout=120), "Ben", "no crossover")
    holder = hold_cpu_for(1.5)
    runner = threading.Thread(target=lambda: first.button(key="mm_run").click().run())
    runner.start()
    wait_until(lambda: SHARED_JOBS.active())
    second.button(key=button).click().run()
    runner.join(60)
    holder.join(10)
    assert not first.exception and not second.exception and not first.error and not second.error
    return first, second


def test_a_second_session_joins_the_race_and_both_save_the_same_measurement(no_gpu):
    first, second = _two_sessions("mm_run")
    a, b = first.session_state["mm_sweep"].final, second.session_state["mm_sweep"].final
    assert [p.times_s for p in a.results] == [p.times_s for p in b.results], "one measurement, not two"
    assert a.shared.race == b.shared.race and a.shared.watchers == b.shared.watchers == 2
    assert (a.shared.joined, b.shared.joined) == (False, True)
    assert "you joined it" in _progress_text(second) and "you started it" in _progress_text(first)
    runs = {r.label: r for r in open_store().list_runs()}
    assert set(runs) == {"Ana", "Ben"}, "credited to each session under its own name"
    assert runs["Ana"].result.guess.value == 32 and runs["Ben"].result.guess.what == "no_crossover"
    assert runs["Ana"].payload["shared"]["race"] == runs["Ben"].payload["shared"]["race"]


def test_the_sessions_of_a_shared_race_draw_figures_built_once(no_gpu, monkeypatch):
    """Sixty students building the same three figures took ~40 % of the server's CPU after a race (issue 31)."""
    from pages.shared import race_views

    built: list[int] = []
    real = race_views._figures
    monkeypatch.setattr(race_views, "_figures", lambda frame, shown: built.append(1) or real(frame, shown))
    first, second = _two_sessions("mm_run")
    assert built == [1], "built once for both sessions"
    assert [c.proto.spec for c in first.get("plotly_chart")] == [c.proto.spec for c in second.get("plotly_chart")]
    assert len(first.get("plotly_chart")) == 3


def test_run_my_own_waits_its_turn_for_a_race_of_its_own(no_gpu):
    first, second = _two_sessions("mm_run_own")
    a, b = first.session_state["mm_sweep"].final, second.session_state["mm_sweep"].final
    assert a.shared is None and b.shared is None, "two races, each watched alone"
    assert [p.times_s for p in a.results] != [p.times_s for p in b.results]
    assert "after waiting" in _progress_text(second)
    assert len(open_store().list_runs()) == 2


# ---------------------------------------------------------------- "cannot tell": what the class can do (issue 31)


def test_a_cannot_tell_run_shows_the_earlier_clear_result_with_its_age_and_what_the_class_can_do(
        app, no_gpu, monkeypatch):
    from datetime import timedelta

    from core.matmul import cannot_tell
    from core.platform import jobs
    from core.results.load import MachineLoad

    monkeypatch.setattr(jobs, "probe_load", lambda **k: MachineLoad(cores=2, others_cores=0.0, free_cores=2,
                                                                    busy=False))  # quiet as it starts
    _fake_race(monkeypatch, others_cores=0.0)  # a quiet machine: a clear race, saved as run #1
    _race(app)
    assert not app.exception and app.success and "Earlier" not in _text(app)
    assert "What the class can do" not in _text(app)
    [first] = open_store().list_runs()
    measured = first.created_at[11:16]
    later = cannot_tell.utc_now() + timedelta(minutes=42)
    monkeypatch.setattr(cannot_tell, "utc_now", lambda: later)
    _fake_race(monkeypatch, others_cores=1.0)  # the same race on a busy machine, 42 minutes later
    app.button(key="mm_run").click().run()
    assert not app.exception and not app.success
    text = _text(app)
    assert any(w.value.startswith("**Comparison:** cannot tell on a machine this busy") for w in app.warning)
    [earlier] = [i.value for i in app.info if i.value.startswith("**Earlier, on this machine with these settings:**")]
    assert f"measured {measured} UTC on a quiet machine, 42 min ago: " in earlier
    assert ("cpu float32 2 threads beats cpu float32 1 thread from a size between n = 64 and n = 128 on "
            "(run #1 on Results)") in earlier
    assert "Measure for the class" in text  # the instructor's measurement for the room, in words
    assert "[Race on your laptop](laptop_race)" in text and "[Results: import a Colab run](results)" in text
    assert len(open_store().list_runs()) == 2  # the busy run is saved too, and is not what is shown as earlier


def test_no_earlier_result_from_other_settings(app, no_gpu, monkeypatch):
    _fake_race(monkeypatch, others_cores=0.0)
    _race(app)
    _fake_race(monkeypatch, others_cores=1.0)
    app.select_slider(key="mm_sizes").set_value((32, 256))  # other sizes: another race
    app.button(key="mm_run").click().run()
    assert not app.exception and "cannot tell" in _text(app)
    assert "Earlier" not in _text(app) and "What the class can do" in _text(app)
