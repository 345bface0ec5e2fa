"""Postgres gold checked against PostgreSQL (``gold import --verify-with postgres|URL``), and Postgres's
integer division kept in the DuckDB conversion.

The integration tests start their own throwaway cluster (``dialect.postgres_server``: Debian's postgresql-15
server binaries, which ``.ci/run`` installs) and skip, with the reason, only where there are none.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import pytest

from nl2sql_cli.main import main
from nl2sql_pipeline.dialect import convert_sql
from nl2sql_pipeline.dialect.column_info import catalog_columns
from nl2sql_pipeline.dialect.postgres_server import PostgresUnavailable, find_bin_dir
from nl2sql_pipeline.dialect.postgres_verify import describe_url, postgres_column_type
from nl2sql_pipeline.execution import run_query
from nl2sql_pipeline.gold.formats import import_benchmark, report_path_for
from nl2sql_pipeline.gold.quality.validation import load_cases

FLIGHTS = """
CREATE TABLE flights (flight_id INTEGER, origin VARCHAR, departure_time BIGINT, arrival_time BIGINT,
                      seats SMALLINT, ratio DOUBLE, day DATE, tags VARCHAR[]);
INSERT INTO flights VALUES
    (1, 'BOS', 0, 150, 7, 2.5, '2024-01-05', ['a']),
    (2, 'bos', 100, 219, 9, 3.5, '2024-02-01', []),
    (3, 'JFK', 1000, 1090, 4, 0.5, '2024-02-10', NULL),
    (4, 'JFK', 2000, 2179, 5, 1.5, '2024-03-10', ['b', 'c']);
"""
INTEGER_DIVISION = "SELECT flight_id, (arrival_time - departure_time) / 60 AS minutes FROM flights ORDER BY flight_id"
POSTGRES_ONLY = (
    "SELECT origin, COUNT(*)::float / (SELECT COUNT(*) FROM flights) AS share, SUM(seats) / 2 AS half_seats "
    "FROM flights WHERE origin ~* '^b' GROUP BY origin ORDER BY origin"
)
ROUNDS_HALF_EVEN = "SELECT flight_id, ROUND(ratio) AS r FROM flights ORDER BY flight_id"
"""Postgres rounds a double half to even (2.5 -> 2), DuckDB half away from zero (2.5 -> 3): a mismatch."""
NO_DUCKDB_FUNCTION = "SELECT flight_id, width_bucket(ratio, 0, 4, 4) AS bucket FROM flights"
"""Runs in Postgres; DuckDB has no width_bucket: not convertible."""
QUESTIONS = [
    ("How many whole minutes did each flight take?", INTEGER_DIVISION),
    ("Which share of flights leaves from an airport starting with b, and half their seats?", POSTGRES_ONLY),
    ("Each flight's ratio rounded?", ROUNDS_HALF_EVEN),
    ("Each flight's ratio in one of four buckets?", NO_DUCKDB_FUNCTION),
]
POSTGRES_ROWS = {
    INTEGER_DIVISION: [(1, 2), (2, 1), (3, 1), (4, 2)],
    POSTGRES_ONLY: [("BOS", 0.25, 3), ("bos", 0.25, 4)],
}


def _defog_folder(root: Path) -> Path:
    """A defog-style CSV over one DuckDB database ``flights``."""
    root.mkdir(parents=True)
    con = duckdb.connect(str(root / "flights.duckdb"))
    con.execute(FLIGHTS)
    con.close()
    with (root / "questions_gen_postgres.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["db_name", "query_category", "question", "query", "instructions"])
        writer.writeheader()
        for question, query in QUESTIONS:
            writer.writerow(
                {
                    "db_name": "flights",
                    "query_category": "math",
                    "question": question,
                    "query": query,
                    "instructions": "",
                }
            )
    return root / "questions_gen_postgres.csv"


# ----------------------------------------------------------------------------- conversion (no server)


def test_postgres_integer_division_becomes_duckdbs_integer_division(tmp_path):
    source = _defog_folder(tmp_path / "defog")
    columns = catalog_columns(source.parent / "flights.duckdb")
    converted = convert_sql(INTEGER_DIVISION, "postgres", columns)
    assert "// 60" in converted.sql and converted.fixes == ("integer_division",)
    result = run_query(source.parent / "flights.duckdb", converted.sql)
    assert result.ok and [tuple(r) for r in result.rows] == POSTGRES_ROWS[INTEGER_DIVISION]
    # Postgres's typing decides: a float cast, a numeric literal, avg and sum of a bigint divide as numbers
    for sql in (
        "SELECT arrival_time::float / 60 FROM flights",
        "SELECT arrival_time / 60.0 FROM flights",
        "SELECT AVG(seats) / 2 FROM flights",
        "SELECT SUM(arrival_time) / 2 FROM flights",
    ):
        assert "//" not in convert_sql(sql, "postgres", columns).sql, sql
    # ... while counts, sums of small integers, day differences and CTE columns stay integers
    for sql in (
        "SELECT COUNT(*) / 3 FROM flights",
        "SELECT SUM(seats) / 2 FROM flights",
        "SELECT (MAX(day) - MIN(day)) / 7 FROM flights",
        "WITH c AS (SELECT COUNT(*) AS n FROM flights) SELECT n / 3 FROM c",
        "SELECT t.s / 2 FROM (SELECT seats AS s FROM flights) AS t",
    ):
        assert "//" in convert_sql(sql, "postgres", columns).sql, sql
    # SQLite's own conversion is untouched by the Postgres fixes
    assert convert_sql("SELECT 7 / 2", "sqlite", {}).fixes == ("integer_division",)


def test_postgres_type_mapping_and_a_url_without_its_password():
    assert postgres_column_type("DECIMAL(12,3)") == "numeric(12,3)"
    assert postgres_column_type("TIMESTAMP WITH TIME ZONE") == "timestamptz"
    assert postgres_column_type("STRUCT(a INTEGER)") is None  # loaded as text
    assert describe_url("postgresql://me:secret@db.example:5433/gold") == "postgresql://me@db.example:5433/gold"


def test_verify_with_needs_postgres_gold_and_a_postgres_target(tmp_path):
    source = _defog_folder(tmp_path / "defog")
    from nl2sql_pipeline.errors import CaseValidationError

    with pytest.raises(CaseValidationError, match="postgresql:// URL"):
        import_benchmark("defog", source, tmp_path / "out" / "g.jsonl", verify_with="mysql://x")
    with pytest.raises(CaseValidationError, match="source dialect is duckdb"):
        import_benchmark("plain", source, tmp_path / "out" / "g.jsonl", verify_with="postgres")
    # without --format there is no converted gold to check
    assert main(["gold", "import", str(source), "--out", str(tmp_path / "g.jsonl"), "--verify-with", "postgres"]) == 2


# ----------------------------------------------------------------------------- against PostgreSQL


@pytest.mark.integration
def test_import_with_verify_with_postgres_keeps_conversions_that_return_postgres_rows(tmp_path, capsys):
    try:
        find_bin_dir()
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    source = _defog_folder(tmp_path / "defog")
    out = tmp_path / "gold" / "defog.jsonl"
    code = main(["gold", "import", str(source), "--format", "defog", "--out", str(out), "--verify-with", "postgres"])
    done = capsys.readouterr()
    assert code == 0, done.err
    assert "results checked against PostgreSQL 15" in done.out
    report = json.loads(report_path_for(out).read_text())
    assert report["verified_with"].startswith("PostgreSQL ") and "throwaway cluster" in report["verified_with"]
    queries = {q["source_sql"]: q for q in report["queries"]}
    # the integer division is kept, rewritten to //, and returns Postgres's rows
    kept = queries[INTEGER_DIVISION]
    assert kept["status"] == "verified" and kept["fixes"] == ["integer_division"] and "// 60" in kept["sql"]
    assert queries[POSTGRES_ONLY]["status"] == "verified"
    cases = {c.question: c for c in load_cases(out)}
    for question, sql in QUESTIONS[:2]:
        result = run_query(out.parent / cases[question].database, cases[question].expected_sql[0])
        assert result.ok and [tuple(r) for r in result.rows] == POSTGRES_ROWS[sql]
    # the conversion that returns other rows, and the one DuckDB cannot run, are left out with the reason
    differs = queries[ROUNDS_HALF_EVEN]
    assert differs["status"] == "result_differs" and differs["sql"] is None
    assert "DuckDB returns another result than PostgreSQL" in differs["reason"]
    assert QUESTIONS[2][0] not in cases and QUESTIONS[3][0] not in cases
    assert f"left out defog-3[0] ({source}:4): result_differs" in done.err
    assert (
        queries[NO_DUCKDB_FUNCTION]["status"] == "duckdb_failed"
        and "width_bucket" in queries[NO_DUCKDB_FUNCTION]["reason"]
    )
    # the array column is loaded as text, and the report says so
    assert "PostgreSQL: flights.tags (VARCHAR[]) loaded as text" in report["databases"][0]["notes"]


@pytest.mark.integration
def test_verify_with_a_url_uses_that_server_and_drops_its_schemas(tmp_path, postgres):
    source = _defog_folder(tmp_path / "defog")
    out = tmp_path / "gold" / "defog.jsonl"
    result = import_benchmark("defog", source, out, verify_with=postgres.dsn)
    assert result.verified_with is not None and postgres.password not in result.verified_with
    statuses = {q.source_sql: q.status for q in result.queries}
    assert statuses[INTEGER_DIVISION] == "verified" and statuses[ROUNDS_HALF_EVEN] == "result_differs"
    assert postgres.query("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'nl2sql_verify_%'") == [(0,)]


@pytest.mark.integration
def test_an_unreachable_server_is_one_line_and_exit_3(tmp_path, capsys):
    from nl2sql_pipeline.dialect.postgres_server import free_port

    source = _defog_folder(tmp_path / "defog")
    url = f"postgresql://nobody:secret@127.0.0.1:{free_port()}/none"
    code = main(
        ["gold", "import", str(source), "--format", "defog", "--out", str(tmp_path / "g.jsonl")]
        + ["--verify-with", url]
    )
    err = capsys.readouterr().err
    assert code == 3, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "cannot connect to PostgreSQL at postgresql://nobody@127.0.0.1" in lines[0]
    assert "secret" not in err
