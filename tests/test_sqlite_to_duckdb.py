"""The SQLite -> DuckDB copy: types from affinity and stored values, keys only where DuckDB can hold
them (each one left out is noted), deterministic content, a file the sandbox opens read-only."""

from __future__ import annotations

import sqlite3

import duckdb
import pytest

from nl2sql_pipeline.dialect.sqlite_copy import (
    ExtraKeys,
    ForeignKey,
    SqliteCopyError,
    column_info_path,
    copy_sqlite_to_duckdb,
)
from nl2sql_pipeline.execution import run_query

SCRIPT = """
CREATE TABLE country (code TEXT PRIMARY KEY, name TEXT);
CREATE TABLE city (id INTEGER PRIMARY KEY, name TEXT, country TEXT REFERENCES country(code),
                   population INT, area NUMERIC, founded, code_text TEXT, score REAL);
CREATE TABLE visit (city_id INT REFERENCES city(id), visitor_id INT, note BLOB);
CREATE TABLE dup (id INT PRIMARY KEY, v TEXT);
INSERT INTO country VALUES ('FR', 'France'), ('DE', 'Germany');
INSERT INTO city VALUES (1, 'Paris', 'FR', 2100000, 105.4, 'c. 250 BC', '007', 9),
                        (2, 'Lyon', 'FR', 'unknown', 48, 43, '42', 7.5),
                        (3, 'Köln', 'DE', 1080000, 405, -38, '1', NULL);
INSERT INTO visit VALUES (1, 10, X'00FF'), (9, 11, NULL);
INSERT INTO dup VALUES (1, 'a'), (NULL, 'b');
CREATE TABLE person (id INTEGER PRIMARY KEY, boss INT REFERENCES person(id), email TEXT);
CREATE TABLE login (email TEXT REFERENCES person(email), at TEXT);
INSERT INTO person VALUES (1, 2, 'a@x'), (2, NULL, 'b@x');
INSERT INTO login VALUES ('b@x', '2024-01-01');
CREATE VIEW french_city AS SELECT name FROM city WHERE country LIKE 'fr';
CREATE VIEW broken AS SELECT nosuch FROM city;
"""


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "src.sqlite"
    con = sqlite3.connect(path)
    con.executescript(SCRIPT)
    con.commit()
    con.close()
    return path


def _types(path):
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {
            (t, c): d
            for t, c, d in con.execute(
                "SELECT table_name, column_name, data_type FROM information_schema.columns"
            ).fetchall()
        }
    finally:
        con.close()


def test_types_follow_affinity_and_the_values_stored(source, tmp_path):
    copied = copy_sqlite_to_duckdb(source, tmp_path / "out.duckdb")
    types = _types(copied.path)
    assert types[("city", "id")] == "BIGINT"
    assert types[("city", "population")] == "VARCHAR"  # an INT column holding 'unknown'
    assert types[("city", "area")] == "DOUBLE"  # NUMERIC holding integers and reals
    assert types[("city", "founded")] == "VARCHAR"  # no declared type, mixed text and integers
    assert types[("city", "code_text")] == "VARCHAR"  # TEXT holding digits stays text ('007')
    assert types[("city", "score")] == "DOUBLE"
    assert types[("visit", "note")] == "BLOB"
    rows = run_query(copied.path, "SELECT name, population, code_text, score FROM city ORDER BY id").rows
    assert rows == [("Paris", "2100000", "007", 9.0), ("Lyon", "unknown", "42", 7.5), ("Köln", "1080000", "1", None)]
    assert sorted(run_query(copied.path, "SELECT name FROM french_city").rows) == [("Lyon",), ("Paris",)]
    assert any(n.startswith("view broken not created: ") for n in copied.notes)
    assert copied.row_counts == {"city": 3, "country": 2, "dup": 2, "login": 1, "person": 2, "visit": 2}


def test_keys_are_declared_where_the_data_allows_and_every_other_one_is_noted(source, tmp_path):
    extra = ExtraKeys({"VISIT": ("city_id", "visitor_id")}, [ForeignKey("visit", ("visitor_id",), "city", ("id",))])
    copied = copy_sqlite_to_duckdb(source, tmp_path / "out.duckdb", extra)
    con = duckdb.connect(str(copied.path), read_only=True)
    keys = sorted(
        (t, k, tuple(c))
        for t, k, c in con.execute(
            "SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints() "
            "WHERE constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')"
        ).fetchall()
    )
    unique = con.execute(
        "SELECT table_name, constraint_column_names FROM duckdb_constraints() WHERE constraint_type = 'UNIQUE'"
    ).fetchall()
    con.close()
    assert unique == [("person", ["email"])]  # what login(email) points at
    assert keys == [
        ("city", "FOREIGN KEY", ("country",)),
        ("city", "PRIMARY KEY", ("id",)),
        ("country", "PRIMARY KEY", ("code",)),
        ("login", "FOREIGN KEY", ("email",)),
        ("person", "PRIMARY KEY", ("id",)),
        ("visit", "PRIMARY KEY", ("city_id", "visitor_id")),
    ]
    assert (
        "foreign key person(boss) -> person(id) not declared: a table referencing itself cannot be copied "
        "with the key declared" in copied.notes
    )
    assert "primary key dup(id) not declared: it holds NULL values" in copied.notes
    assert "foreign key visit(city_id) -> city(id) not declared: some values have no parent row" in copied.notes
    assert "foreign key visit(visitor_id) -> city(id) not declared: some values have no parent row" in copied.notes


def test_the_copy_is_deterministic_and_replaces_an_earlier_one(source, tmp_path):
    first = copy_sqlite_to_duckdb(source, tmp_path / "a.duckdb")
    second = copy_sqlite_to_duckdb(source, tmp_path / "b.duckdb")
    again = copy_sqlite_to_duckdb(source, tmp_path / "a.duckdb")
    dump = lambda p: [run_query(p, f"SELECT * FROM {t}").rows for t in ("city", "country", "dup", "visit", "person")]  # noqa: E731
    assert dump(first.path) == dump(second.path) == dump(again.path)
    assert _types(first.path) == _types(second.path)
    assert first.notes == second.notes
    assert sorted(p.name for p in tmp_path.iterdir()) == [  # no temp file left; the column types beside each copy
        "a.columns.json",
        "a.duckdb",
        "b.columns.json",
        "b.duckdb",
        "src.sqlite",
    ]
    assert column_info_path(first.path).read_text() == column_info_path(second.path).read_text()


def test_a_missing_or_broken_source_is_a_clear_error(tmp_path):
    with pytest.raises(SqliteCopyError, match="does not exist"):
        copy_sqlite_to_duckdb(tmp_path / "none.sqlite", tmp_path / "out.duckdb")
    (tmp_path / "junk.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(SqliteCopyError, match="not a readable SQLite database"):
        copy_sqlite_to_duckdb(tmp_path / "junk.sqlite", tmp_path / "out.duckdb")
    assert not (tmp_path / "out.duckdb").exists()
