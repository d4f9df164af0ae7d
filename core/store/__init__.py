"""Saved results: every finished sweep and training run, with the machine it ran on.

    store = database.open_store()                      # DATABASE_URL, else SQLite in core.platform.paths.data_dir()
    run_id = store.save(sweep, label="lab GPU")        # a typed result (a MatmulSweep, a TrainRun, ...)
    store.list_runs(kind="train", device="cuda:0")     # store.read_runs() also names unreadable rows
    frames.kind_frame("matmul", store.list_runs(kind="matmul"))   # tidy table for overlays

What a run must look like, and how files are read and written, is core.results (the schema);
`database` keeps runs in SQLite or PostgreSQL, `records` describes a saved run, `frames` turns
runs into tidy tables, `board` is what the Results page does with them, `class_board` the Class board.

This file imports nothing: import each name from the module that defines it (no import order to keep).
"""
