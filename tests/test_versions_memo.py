"""The memo key of a gold set's run versions: file contents, but a DuckDB database file by its identity."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
from eval_support import query_case, register_gold_set

from nl2sql_pipeline.runs import versions_memo


def test_the_key_follows_every_data_file_and_a_database_by_identity(data_copy: Path, monkeypatch) -> None:
    register_gold_set(data_copy, "memo-set", [query_case("m1", "SELECT 1 AS one")])
    db = data_copy / "gold" / "extra.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    con.close()
    first = versions_memo.memo_key("memo-set")
    read: list[Path] = []
    original = Path.read_bytes

    def reading(path: Path) -> bytes:
        read.append(path)
        return original(path)

    monkeypatch.setattr(Path, "read_bytes", reading)
    assert versions_memo.memo_key("memo-set") == first
    assert read and db not in read  # the database's bytes are not read
    stat = db.stat()
    os.utime(db, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a database written again
    touched = versions_memo.memo_key("memo-set")
    assert touched != first
    notes = data_copy / "gold" / "notes.txt"
    notes.write_text("a")
    with_notes = versions_memo.memo_key("memo-set")
    assert with_notes != touched
    stat = notes.stat()
    notes.write_text("b")  # same size, same time: the content still counts
    os.utime(notes, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert versions_memo.memo_key("memo-set") != with_notes
