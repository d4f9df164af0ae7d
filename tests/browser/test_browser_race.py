"""The race in the browser, server side: the untrusted payload checked, the run judged by the race's rules,
saved as kind "browser" with its provenance, and on Results' tables and the Class board."""

from __future__ import annotations

import copy
import json
import math

import pytest

from core.browser.judge import Inbox, browser_name, judged, rejudged
from core.browser.payload import MAX_PAYLOAD_CHARS, check_payload
from core.browser.story import dispatch_line, gpu_line
from core.errors import DashboardError
from core.results.browser import F16_SERIES, GPU_SERIES, SOFTWARE, SPLIT_SERIES, BrowserRun
from core.results.guess import parse_matmul_guess
from core.results.kinds import detect_kind, read_result
from core.results.runs import BROWSER
from core.store.access import Owner
from core.store.class_board import crossover_spread, refresh, room_hardware
from core.store.database import open_store
from core.store.frames import kind_frame

UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36"
SWIFTSHADER = {"vendor": "google", "architecture": "swiftshader", "device": "", "description": "", "fallback": True,
               "limits": {"maxBufferSize": 268435456}, "features": ["timestamp-query"]}
REAL_GPU = {"vendor": "nvidia", "architecture": "ampere", "fallback": False, "features": ["shader-f16"]}
GPU_MS, CPU1_MS, CPU4_MS = {64: 2.0, 128: 2.2, 256: 3.0, 512: 8.0}, 50.0, 15.0


def _times(n: int, ms_at_512: float, fixed_ms: float = 0.0) -> list[float]:
    """Five samples around (fixed + n³ scaled) ms, a 1 % spread."""
    base = (fixed_ms + ms_at_512 * (n / 512) ** 3) / 1e3
    return [base * (1 + 0.01 * i) for i in range(5)]


def payload(adapter: dict | None = SWIFTSHADER, run_id: str = "run-0123456789", sizes=(64, 128, 256, 512)) -> dict:
    """What race.js sends: raw samples of WebGPU and 1 and 4 workers (the GPU slow to start, fast for large n),
    at n = 256 the GPU's product split into 16 dependent dispatches, and f16 where the adapter offers it."""
    points = []
    for n in sizes:
        if adapter is not None:
            points.append({"series": GPU_SERIES, "n": n, "times_s": _times(n, 0.5, fixed_ms=2.0), "reps": 4,
                           "unawaited_s": 2e-5, "rel_error": 3e-7, "timestamp_s": _times(n, 0.45, fixed_ms=1.5)})
            if "shader-f16" in adapter.get("features", ()):
                points.append({"series": F16_SERIES, "n": n, "times_s": _times(n, 0.3, fixed_ms=2.0), "reps": 4,
                               "rel_error": 4e-3})
            if n == 256:
                points.append({"series": SPLIT_SERIES, "n": n, "times_s": _times(n, 0.5, fixed_ms=2.0 * 16),
                               "reps": 2, "rel_error": 3e-7, "dispatches": 16})
        points.append({"series": "wasm 1 worker", "n": n, "times_s": _times(n, CPU1_MS), "reps": 2})
        points.append({"series": "wasm 4 workers", "n": n, "times_s": _times(n, CPU4_MS), "reps": 2})
    return {"run_id": run_id, "user_agent": UA, "cores": 8, "workers": 4, "secure": True,
            "gpu": "ok" if adapter is not None else "no_adapter", "adapter": adapter, "points": points,
            "stopped": False}


def test_statistics_verdicts_and_crossover_are_the_servers():
    run = judged(payload())
    gpu = next(p for p in run.points if p.series == GPU_SERIES and p.n == 512)
    assert gpu.median_s == pytest.approx(sorted(_times(512, 0.5, 2.0))[2])
    assert gpu.gflops == pytest.approx(2 * 512**3 / gpu.median_s / 1e9)
    assert gpu.timestamp_median_s == pytest.approx(sorted(_times(512, 0.45, 1.5))[2])
    assert run.crossovers[0].challenger == GPU_SERIES and run.crossovers[0].baseline == "wasm 4 workers"
    head = run.headline_crossover
    assert head is not None and head.call == "found" and head.n_low is not None and head.n_low < head.n_high
    assert {v.call for v in run.verdicts} <= {"faster", "same", "unclear"}
    assert any(v.call == "faster" and v.a == "wasm 4 workers" and v.n == 64 for v in run.verdicts)


def test_software_adapter_is_labelled_and_never_a_gpu_in_the_room(tmp_path):
    run = judged(payload())
    assert run.software and SOFTWARE in run.headline
    assert run.machine.gpus == ()  # the room counts no GPU for it
    store = open_store(f"sqlite:///{tmp_path / 'r.sqlite3'}")
    store.save(run, label="Ana", owner=Owner(source=BROWSER))
    board = refresh(store)
    assert all(h.name == "no GPU" for h in room_hardware(board) if h.kind == "GPU")
    assert crossover_spread(board).measured  # the board reads its crossover like a sweep's
    [saved] = store.list_runs()
    assert saved.provenance.source == BROWSER == "reported by a browser"
    table = kind_frame("browser", [saved])
    assert any(SOFTWARE in s for s in table["series"]) and set(table["device"]) == {"webgpu", "cpu"}


def test_a_real_gpu_counts_in_the_room(tmp_path):
    run = judged(payload(REAL_GPU))
    assert not run.software and run.machine.gpus[0].name == "WebGPU: nvidia ampere"


def test_the_saved_json_reads_back_and_its_statistics_come_from_the_samples():
    run = judged(payload(), guess=parse_matmul_guess("300"))
    data = json.loads(json.dumps(run.to_json()))
    assert detect_kind(data) == "browser"
    data["points"][0]["median_s"] = 1e-12  # an edited file: its statistic is not read, the samples are
    back = read_result("browser", data)
    assert back == run and isinstance(back, BrowserRun) and back.guess is not None


def test_cpu_half_alone_is_judged_and_says_why():
    run = judged(payload(adapter=None))
    assert run.series == ["wasm 1 worker", "wasm 4 workers"] and run.gpu == "no_adapter"
    assert "CPU only: no usable GPU adapter" in run.headline


def test_the_inbox_takes_a_run_once_across_reruns():
    inbox = Inbox()
    first = payload()
    assert inbox.take(first) is not None
    assert inbox.take(copy.deepcopy(first)) is None  # the component hands the same value back on every rerun
    assert inbox.take(payload(run_id="run-another-123")) is not None


def _forged(change) -> dict:
    p = payload()
    change(p)
    return p


@pytest.mark.parametrize("change, words", [
    (lambda p: p["points"][0]["times_s"].__setitem__(0, -0.001), "positive, finite"),
    (lambda p: p["points"][0]["times_s"].__setitem__(1, math.nan), "positive, finite"),
    (lambda p: p["points"][0]["times_s"].__setitem__(1, None), "positive, finite"),
    (lambda p: p["points"][1]["times_s"].__setitem__(slice(None), [1e-9] * 5), "can reach"),
    (lambda p: p["points"][0].__setitem__("times_s", [1e-9] * 5), "can reach"),  # a software adapter's ceiling
    (lambda p: p["points"][0].__setitem__("gflops", 9999.0), "2n³ / median"),
    (lambda p: p["points"][0]["timestamp_s"].__setitem__(0, -1.0), "positive, finite"),
    (lambda p: p["points"][1].__setitem__("timestamp_s", [0.01] * 5), "one per sample"),
    (lambda p: p["points"][0].__setitem__("times_s", [0.01, 0.01]), "3 to 200 samples"),
    (lambda p: p["points"][0].__setitem__("rel_error", 0.5), "a wrong result is not timed"),
    (lambda p: p.__setitem__("verdicts", [{"n": 64, "call": "faster"}]), "measurements only"),
    (lambda p: p.__setitem__("provenance", "measured"), "measurements only"),
    (lambda p: p["points"][0].__setitem__("median_s", 1e-9), "measurements only"),
    (lambda p: p.__setitem__("padding", "x" * (10 * 2**20)), "characters"),
    (lambda p: p["points"][0].__setitem__("series", "cuda:0 float32"), "series must be one of"),
    (lambda p: p.__setitem__("run_id", "../../etc"), "run_id"),
    (lambda p: p["points"].append({**p["points"][0], "series": F16_SERIES}), "series must be one of"),  # no f16
    (lambda p: p["points"][7].__setitem__("dispatches", 17), "dispatches must be a whole number from 2 to 16"),
    (lambda p: p["points"][7].pop("dispatches"), "dispatches must be a whole number"),
    (lambda p: p["points"][0].__setitem__("dispatches", 4), "belongs to a webgpu split dispatches point only"),
    (lambda p: p["points"][7].__setitem__("rel_error", 0.01), "a wrong result is not timed"),
    (lambda p: p["points"][7].__setitem__("times_s", [1e-9] * 5), "(software adapter) can reach"),
])
def test_forged_payloads_are_refused_in_one_line_and_nothing_is_saved(tmp_path, change, words):
    store = open_store(f"sqlite:///{tmp_path / 'r.sqlite3'}")
    with pytest.raises(DashboardError) as caught:
        run = judged(_forged(change))
        store.save(run)
    message = str(caught.value)
    assert words in message and "\n" not in message and message.startswith("refused the browser's run")
    assert store.list_runs() == []


def test_a_ten_megabyte_payload_is_refused_before_its_points_are_read():
    with pytest.raises(DashboardError, match=f"more than the {MAX_PAYLOAD_CHARS:,}"):
        check_payload({"points": ["x" * (10 * 2**20)]})


def test_browser_names():
    assert browser_name(UA) == "Chrome 140 on Linux"
    assert browser_name("Mozilla/5.0 (Windows NT 10.0) Gecko/20100101 Firefox/141.0") == "Firefox 141 on Windows"
    assert browser_name("curl/8") == "a browser"


def test_an_edited_files_verdicts_are_judged_again_from_its_samples():
    run = judged(payload())
    data = json.loads(json.dumps(run.to_json()))
    for v in data["verdicts"]:
        v["call"] = "same"  # an edited export
    data["crossovers"] = []
    edited = read_result("browser", data)
    assert isinstance(edited, BrowserRun) and edited != run
    assert rejudged(edited) == run


def test_submit_alone_may_be_under_one_clock_step():
    p = payload()
    p["points"][0]["unawaited_s"] = 0.0  # performance.now() did not move during submit()
    assert judged(p).points[0].unawaited_s == 0.0


def test_a_field_the_types_refuse_is_a_one_line_refusal_too():
    p = payload()
    p["adapter"] = {**SWIFTSHADER, "features": ["x" * 300]}
    with pytest.raises(DashboardError) as caught:
        judged(p)
    assert str(caught.value).startswith("refused the browser's run") and "\n" not in str(caught.value)


def test_exported_and_imported_elsewhere_it_is_the_same_run(tmp_path):
    here = open_store(f"sqlite:///{tmp_path / 'here.sqlite3'}")
    run = judged(payload())
    here.save(run, label="Ana", owner=Owner(source=BROWSER))
    there = open_store(f"sqlite:///{tmp_path / 'there.sqlite3'}")
    there.import_json(here.export_json())
    (imported,) = there.list_runs(kind="browser")
    assert imported.result == run and imported.provenance.origin == BROWSER
    assert "run_id" in there.export_csv().decode().splitlines()[0]


def test_an_import_whose_verdicts_its_samples_do_not_give_is_refused(tmp_path):
    here = open_store(f"sqlite:///{tmp_path / 'here.sqlite3'}")
    run = judged(payload())
    here.save(run, owner=Owner(source=BROWSER))
    export = json.loads(here.export_json())
    for v in export["runs"][0]["payload"]["verdicts"]:
        v["call"] = "same"
    there = open_store(f"sqlite:///{tmp_path / 'there.sqlite3'}")
    with pytest.raises(DashboardError, match="not what its own samples give"):
        there.import_json(json.dumps(export).encode())
    assert there.list_runs() == []


def _f16_run(f16_error: float = 4e-3) -> dict:
    p = payload({**SWIFTSHADER, "features": ["shader-f16", "timestamp-query"]})
    for point in p["points"]:
        if point["series"] == F16_SERIES:
            point["rel_error"] = f16_error
    return p


def test_f16_is_taken_from_an_adapter_that_offers_it_with_its_own_tolerance():
    run = judged(_f16_run())
    assert F16_SERIES in run.series and all(p.is_gpu for p in run.points if p.series == F16_SERIES)
    assert any({v.a, v.b} == {F16_SERIES, GPU_SERIES} for v in run.verdicts)  # the server compares f16 with fp32
    with pytest.raises(DashboardError, match=r"differs by 0\.05 .*at most 0\.02"):
        judged(_f16_run(0.05))  # f16's tolerance, not float32's 1e-3, and not a wrong kernel's ~1


def test_one_dispatch_against_many_is_the_servers_ratio_and_sentence():
    run = judged(payload())
    (split,) = [p for p in run.points if p.series == SPLIT_SERIES]
    assert split.dispatches == 16 and split.n == 256 and split.is_gpu
    line = dispatch_line(run)
    assert line is not None and line.box == "success", line
    one = next(p for p in run.points if p.series == GPU_SERIES and p.n == 256)
    ratio = split.median_s / one.median_s
    assert f"{ratio:.3g}× as long" in line.text and "16 small dependent ones" in line.text
    same = payload()
    assert same["points"][7]["series"] == SPLIT_SERIES and same["points"][6]["series"] == GPU_SERIES
    same["points"][7]["times_s"] = list(same["points"][6]["times_s"])  # 16 dispatches as fast as one
    line = dispatch_line(judged(same))
    assert line is not None and "the same within 5 %" in line.text
    no_split = payload(sizes=(64, 128))
    assert dispatch_line(judged(no_split)) is None


def test_a_lost_device_keeps_the_finished_sizes_and_says_so():
    p = payload(sizes=(64, 128))
    p["points"] = [q for q in p["points"] if not (q["series"] == GPU_SERIES and q["n"] == 128)]
    p["gpu"], p["gpu_note"] = "lost", "The GPU device was lost (a driver reset); kept (Device was destroyed.)"
    run = judged(p)
    line = gpu_line(run)
    assert run.gpu == "lost" and line is not None and line.box == "warning" and "Device was destroyed" in line.text
    assert {q.n for q in run.points if q.is_gpu} == {64} and {q.n for q in run.points if not q.is_gpu} == {64, 128}


@pytest.mark.parametrize("change, words", [
    (lambda p: p.__setitem__("adapter", {**p["adapter"], "features": [{"shader-f16": True}]}), "list of feature names"),
    (lambda p: p.__setitem__("adapter", {**p["adapter"], "features": [["shader-f16"]]}), "list of feature names"),
    (lambda p: p.__setitem__("adapter", {**p["adapter"], "features": "shader-f16"}), "list of feature names"),
    (lambda p: p["points"][0]["times_s"].__setitem__(0, 10**400), "positive, finite"),  # JSON allows the digits
    (lambda p: p["points"][0]["timestamp_s"].__setitem__(0, 10**400), "positive, finite"),
    (lambda p: p["points"][0].__setitem__("unawaited_s", 10**400), "positive, finite"),
    (lambda p: p["points"][0].__setitem__("gflops", 10**400), "2n³ / median"),
    (lambda p: p["points"][0].__setitem__("rel_error", 10**400), "a number >= 0"),
    (lambda p: p["points"].append({**p["points"][7], "n": 128, "dispatches": 8}), "a second webgpu split"),
    (lambda p: p["points"].append({"series": "wasm 1 worker", "n": 100, "times_s": [1.0] * 3}),
     "n = 100 is not one of the sizes the page offers"),
])
def test_a_hostile_payload_is_a_one_line_refusal_not_a_crash(change, words):
    """Found in the hostile pass: an unhashable feature was a TypeError and a 400-digit number an OverflowError
    (the page's traceback, not a line); a split point per size and any number of sizes were taken."""
    with pytest.raises(DashboardError) as caught:
        judged(_forged(change))
    assert words in str(caught.value) and str(caught.value).startswith("refused the browser's run")


def test_a_payload_of_many_sizes_is_refused_before_it_is_judged():
    """The judge bootstraps every size of every pair (~14 ms each): 296 points at made-up sizes took 4.2 s of
    the server's CPU per payload. The page's sizes only, and at most MAX_SIZES for any caller."""
    many = _forged(lambda p: p["points"].extend({"series": "wasm 1 worker", "n": n, "times_s": [1.0] * 3}
                                                for n in range(1, 10)))
    with pytest.raises(DashboardError, match="more than 8 sizes in one run"):
        check_payload(many)
    with pytest.raises(DashboardError, match="is not one of the sizes the page offers"):
        judged(many)
    settings = {"sizes": [64, 128], "budget_s": 2.0, "workers": 4, "gpu": True}  # changed while the browser ran
    assert judged(payload(), settings=settings).settings["sizes"] == [64, 128]
