"""The Class board's store reads (only what changed), its grouping, spreads and hardware; its figures; its page."""

from __future__ import annotations

import copy
from dataclasses import asdict
import json
from datetime import datetime, timezone

import pytest

from core.charts.class_board import NO_GPU_COLOR, hardware_figure, spread_figure
from core.store.database import open_store
from core.store.class_board import (
    ClassBoard, changed, crossover_spread, epoch_spread, grouped_rows, refresh, room_hardware, speedup_spread,
)
from core.store.access import owner_hash, session_mark
from tests.result_samples import LAB, LAPTOP, as_saved, matmul_payload, train_payload, save_payload


def _matmul(machine=LAB, guess=None, crossover=None, sizes=(256, 1024, 4096)) -> dict:
    payload = matmul_payload(machine, sizes)
    if guess is not None:
        payload["guess"] = guess
    if crossover is not None:
        payload["crossover"] = crossover
    return payload


def _train(device="cpu", seconds=4.0, guess=None, machine=LAB) -> dict:
    payload = train_payload(device, seconds=seconds)
    payload["preset"] = "minibatch"
    if guess is not None:
        payload["guess"] = guess
    return payload


class CountingStore:
    """The real store, counting the listing rows each read returns (the cost of a refresh) and the runs read
    in full (payloads decoded: only those the board charts)."""

    def __init__(self, store):
        self.store, self.rows_read, self.reads, self.decoded = store, 0, 0, 0

    def version(self):
        return self.store.version()

    def read_summaries(self, *args, **kwargs):
        listing = self.store.read_summaries(*args, **kwargs)
        self.reads += 1
        self.rows_read += len(listing.runs) + len(listing.unreadable)
        return listing

    def read_runs(self, **kwargs):
        listing = self.store.read_runs(**kwargs)
        self.decoded += len(listing.runs) + len(listing.unreadable)
        return listing


def test_refresh_reads_nothing_when_nothing_changed_and_only_the_new_runs_after_a_save():
    store = open_store()
    save_payload(store, "matmul", _matmul(), label="Ana")
    counting = CountingStore(store)
    board = refresh(counting, None)
    assert [r.label for r in board.runs] == ["Ana"] and counting.rows_read == 1
    assert refresh(counting, board) is board and counting.reads == 1  # unchanged: the version query only
    assert not changed(store, board)
    save_payload(store, "train", _train(), label="Ben")
    save_payload(store, "matmul", _matmul(LAPTOP), label="Cy")
    assert changed(store, board)
    newer = refresh(counting, board)
    assert [r.label for r in newer.runs] == ["Cy", "Ben", "Ana"]  # newest first
    assert counting.rows_read == 3 and newer.reads == 3  # the two new rows, not all three again


def test_a_delete_rereads_the_board():
    store = open_store()
    first = save_payload(store, "matmul", _matmul(), label="Ana")
    board = refresh(store)
    store.delete(first)
    save_payload(store, "matmul", _matmul(), label="Ben")  # same count, higher id: still a reread
    assert [r.label for r in refresh(store, board).runs] == ["Ben"]


def test_rows_are_grouped_by_name_or_machine_newest_group_first():
    store = open_store()
    save_payload(store, "matmul", _matmul(), label="Ana")
    save_payload(store, "matmul", _matmul(LAPTOP))  # no name: grouped by its machine
    save_payload(store, "train", _train(guess={"what": "epoch_s", "value": 2.0, "text": "2 s"}), label="Ana")
    rows = grouped_rows(refresh(store))
    assert [(r.who, r.kind) for r in rows] == [("Ana · server", "train"), ("Ana · server", "matmul"),
                                               ("machine: Student Laptop CPU i5", "matmul")]
    assert rows[0].guess == "2 s" and rows[1].guess == "" and "accuracy" in rows[0].result


def test_a_size_a_run_skipped_is_named_in_its_row():
    """Issue 31, item 5: 'n 256–1024' beside 'n 256–4096' on the board must say which sizes were not timed."""
    store = open_store()
    skipped = _matmul(LAPTOP, sizes=(256, 1024))
    skipped["skipped"] = [{"device": "cpu", "n": 4096, "dtype": "float32", "series": "cpu float32", "reason": "time",
                           "message": "left out before timing: about 6 s per product"}]
    save_payload(store, "matmul", skipped, label="Ben")
    save_payload(store, "matmul", _matmul(LAPTOP), label="Ana")
    rows = {r.who.split(" · ")[0]: r.result for r in grouped_rows(refresh(store))}
    assert rows["Ben"].startswith("n 256–1024 (skipped 4096: time budget), ")
    assert rows["Ana"].startswith("n 256–4096, ") and "skipped" not in rows["Ana"]


def test_two_sessions_typing_one_name_and_a_name_equal_to_a_machine_are_told_apart():
    """Issue 30: two sessions saving as "Ana", or a name equal to a machine's, merged into one group."""
    store = open_store()
    save_payload(store, "matmul", _matmul(), label="Ana", owner_token="ana's session")
    save_payload(store, "matmul", _matmul(), label="Ana", owner_token="a classmate")
    save_payload(store, "matmul", _matmul(), label="Ana", owner_token="ana's session")
    save_payload(store, "matmul", _matmul(LAPTOP))  # no name: its machine's group
    save_payload(store, "matmul", _matmul(), label="Student Laptop CPU i5", owner_token="a classmate")
    rows = grouped_rows(refresh(store))
    groups = list(dict.fromkeys(r.who for r in rows))
    ana, other = session_mark(owner_hash("ana's session")), session_mark(owner_hash("a classmate"))
    assert ana != other and len(ana) == 6
    assert groups == [f"Student Laptop CPU i5 · {other}", "machine: Student Laptop CPU i5", f"Ana · {ana}",
                      f"Ana · {other}"]
    assert [r.who for r in rows].count(f"Ana · {ana}") == 2
    assert session_mark(owner_hash("ana's session")) not in owner_hash("ana's session"), "the mark is not the hash"


def test_an_imported_run_says_so_and_arrives_by_the_servers_clock():
    """Issue 30: the board did not say a run was imported, and showed the time the file claimed."""
    store = open_store()
    before = datetime.now(timezone.utc)
    claimed = {"uid": "claims-a-time", "kind": "matmul", "created_at": "2020-01-01T03:33:00Z", "label": "Ana",
               "machine": LAB, "settings": {}, "versions": {}, "payload": as_saved("matmul", _matmul())}
    store.import_json(json.dumps(claimed).encode(), file="old.json", owner_token="ana")
    save_payload(store, "matmul", _matmul(), label="Ana", owner_token="ana")
    after = datetime.now(timezone.utc)
    measured, imported = grouped_rows(refresh(store))
    assert (imported.source, measured.source) == ("imported", "measured")
    assert imported.when != "03:33" and imported.when in {f"{before:%H:%M}", f"{after:%H:%M}"}
    assert refresh(store).runs[1].created_at == "2020-01-01T03:33:00Z", "the claim is kept, only not shown as arrival"


def test_an_imported_runs_measurement_is_drawn_open_and_counted_in_the_legend():
    store = open_store()
    found = {"a": "cuda:0 float32", "b": "cpu float32", "n_low": 256, "n_high": 512, "call": "found"}
    save_payload(store, "matmul", _matmul(crossover=found))
    store.import_json(json.dumps(as_saved("matmul", _matmul(crossover=found))).encode(), file="x.json")
    save_payload(store, "train", _train("cpu", 4.0), machine=LAB)
    gpu = {"uid": "gpu-run", "kind": "train", "created_at": "2025-01-01T00:00:00Z", "label": "", "machine": LAB,
           "settings": {}, "versions": {}, "payload": as_saved("train", _train("cuda:0", 0.5))}
    store.import_json(json.dumps(gpu).encode(), file="y.json")
    board = refresh(store)
    spread = crossover_spread(board)
    assert spread.measured_imported == [True, False]
    fig = spread_figure(spread, title="t", x_title="n")
    measured = next(t for t in fig.data if t.name.startswith("measured ("))
    assert list(measured.marker.symbol) == ["diamond-open", "diamond"]
    assert fig.data[-1].name == "1 of them imported (open)"
    assert epoch_spread(board).measured_imported == [True, False]
    assert speedup_spread(board).measured_imported == [True], "a speed-up from an imported GPU run is imported"


def test_an_older_board_gets_arrival_times_from_what_it_recorded(tmp_path):
    """Schema 5: a measured run's own time was the server's at its save; an imported one's, its provenance's."""
    from core.store import database

    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    with pytest.MonkeyPatch.context() as schema_4:
        schema_4.setattr(database, "MIGRATIONS", database.MIGRATIONS[:4])
        schema_4.setattr(database, "SCHEMA_VERSION", 4)
        old = open_store(url)
        with old._transaction() as tx:  # what schema 4's insert wrote
            for uid, source, provenance in (
                    ("m", "measured", None),
                    ("i", "imported", '{"source": "imported", "imported_at": "2025-03-04T10:11:00Z"}'),
                    ("x", "imported", "{not json")):
                tx.run("INSERT INTO gvc_runs (uid, kind, created_at, label, machine_label, machine_json, "
                       "settings_json, versions_json, payload_json, provenance_json, source, sort_at) VALUES "
                       "(?, 'matmul', '2025-01-01T08:09:00Z', '', 'm', ?, '{}', '{}', ?, ?, ?, '')",
                       (uid, json.dumps(LAB), json.dumps(_matmul()), provenance, source))
    store = open_store(url)
    with store._transaction(write=False) as tx:
        assert dict(tx.run("SELECT uid, stored_at FROM gvc_runs")) == {
            "m": "2025-01-01T08:09:00Z", "i": "2025-03-04T10:11:00Z", "x": ""}
    assert sorted(r.stored_at for r in store.read_summaries().runs) == ["2025-01-01T08:09:00Z", "2025-03-04T10:11:00Z"]


def test_spreads_put_guesses_beside_what_was_measured():
    store = open_store()
    found = {"a": "cuda:0 float32", "b": "cpu float32", "n_low": 256, "n_high": 512, "call": "found"}
    save_payload(store, "matmul", _matmul(guess={"what": "crossover_n", "value": 1000.0, "text": "1000"},
                                          crossover=found))
    save_payload(store, "matmul", _matmul(guess={"what": "no_crossover", "text": "none"},
                                 crossover={"a": "x", "b": "y", "call": "none"}))
    save_payload(store, "train", _train("cpu", 4.0, guess={"what": "speedup", "value": 10.0, "text": "10x"}))
    save_payload(store, "train", _train("cuda:0", 0.5))
    board = refresh(store)
    crossover = crossover_spread(board)
    assert crossover.guessed == [1000.0] and crossover.none_guessed == 1
    # measured at the size the race page and Results name (crossover_n 300, inside the interval)
    assert crossover.measured == [300.0] and crossover.intervals == [(256.0, 512.0)] and crossover.none_measured == 1
    speedup = speedup_spread(board)
    assert speedup.guessed == [10.0] and speedup.measured == [pytest.approx(8.0)]
    assert sorted(epoch_spread(board).measured) == [0.5, 4.0]


def test_copies_of_one_shared_race_count_as_one_measurement_and_every_guess():
    store = open_store()
    found = {"a": "cuda:0 float32", "b": "cpu float32", "n_low": 256, "n_high": 512, "call": "found"}
    for name, guess, joined in (("Ana", "1000", False), ("Ben", "500", True), ("Cy", "800", True)):
        payload = _matmul(guess={"what": "crossover_n", "value": float(guess), "text": guess}, crossover=found)
        payload["shared"] = {"race": "r1", "watchers": 3, "joined": joined}
        save_payload(store, "matmul", payload, label=name)
    save_payload(store, "matmul", _matmul(crossover=found), label="Dee")  # a race of its own
    board = refresh(store)
    spread = crossover_spread(board)
    assert sorted(spread.guessed) == [500.0, 800.0, 1000.0], "each joiner's guess counts"
    assert spread.measured == [300.0, 300.0], "the shared race once, the race of its own once"
    rows = {r.who.split(" · ")[0]: r.result for r in grouped_rows(board)}
    assert set(rows) == {"Ana", "Ben", "Cy", "Dee"}, "each credited under its name"
    assert all(rows[name].endswith(" · one race shared by 3") for name in ("Ana", "Ben", "Cy"))
    assert "shared" not in rows["Dee"]


def test_room_hardware_counts_each_machine_once():
    store = open_store()
    for machine in (LAB, LAB, LAPTOP):
        save_payload(store, "matmul", _matmul(copy.deepcopy(machine)))
    hardware = {(h.kind, h.name): h.machines for h in room_hardware(refresh(store))}
    assert hardware == {("CPU", "Lab Xeon 8480C"): 1, ("CPU", "Student Laptop CPU i5"): 1,
                        ("GPU", "NVIDIA H200"): 1, ("GPU", "no GPU"): 1}


def test_figures_draw_guesses_measurements_and_hardware():
    store = open_store()
    found = {"a": "cuda:0 float32", "b": "cpu float32", "n_low": 256, "n_high": 512, "call": "found"}
    save_payload(store, "matmul", _matmul(guess={"what": "crossover_n", "value": 1000.0, "text": "1000"},
                                          crossover=found))
    board = refresh(store)
    fig = spread_figure(crossover_spread(board), title="t", x_title="n")
    assert list(fig.data[0].x) == [1000.0] and list(fig.data[-1].x) == [300.0]  # the sweep's n≈300, in (256, 512]
    assert fig.layout.xaxis.type == "log" and any("median 300" in a.text for a in fig.layout.annotations)
    bars = hardware_figure(room_hardware(board))
    assert list(bars.data[0].y) == ["CPU: Lab Xeon 8480C", "GPU: NVIDIA H200"]
    empty = spread_figure(crossover_spread(ClassBoard()), title="t", x_title="n")
    assert empty.layout.xaxis.type == "log"


def test_guess_dots_are_named_by_who_guessed_and_no_gpu_is_not_a_red_bar():
    """Issue 34: hover said "(2,000, 0.88)" and "GPU: no GPU" was a full red bar."""
    store = open_store()
    save_payload(store, "matmul", _matmul(guess={"what": "crossover_n", "value": 2000.0, "text": "2k"}), label="Ana")
    save_payload(store, "matmul", _matmul(copy.deepcopy(LAPTOP), guess={"what": "crossover_n", "value": 500.0,
                                                                        "text": "500"}))
    board = refresh(store)
    spread = crossover_spread(board)
    assert dict(zip(spread.guessed_by, spread.guessed)) == {"machine: Student Laptop CPU i5": 500.0,
                                                           "Ana · server": 2000.0}
    guesses = spread_figure(spread, title="t", x_title="n").data[0]
    assert list(guesses.text) == spread.guessed_by and guesses.mode == "markers+text"  # few: labelled
    assert guesses.hovertemplate.startswith("%{text}")  # the name, not the dot's coordinates
    bars = hardware_figure(room_hardware(board)).data[0]
    colors = dict(zip(bars.y, bars.marker.color))
    assert colors["no GPU"] == NO_GPU_COLOR and colors["GPU: NVIDIA H200"] != NO_GPU_COLOR


def test_the_guess_column_comes_before_the_long_result():
    """Issue 34: the guess, last after the result, read "no cros…" off the right edge at 1280 pixels."""
    store = open_store()
    save_payload(store, "matmul", _matmul(guess={"what": "no_crossover", "text": "no crossover"}), label="Ana")
    columns = list(asdict(grouped_rows(refresh(store))[0]))
    assert columns.index("guess") < columns.index("result") and columns[-1] == "machine"


def test_page_without_runs_says_how_to_fill_it(app):
    app.switch_page("pages/class_board.py").run()
    assert not app.exception
    assert app.title[0].value == "Class board"
    assert any("No runs yet" in i.value for i in app.info)
    assert app.number_input(key="cb_every").value == 5.0


def test_page_shows_the_runs_and_a_run_saved_later_after_the_next_check(app):
    store = open_store()
    save_payload(store, "matmul", _matmul(guess={"what": "crossover_n", "value": 700.0, "text": "700"}), label="Ana")
    app.switch_page("pages/class_board.py").run()
    assert not app.exception
    table = app.dataframe[0].value
    assert list(table["who"]) == ["Ana · server"] and list(table["guess"]) == ["700"]
    assert {c.proto.id for c in app.get("plotly_chart")}  # the crossover and hardware charts
    save_payload(store, "train", _train(), label="Ben")
    app.run()  # what the fragment's next check triggers: a rerun that reads the new run only
    assert list(app.dataframe[0].value["who"]) == ["Ben · server", "Ana · server"]
    assert app.session_state["cb_board"].reads == 2


def test_the_newest_run_is_named_in_words_with_its_label_escaped(app):
    save_payload(open_store(), "matmul", _matmul(), label="*Ana* [x](y)")
    app.switch_page("pages/class_board.py").run()
    line = next(m.value for m in app.markdown if m.value.startswith("**Newest:**"))
    assert "\\*Ana\\*" in line and "matmul" in line


def test_the_page_marks_an_imported_run(app):
    store = open_store()
    store.import_json(json.dumps(as_saved("matmul", _matmul())).encode(), file="x.json", owner_token="ana")
    app.switch_page("pages/class_board.py").run()
    assert not app.exception
    assert list(app.dataframe[0].value["source"]) == ["imported"]
    assert "matmul (imported)" in next(m.value for m in app.markdown if m.value.startswith("**Newest:**"))


def test_training_measurements_are_named_by_preset_in_the_legend():
    store = open_store()
    lecture = _train("cpu", 0.3)
    lecture["preset"] = "lecture"
    save_payload(store, "train", lecture)
    save_payload(store, "train", _train("cpu", 4.0))
    spread = epoch_spread(refresh(store))
    assert sorted(zip(spread.measured, spread.measured_presets)) == [(0.3, "lecture"), (4.0, "mini-batch")]
    fig = spread_figure(spread, title="Seconds per epoch", x_title="seconds per epoch", none_word="no race")
    names = [t.name for t in fig.data]
    assert "measured, lecture (1)" in names and "measured, mini-batch (1)" in names
    assert not any("median" in (a.text or "") for a in fig.layout.annotations)  # no median across two presets


def test_a_board_of_many_runs_decodes_only_what_it_charts():
    """Rows come from the listing summaries; payloads are read only for the sweeps and training runs it charts
    and one run of a machine that has none (its hardware); what it shows is what reading every payload showed."""
    from tests.roofline.test_roofline import _synthetic_run

    store = open_store()
    elsewhere = copy.deepcopy(LAPTOP) | {"cpu": {"name": "Roofline-only CPU"}}
    roofline = _synthetic_run().to_json()
    for i in range(60):
        save_payload(store, "roofline", roofline, {}, copy.deepcopy(LAB), label=f"r{i % 7}")
    for i in range(12):
        save_payload(store, "matmul", _matmul(guess={"what": "crossover_n", "value": 500.0 + i, "text": ""}),
                     label=f"m{i % 5}")
    save_payload(store, "train", _train("cpu", guess={"what": "speedup", "value": 3.0, "text": "3x"}), {},
                 copy.deepcopy(LAB))
    for i in range(30):
        save_payload(store, "roofline", roofline, {}, copy.deepcopy(elsewhere), label="" if i % 2 else "Dee")
    counting = CountingStore(store)
    board = refresh(counting)
    assert counting.rows_read == 103 and counting.decoded == 13 + 1  # the 13 charted, one roofline for its machine
    old = ClassBoard(board.version, board.runs, full=tuple(store.read_runs(limit=200).runs))  # every payload read
    assert grouped_rows(board) == grouped_rows(old) and room_hardware(board) == room_hardware(old)
    assert {("CPU", "Roofline-only CPU"), ("CPU", "Lab Xeon 8480C")} <= {(h.kind, h.name) for h in room_hardware(board)}
    for spread in (crossover_spread, speedup_spread, epoch_spread):
        assert spread(board) == spread(old)
    assert [r.guess for r in grouped_rows(board) if r.kind == "matmul"][0] == "511"
    save_payload(store, "roofline", roofline, {}, copy.deepcopy(elsewhere), label="late")
    newer = refresh(counting, board)
    assert counting.decoded == 14 and len(newer.runs) == 104  # a roofline of a machine already known: no payload read
    save_payload(store, "matmul", _matmul(LAPTOP), label="Cy")
    assert refresh(counting, newer).full[0].label == "Cy" and counting.decoded == 15


def test_runs_that_could_not_tell_are_counted_busy_or_noisy_on_the_measured_row():
    """Issue 31: a class on a busy server measured runs that could not tell; the board says how many and why
    instead of leaving the measured row empty."""
    from core.results.kinds import read_result

    store = open_store()
    pair = {"a": "cuda:0 float32", "b": "cpu float32"}
    unclear = {**pair, "call": "unclear"}
    for busy in (True, True, False):
        payload = as_saved("matmul", _matmul(crossover=unclear))
        sweep = read_result("matmul", payload)
        c = sweep.headline_crossover
        payload["verdicts"] = [{"n": 256, "a": c.challenger, "b": c.baseline, "ratio": 1.0, "low": 0.5, "high": 2.0,
                                "call": "unclear", "busy": busy, "why": "machine busy" if busy else "straddles 1"}]
        save_payload(store, "matmul", payload)
    save_payload(store, "matmul", _matmul(guess={"what": "crossover_n", "value": 500.0, "text": "500"},
                                          crossover=unclear))  # older file: no verdicts, so not known busy
    spread = crossover_spread(refresh(store))
    assert (spread.cannot_tell_busy, spread.cannot_tell_noisy, spread.measured) == (2, 2, [])
    assert spread.none_measured == 0 and not spread.empty
    assert spread.cannot_tell_lines == ["2 runs could not tell: machine busy", "2 runs could not tell: too noisy"]
    fig = spread_figure(spread, title="t", x_title="n")
    names = [t.name for t in fig.data]
    assert "2 runs could not tell: machine busy" in names and "2 runs could not tell: too noisy" in names
    [note] = [a.text for a in fig.layout.annotations if "could not tell" in a.text]
    assert note == "2 runs could not tell: machine busy; 2 runs could not tell: too noisy"
    found = {**pair, "n_low": 256, "n_high": 512, "call": "found"}
    save_payload(store, "matmul", _matmul(crossover=found))
    spread = crossover_spread(refresh(store))
    assert spread.measured == [300.0] and spread.cannot_tell == 4
    assert not [a for a in spread_figure(spread, title="t", x_title="n").layout.annotations
                if "could not tell" in a.text], "the row has its point: the legend says the rest"


def test_a_delete_during_a_timed_job_waits_and_the_board_catches_up_after():
    """The reread after a delete is heavy (bench/quiet_load.py): while a job holds or waits for a device the board
    keeps its rows and says it is behind, asks for no redraw at every refresh, and rereads once the job is over."""
    store = open_store()
    first = save_payload(store, "matmul", _matmul(), label="Ana")
    save_payload(store, "matmul", _matmul(), label="Ben")
    counting = CountingStore(store)
    board = refresh(counting, busy=lambda: False)
    store.delete(first)
    held = refresh(counting, board, busy=lambda: True)
    assert [r.label for r in held.runs] == ["Ben", "Ana"] and held.behind == store.version()
    assert counting.reads == 1, "nothing reread while the job runs"
    assert not changed(store, held, busy=lambda: True), "no redraw at every refresh while it waits"
    assert changed(store, held, busy=lambda: False)
    after = refresh(counting, held, busy=lambda: False)
    assert [r.label for r in after.runs] == ["Ben"] and after.behind is None and after.version == store.version()


def test_the_board_waits_for_a_job_of_this_server_by_default():
    from core.platform.jobs import JobHooks, run_job

    store = open_store()
    first = save_payload(store, "matmul", _matmul(), label="Ana")
    board = refresh(store)
    store.delete(first)
    with run_job(["cpu"], JobHooks(), label="a race"):
        assert refresh(store, board).behind is not None
    assert refresh(store, board).runs == ()


def test_a_first_read_does_not_wait():
    store = open_store()
    save_payload(store, "matmul", _matmul(), label="Ana")
    assert [r.label for r in refresh(store, None, busy=lambda: True).runs] == ["Ana"]


def test_page_says_the_board_is_behind_a_delete_while_a_job_is_timed_and_catches_up_after(app):
    from core.platform.jobs import JobHooks, run_job

    store = open_store()
    first = save_payload(store, "matmul", _matmul(), label="Ana")
    save_payload(store, "matmul", _matmul(), label="Ben")
    app.switch_page("pages/class_board.py").run()
    store.delete(first)
    with run_job(["cpu"], JobHooks(), label="a race"):  # a race of this server holds the CPU
        app.run()
        assert list(app.dataframe[0].value["who"]) == ["Ben · server", "Ana · server"]
        assert any("board catches up when the race" in c.value for c in app.caption)
    app.run()
    assert list(app.dataframe[0].value["who"]) == ["Ben · server"]
    assert not any("board catches up" in c.value for c in app.caption)
