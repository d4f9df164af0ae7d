"""The result schema: each kind of result as a typed dataclass that owns its JSON form.

    read_result("matmul", obj)       # core.results.kinds: MatmulSweep (any version this dashboard reads)
    sweep.to_json()                  # {"kind": "matmul", "schema_version": 3, "results": [...], ...}
    jsonio.dumps(anything)           # the one JSON writer: NaN -> null, numpy -> numbers, dataclasses -> objects
    files.read_import(data)          # RunRecords from an uploaded file, checked field by field

`matmul`, `train`, `roofline` and `cluster` are the kinds (the same names in the JSON, the store, the CLI
and the pages), each ending with its `RESULT_KIND` record (`result_kind`); `kinds` lists them and says how
old files are upgraded; `runs` is a saved run with its machine and time; `files` reads imports and writes
exports; `fields` and `machine` are the typed readers they share.

This file imports nothing: import each name from the module that defines it, so that no import order
(and no thread importing the package while another imports one of its modules) can meet a half-built module.
"""
