"""Gold SQL conversion to DuckDB: each SQLite fix on its own, the docstring examples, and the check
against SQLite deciding which conversions may stand."""

from __future__ import annotations

import doctest
import sqlite3

import pytest

from nl2sql_pipeline.dialect import (
    ConversionError,
    convert_sql,
    postgres_division,
    postgres_fixes,
    sqlite_fixes,
    verify_conversion,
)
from nl2sql_pipeline.dialect import convert as convert_module
from nl2sql_pipeline.dialect import sqlite_copy as sqlite_to_duckdb
from nl2sql_pipeline.dialect import verify as verify_module
from nl2sql_pipeline.dialect.sqlite_copy import copy_sqlite_to_duckdb
from nl2sql_pipeline.gold.formats import plain


@pytest.mark.parametrize(
    "module",
    [sqlite_fixes, postgres_fixes, postgres_division, convert_module, sqlite_to_duckdb, plain, verify_module],
)
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
    with pytest.raises(ConversionError, match=r"not exactly one query in sqlite \(DELETE is not a query\)"):
        convert_sql("DELETE FROM t", "sqlite")
    with pytest.raises(ConversionError, match="does not parse as sqlite: it is no statement, only the expression"):
        convert_sql("SELEC name", "sqlite")  # sqlglot reads 'SELEC AS name': one statement, not a query
    for dialect in ("sqlite", "duckdb", "postgres"):  # the tokenizer's TokenError too (Postgres tokenizes first)
        with pytest.raises(ConversionError, match=f"does not parse as {dialect}"):
            convert_sql("SELECT name FROM t WHERE name = 'Joe", dialect)


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


@pytest.fixture
def typed_db(tmp_path):
    """Numeric text, a time column and an integer key beside text keys: what the fixes of issue 18 need."""
    source = tmp_path / "typed.sqlite"
    con = sqlite3.connect(source)
    con.executescript(
        "CREATE TABLE p (id INTEGER PRIMARY KEY, code TEXT, share TEXT, day TEXT, starts TIME, weight REAL);"
        "INSERT INTO p VALUES (1, '2', '22', '2014-05-01', '10:30:00', 1.5), (2, '9', 'n/a', '2015-01-01', '23:05', 2.0),"
        " (3, 'x', '7', '2016-07-04', NULL, NULL), (4, NULL, NULL, NULL, '08:00', 9.0);"
    )
    con.commit()
    con.close()
    return source, copy_sqlite_to_duckdb(source, tmp_path / "typed.duckdb")


@pytest.mark.parametrize(
    ("sql", "fix"),
    [
        ("SELECT avg(share) FROM p", "text_aggregated_as_numbers"),  # 'n/a' counts as 0.0, as in SQLite
        ("SELECT sum(share), count(*) FROM p GROUP BY id > 2", "text_aggregated_as_numbers"),
        ("SELECT id FROM p WHERE id IN (SELECT code FROM p)", "in_subquery_across_types"),
        ("SELECT id FROM p WHERE id NOT IN (SELECT code FROM p WHERE code IS NOT NULL)", "in_subquery_across_types"),
        ("SELECT code FROM p WHERE code IN (SELECT id FROM p)", "in_subquery_across_types"),
        ("SELECT id FROM p WHERE weight IN (SELECT code FROM p)", "in_subquery_across_types"),
        ("SELECT id, strftime('%H:%M', starts) FROM p", "strftime_of_a_time"),
        ("SELECT id FROM p WHERE strftime('%H', starts) < '12'", "strftime_of_a_time"),
        ("SELECT id FROM p WHERE id BETWEEN 'abc' AND 'abc'", "numbers_compared_with_text"),
        ("SELECT id FROM p WHERE id < 'abc'", "numbers_compared_with_text"),
        ("SELECT id FROM p WHERE NOT 'abc' = id", "numbers_compared_with_text"),
        ("SELECT id FROM p WHERE id = '3'", "numbers_compared_with_text"),  # numeric text takes the affinity
        ("SELECT id FROM p WHERE id IN ('1', 'x', 4)", "numbers_compared_with_text"),
        ("SELECT count(*) FROM p HAVING count(*) >= '1'", "numbers_compared_with_text"),  # no affinity: false
    ],
)
def test_fixable_sqlite_gold_converts_and_returns_sqlites_rows(typed_db, sql, fix):
    source, copied = typed_db
    converted = convert_sql(sql, "sqlite", copied.column_types())
    assert fix in converted.fixes, converted.sql
    check = verify_conversion(converted, copied.path, source)
    assert check.status == "verified", (converted.sql, check.reason)
    if "'3'" not in sql:  # DuckDB reads that one alike; the others fail or differ without the fix
        bare = convert_sql(sql, "duckdb")
        assert not verify_conversion(type(bare)(sql, bare.sql, "sqlite", ()), copied.path, source).kept, sql


def test_engine_specific_sqlite_gold_stays_left_out_with_the_reason(typed_db):
    """SQLite averages a date string's leading number (its year): no DuckDB query means that, so it is
    reported as another result and left out."""
    source, copied = typed_db
    check = verify_conversion(
        convert_sql("SELECT avg(day) FROM p", "sqlite", copied.column_types()), copied.path, source
    )
    assert check.status == "result_differs" and not check.kept and "another result than SQLite" in check.reason


@pytest.fixture
def pg_db(tmp_path):
    import duckdb

    path = tmp_path / "pg.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR, joined DATE);"
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, total DOUBLE);"
        "INSERT INTO customers VALUES (1, 'Ann', DATE '2020-03-05'), (2, 'Bo', DATE '2021-11-15');"
        "INSERT INTO orders VALUES (1, 1, 10), (2, 1, 5), (3, 2, 7);"
    )
    con.close()
    return path


@pytest.mark.parametrize(
    ("sql", "postgres_rows"),
    [
        # what PostgreSQL 15 returns for these (Month / Day are blank-padded to 9 unless FM precedes them)
        (
            "SELECT TO_CHAR(joined, 'Month DD, YYYY'), TO_CHAR(joined, 'FMMonth FMDD, YYYY') FROM customers ORDER BY id",
            [("March     05, 2020", "March 5, 2020"), ("November  15, 2021", "November 15, 2021")],
        ),
        (
            "SELECT TO_CHAR(joined, 'MON YY'), TO_CHAR(joined, 'Dy \"the\" DD'), TO_CHAR(joined, 'YYYY-MM') "
            "FROM customers ORDER BY id",
            [("MAR 20", "Thu the 05", "2020-03"), ("NOV 21", "Mon the 15", "2021-11")],
        ),
        (
            "SELECT name FROM customers WHERE joined < TO_DATE('January 05 2021', 'Month DD YYYY') "
            "OR joined = TO_DATE('15 Nov 2021', 'DD Mon YYYY') ORDER BY id",
            [("Ann",), ("Bo",)],
        ),
        (
            "SELECT c.name, count(*), sum(o.total) FROM customers c JOIN orders o ON o.customer_id = c.id "
            "GROUP BY c.id ORDER BY c.name",
            [("Ann", 2, 15.0), ("Bo", 1, 7.0)],
        ),
    ],
)
def test_fixable_postgres_gold_converts_and_returns_postgres_rows(pg_db, sql, postgres_rows):
    from nl2sql_pipeline.execution import run_query

    converted = convert_sql(sql, "postgres")
    assert converted.fixes, converted.sql
    result = run_query(pg_db, converted.sql)
    assert result.ok, (converted.sql, result.error_message)
    assert [tuple(r) for r in result.rows] == postgres_rows
    transpiled = run_query(pg_db, sqlglot_only(sql))
    assert not transpiled.ok or [tuple(r) for r in transpiled.rows] != postgres_rows, "the fix is needed"


def sqlglot_only(sql: str) -> str:
    import sqlglot

    return sqlglot.transpile(sql, read="postgres", write="duckdb")[0]


def test_an_unknown_postgres_format_is_left_to_sqlglot():
    converted = convert_sql("SELECT TO_CHAR(joined, 'Q') FROM customers", "postgres")
    assert converted.sql == sqlglot_only("SELECT TO_CHAR(joined, 'Q') FROM customers")
    assert "NL2SQL_RAW" not in convert_sql("SELECT to_char(3.5, '9.9'), 'TO_CHAR(' FROM t", "postgres").sql


@pytest.fixture
def dated_db(tmp_path):
    source = tmp_path / "d.sqlite"
    con = sqlite3.connect(source)
    con.executescript(
        "CREATE TABLE f (id INTEGER PRIMARY KEY, day TEXT, n INT);"
        "INSERT INTO f VALUES (1, '2026-05-01', 1), (2, '2026-06-15', 2), (3, '2026-06-29', 2), (4, '2026-07-04', 3);"
    )
    con.commit()
    con.close()
    return source, copy_sqlite_to_duckdb(source, tmp_path / "d.duckdb")


@pytest.mark.parametrize(
    ("sql", "on_reference_date", "a_year_later"),
    [
        ("SELECT count(*) FROM f WHERE day < date('now')", 3, 4),
        ("SELECT count(*) FROM f WHERE day >= date('now', '-30 days') AND day < date('NOW')", 2, 0),
        ("SELECT count(*) FROM f WHERE day < datetime('now', 'start of month', '+1 month')", 3, 4),
        ("SELECT count(*) FROM f WHERE strftime('%Y-%m', day) = strftime('%Y-%m', 'now')", 2, 0),
    ],
)
def test_sqlites_clock_is_read_at_the_reference_date_on_both_engines(dated_db, sql, on_reference_date, a_year_later):
    """``date('now')`` and its kin become DuckDB clock reads; the check runs SQLite's original and the
    conversion at the reference date, so both count the rows before it, whatever the real date."""
    from datetime import date

    from nl2sql_pipeline.dialect.verify import run_sqlite
    from nl2sql_pipeline.execution import run_query
    from nl2sql_pipeline.sql.clock import pin_clock

    source, copied = dated_db
    converted = convert_sql(sql, "sqlite", {})
    assert converted.fixes == ("now_reads_the_clock",) and "CURRENT_TIMESTAMP" in converted.sql
    reference = date(2026, 6, 30)
    assert run_sqlite(source, sql, reference=reference).rows == [(on_reference_date,)]
    assert run_query(copied.path, pin_clock(converted.sql, reference)).rows == [(on_reference_date,)]
    assert verify_conversion(converted, copied.path, source, reference=reference).status == "verified"
    later = date(2027, 6, 30)  # another "today": another count, and both engines agree again
    assert run_sqlite(source, sql, reference=later).rows == [(a_year_later,)]
    assert run_query(copied.path, pin_clock(converted.sql, later)).rows == [(a_year_later,)]
    assert verify_conversion(converted, copied.path, source, reference=later).status == "verified"


def test_rows_tied_at_the_limit_that_sqlite_keeps_differently_verify_the_conversion(dated_db):
    """SQLite and DuckDB keep different rows tied at ``ORDER BY … LIMIT`` (the sort key not selected): a valid
    choice is the same result; rows outside the tie are not."""
    source, copied = dated_db
    tied = convert_sql("SELECT id FROM f ORDER BY n DESC LIMIT 2", "sqlite", {})
    check = verify_conversion(tied, copied.path, source)  # SQLite keeps ids 4, 2; DuckDB 4, 3
    assert check.status == "verified" and "SQLite kept other rows tied at the LIMIT" in check.reason
    wrong = tied.__class__(tied.source_sql.replace("DESC", "ASC"), tied.sql, "sqlite")
    assert verify_conversion(wrong, copied.path, source).status == "result_differs"
