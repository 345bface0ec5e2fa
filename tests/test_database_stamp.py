"""The stamp of a gold set's databases: it changes when a file is rewritten, and only then."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.databases.stamp import case_database_paths, cases_database_stamp, database_stamp, file_stamp
from nl2sql_pipeline.errors import DatabaseNotFoundError
from nl2sql_pipeline.execution import release_sandboxes, run_query


def _write(path: Path, rows: int) -> None:
    built = path.with_name(f"new-{path.name}")
    with duckdb.connect(str(built)) as con:
        con.execute(f"CREATE TABLE t AS SELECT * FROM range({rows})")
    os.replace(built, path)


def _case(case_id: str, database: str):
    return case_from_dict(
        {
            "id": case_id,
            "domain": "d",
            "category": "c",
            "question": f"q {case_id}",
            "database": database,
            "expected_sql": "SELECT 1",
        }
    )


def test_the_stamp_changes_when_the_file_is_rewritten(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    _write(db, 3)
    before = database_stamp({"a": db})
    assert database_stamp({"a": db}) == before  # stable while nothing changed
    _write(db, 4)
    assert database_stamp({"a": db}) != before


def test_the_stamp_changes_with_the_modification_time_alone(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    _write(db, 3)
    before = database_stamp({"a": db})
    stat = db.stat()
    os.utime(db, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000))
    assert db.stat().st_size == stat.st_size
    assert database_stamp({"a": db}) != before


def test_reading_a_database_leaves_its_stamp_alone(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    _write(db, 3)
    before = database_stamp({"a": db})
    assert run_query(db, "SELECT count(*) FROM t").rows == [(3,)]  # evaluation opens it read-only
    release_sandboxes(db)
    assert database_stamp({"a": db}) == before


def test_a_write_ahead_log_counts(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    _write(db, 3)
    before = database_stamp({"a": db})
    db.with_name(db.name + ".wal").write_bytes(b"pending")
    assert file_stamp(db)["wal"] == [7, db.with_name(db.name + ".wal").stat().st_mtime_ns]
    assert database_stamp({"a": db}) != before


def test_a_missing_database_stands_as_missing_and_order_does_not_matter(tmp_path: Path) -> None:
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    _write(a, 1)
    assert file_stamp(b) is None
    assert database_stamp({"a": a, "b": b}) == database_stamp({"b": None, "a": a})
    _write(b, 1)  # built later (a sample database): a new stamp
    assert database_stamp({"a": a, "b": b}) != database_stamp({"a": a, "b": None})


def test_the_stamp_of_cases_covers_each_database_they_name(tmp_path: Path) -> None:
    files = {"a": tmp_path / "a.duckdb", "b": tmp_path / "b.duckdb"}
    for path in files.values():
        _write(path, 2)

    def resolve(name: str) -> Path:
        if name not in files:
            raise DatabaseNotFoundError(name)
        return files[name]

    cases = [_case("1", "a"), _case("2", "b"), _case("3", "a"), _case("4", "gone")]
    assert case_database_paths(cases, resolve) == {"a": files["a"], "b": files["b"], "gone": None}
    before = cases_database_stamp(cases, resolve)
    assert cases_database_stamp(list(reversed(cases)), resolve) == before
    _write(files["b"], 5)
    assert cases_database_stamp(cases, resolve) != before
    assert cases_database_stamp(cases[:1], resolve) == database_stamp({"a": files["a"]})


def test_a_copy_with_its_times_keeps_the_stamp_and_a_link_is_stamped_by_its_file(tmp_path: Path) -> None:
    import shutil

    db = tmp_path / "a.duckdb"
    _write(db, 1)
    copied = tmp_path / "moved" / "a.duckdb"  # a storage root cloned or moved with its times
    copied.parent.mkdir()
    shutil.copy2(db, copied)
    assert database_stamp({"a": copied}) == database_stamp({"a": db})
    link = tmp_path / "link.duckdb"
    link.symlink_to(db)
    assert file_stamp(link) == file_stamp(db)
    shutil.copyfile(db, copied)  # a copy written anew: a new stamp (prepared again, never wrong)
    assert database_stamp({"a": copied}) != database_stamp({"a": db})


def test_the_docstring_examples_hold() -> None:
    import doctest

    from nl2sql_pipeline.databases import stamp
    from nl2sql_pipeline.runs import reuse

    assert doctest.testmod(stamp).failed == 0
    assert doctest.testmod(reuse).failed == 0


def test_a_recorded_run_stands_only_on_the_databases_it_was_judged_on() -> None:
    from nl2sql_pipeline.runs.reuse import database_change

    assert database_change({"database_stamp": "a1"}, None) is None  # not asked
    assert database_change({"database_stamp": "a1"}, "a1") is None
    assert "a case database changed" in str(database_change({"database_stamp": "a1"}, "b2"))
    assert "recorded no database stamp" in str(database_change({}, "b2"))  # recorded before stamps: judged again
