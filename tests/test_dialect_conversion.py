"""Gold SQL conversion to DuckDB: each SQLite fix on its own, the docstring examples, and the check
against SQLite deciding which conversions may stand."""

from __future__ import annotations

import doctest
import sqlite3

import pytest

from nl2sql_pipeline.dialect import ConversionError, convert_sql, sqlite_fixes, verify_conversion
from nl2sql_pipeline.dialect import convert as convert_module
from nl2sql_pipeline.dialect import sqlite_copy as sqlite_to_duckdb
from nl2sql_pipeline.dialect.sqlite_copy import copy_sqlite_to_duckdb
from nl2sql_pipeline.gold.formats import plain


@pytest.mark.parametrize("module", [sqlite_fixes, convert_module, sqlite_to_duckdb, plain])
def test_docstring_examples_hold(module):
    failed, attempted = doctest.testmod(module)
    assert attempted and not failed


@pytest.fixture
def db(tmp_path):
    source = tmp_path / "s.sqlite"
    con = sqlite3.connect(source)
    con.executescript(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, year TEXT, n INT, mixed INT);"
        "INSERT INTO t VALUES (1, 'Ann', '2014', 9, 1), (2, 'bob', '2015', 4, 'x'), (3, 'Cy', '9', 6, 2);"
    )
    con.commit()
    con.close()
    copied = copy_sqlite_to_duckdb(source, tmp_path / "s.duckdb")
    return source, copied


@pytest.mark.parametrize(
    ("sql", "expected", "fixes"),
    [
        ('SELECT id FROM t WHERE name = "bob"', "SELECT id FROM t WHERE name = 'bob'", ("double_quoted_strings",)),
        ('SELECT "name" FROM t', 'SELECT "name" FROM t', ()),  # a real column stays a column
        (
            "SELECT name, max(n) FROM t",
            "SELECT ARG_MAX(name, n) AS name, MAX(n) FROM t",
            ("bare_columns_in_aggregates",),
        ),
        (
            "SELECT name, min(n) FROM t",
            "SELECT ARG_MIN(name, n) AS name, MIN(n) FROM t",
            ("bare_columns_in_aggregates",),
        ),
        (
            "SELECT n, name, count(*) FROM t GROUP BY n",
            "SELECT n, ANY_VALUE(name) AS name, COUNT(*) FROM t GROUP BY n",
            ("bare_columns_in_aggregates",),
        ),
        (
            "SELECT a.n, b.name, count(*) FROM t AS a JOIN t AS b ON a.id = b.id GROUP BY a.n",
            "SELECT a.n, ANY_VALUE(b.name) AS name, COUNT(*) FROM t AS a JOIN t AS b ON a.id = b.id GROUP BY a.n",
            ("bare_columns_in_aggregates",),
        ),
        (
            "SELECT b.n, count(*) FROM t AS a JOIN t AS b ON a.id = b.id GROUP BY a.n",
            "SELECT ANY_VALUE(b.n) AS n, COUNT(*) FROM t AS a JOIN t AS b ON a.id = b.id GROUP BY a.n",
            ("bare_columns_in_aggregates",),
        ),
        (
            "SELECT n, count(*) AS c FROM t GROUP BY 1 ORDER BY c",
            "SELECT n, COUNT(*) AS c FROM t GROUP BY 1 ORDER BY c NULLS FIRST",
            (),
        ),
        (
            "SELECT name FROM t WHERE name LIKE 'a%'",
            "SELECT name FROM t WHERE name ILIKE 'a%'",
            ("like_is_case_insensitive",),
        ),
        (
            "SELECT name FROM t WHERE year > 2013",
            "SELECT name FROM t WHERE year > '2013'",
            ("text_compared_with_numbers",),
        ),
        (
            "SELECT name FROM t WHERE year IN (2014, 9)",
            "SELECT name FROM t WHERE year IN ('2014', '9')",
            ("text_compared_with_numbers",),
        ),
        (
            "SELECT name FROM t WHERE mixed = 1",
            "SELECT name FROM t WHERE TRY_CAST(mixed AS DOUBLE) = 1",
            ("text_compared_with_numbers",),
        ),
        (
            "SELECT a.name FROM t AS a JOIN t AS b ON a.year = b.n",
            "SELECT a.name FROM t AS a JOIN t AS b ON TRY_CAST(a.year AS DOUBLE) = b.n",
            ("text_compared_with_numbers",),
        ),
        (
            "SELECT sum(n) / count(*) FROM t",
            "SELECT CAST(TRUNC(SUM(n) / COUNT(*)) AS BIGINT) FROM t",
            ("integer_division",),
        ),
        (
            "SELECT CAST(sum(n) AS REAL) / count(*) FROM t",
            "SELECT CAST(SUM(n) AS DOUBLE) / NULLIF(COUNT(*), 0) FROM t",
            (),
        ),
    ],
)
def test_each_sqlite_fix_rewrites_only_what_needs_it_and_the_result_matches_sqlite(db, sql, expected, fixes):
    source, copied = db
    converted = convert_sql(sql, "sqlite", copied.column_types())
    assert converted.sql == expected
    assert converted.fixes == fixes
    check = verify_conversion(converted, copied.path, source)
    assert check.status == "verified", check.reason


def test_a_query_that_does_not_parse_or_is_not_one_query_cannot_be_converted():
    with pytest.raises(ConversionError, match="does not parse as sqlite"):
        convert_sql("SELECT FROM WHERE (", "sqlite")
    with pytest.raises(ConversionError, match="not exactly one query"):
        convert_sql("SELECT 1; SELECT 2", "sqlite")
    with pytest.raises(ConversionError, match="not exactly one query"):
        convert_sql("DELETE FROM t", "sqlite")


def test_postgres_gold_is_transpiled_and_only_checked_to_run(db):
    _, copied = db
    converted = convert_sql("SELECT name::text, n::float FROM t WHERE name ~* '^a'", "postgres")
    check = verify_conversion(converted, copied.path)
    assert check.status == "runs" and "no source engine" in check.reason
    failing = verify_conversion(convert_sql("SELECT nosuch FROM t", "postgres"), copied.path)
    assert failing.status == "duckdb_failed" and not failing.kept


def test_the_check_catches_what_the_fixes_are_for(db):
    """Without the fixes, DuckDB would answer these differently from SQLite (or not at all)."""
    source, copied = db
    for sql in (
        "SELECT sum(n) / count(*) FROM t",
        "SELECT count(*) FROM t AS a JOIN t AS b ON a.name = b.n",
        "SELECT name FROM t WHERE name LIKE 'B%'",
        "SELECT name, max(n) FROM t",
    ):
        unfixed = convert_sql(sql, "duckdb")  # DuckDB SQL: transpiled as is, no SQLite fix
        unfixed = type(unfixed)(sql, unfixed.sql, "sqlite", ())
        assert not verify_conversion(unfixed, copied.path, source).kept, sql
        assert verify_conversion(convert_sql(sql, "sqlite", copied.column_types()), copied.path, source).kept, sql
