"""Acceptance of the sandbox through ``nl2sql-eval sql``: hostile SQL is refused or fails with the right
class and never changes anything; runaway queries stop; huge results are capped; errors are classified."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from nl2sql_cli.main import main
from nl2sql_pipeline.execution import release_sandboxes

CANARY = "canary-7f3a9c"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A private storage root; pooled sandboxes are released after the test."""
    root = tmp_path / "home"
    monkeypatch.setenv("NL2SQL_HOME", str(root))
    yield root
    release_sandboxes()


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A small DuckDB file with two tables, built once per module."""
    path = tmp_path_factory.mktemp("template") / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE users(id INTEGER PRIMARY KEY, name VARCHAR, balance DECIMAL(10,2))")
    con.execute("INSERT INTO users VALUES (1, 'ann', 10.50), (2, 'bob', NULL), (3, 'cid', 0.25)")
    con.execute("CREATE TABLE orders(id INTEGER, user_id INTEGER, placed DATE, amount DOUBLE)")
    con.execute("INSERT INTO orders VALUES (10, 1, DATE '2024-01-02', 9.5), (11, 1, DATE '2024-02-03', 1.25)")
    con.execute(f"COPY (SELECT 42 AS secret) TO '{path.parent / 'secret.parquet'}' (FORMAT parquet)")
    con.close()
    return path


@pytest.fixture
def db(tmp_path, home, template) -> Path:
    """This test's copy of the database, with a Parquet file beside it that must stay unreadable."""
    folder = tmp_path / "data"
    folder.mkdir()
    for source in template.parent.iterdir():
        (folder / source.name).write_bytes(source.read_bytes())
    return folder / template.name


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_json(capsys, db: Path, sql: str, *extra: str) -> tuple[int, dict]:
    code = main(["sql", "--database", str(db), "--sql", sql, "--json", *extra])
    out = capsys.readouterr().out
    return code, json.loads(out)


# (sql, expected error class, refused by the statement check before reaching DuckDB?); {dir} is the
# folder holding the database.
HOSTILE: list[tuple[str, str, bool]] = [
    # file and network reads
    ("SELECT * FROM read_csv('/etc/passwd')", "forbidden", False),
    ("SELECT * FROM '/etc/passwd'", "forbidden", False),
    ("SELECT * FROM read_parquet('{dir}/secret.parquet')", "forbidden", False),
    ("SELECT * FROM '{dir}/secret.parquet'", "forbidden", False),
    ("SELECT * FROM glob('/etc/*')", "forbidden", False),
    ("SELECT * FROM read_text('/etc/passwd')", "forbidden", False),
    ("SELECT * FROM read_blob('/etc/hostname')", "forbidden", False),
    ("SELECT * FROM read_json_auto('/etc/passwd')", "forbidden", False),
    ("SELECT * FROM 'https://example.com/data.csv'", "forbidden", False),
    ("SELECT * FROM query('DELETE FROM users')", "forbidden", False),
    # exports, attach, extensions, settings
    ("COPY users TO '{dir}/out.csv'", "forbidden", True),
    ("COPY (SELECT * FROM users) TO '{dir}/out.parquet' (FORMAT parquet)", "forbidden", True),
    ("EXPORT DATABASE '{dir}/export'", "forbidden", True),
    ("ATTACH '{dir}/other.duckdb' AS other", "forbidden", True),
    ("ATTACH ':memory:' AS scratch", "forbidden", True),
    ("DETACH shop", "forbidden", True),
    ("INSTALL httpfs", "forbidden", True),
    ("LOAD httpfs", "forbidden", True),
    ("UPDATE EXTENSIONS", "forbidden", True),
    ("SET enable_external_access = true", "forbidden", True),
    ("SET threads = 8", "forbidden", True),
    ("RESET lock_configuration", "forbidden", True),
    ("USE memory", "forbidden", True),
    ("CREATE SECRET s (TYPE s3, KEY_ID 'x', SECRET 'y')", "forbidden", True),
    # every kind of write
    ("INSERT INTO users VALUES (4, 'eve', 1)", "forbidden", True),
    ("INSERT INTO users SELECT * FROM users RETURNING *", "forbidden", True),
    ("UPDATE users SET balance = 0", "forbidden", True),
    ("DELETE FROM users", "forbidden", True),
    ("TRUNCATE users", "forbidden", True),
    ("MERGE INTO users USING users AS u ON users.id = u.id WHEN MATCHED THEN DELETE", "forbidden", True),
    ("CREATE TABLE t2 AS SELECT * FROM users", "forbidden", True),
    ("CREATE VIEW v AS SELECT * FROM users", "forbidden", True),
    ("CREATE TEMP TABLE users AS SELECT 99 AS id", "forbidden", True),
    ("CREATE MACRO twice(x) AS x * 2", "forbidden", True),
    ("CREATE TEMP MACRO twice(x) AS x * 2", "forbidden", True),
    ("CREATE SEQUENCE seq", "forbidden", True),
    ("DROP TABLE users", "forbidden", True),
    ("ALTER TABLE users ADD COLUMN x INTEGER", "forbidden", True),
    ("ALTER TABLE users RENAME TO people", "forbidden", True),
    ("COMMENT ON TABLE users IS 'x'", "forbidden", True),
    # several statements, plain and smuggled past comments and strings
    ("SELECT 1; DROP TABLE users", "forbidden", True),
    ("SELECT 1 /* harmless */; DELETE FROM users", "forbidden", True),
    ("SELECT 1 -- comment\n; DROP TABLE users", "forbidden", True),
    ("SELECT ';' AS s; DELETE FROM users", "forbidden", True),
    ("SELECT 1;\n/* ; */ UPDATE users SET name = 'x'", "forbidden", True),
    # a data-modifying CTE parses as SELECT; the read-only database refuses it
    ("WITH d AS (DELETE FROM users RETURNING *) SELECT count(*) FROM d", "forbidden", False),
    # statements that are not queries
    ("EXPLAIN ANALYZE SELECT * FROM users", "forbidden", True),
    ("EXPLAIN SELECT * FROM users", "forbidden", True),
    ("PRAGMA table_info('users')", "forbidden", True),
    ("PRAGMA database_size", "forbidden", True),
    ("CALL pragma_version()", "forbidden", True),
    ("CHECKPOINT", "forbidden", True),
    ("FORCE CHECKPOINT", "forbidden", True),
    ("VACUUM", "forbidden", True),
    ("BEGIN TRANSACTION", "forbidden", True),
    ("PREPARE p AS SELECT 1", "forbidden", True),
    ("", "forbidden", True),
    ("  -- nothing but a comment", "forbidden", True),
]


def check_refused(capsys, db: Path, sql: str, expected_class: str, refused_before_execution: bool) -> None:
    code, result = run_json(capsys, db, sql)
    assert code == 1, sql
    assert result["ok"] is False, sql
    assert result["error_class"] == expected_class, (sql, result["error_message"])
    assert result["rows"] == [] and result["error_message"], sql
    if refused_before_execution:
        assert result["elapsed_ms"] == 0, sql  # refused by the statement check, never sent to DuckDB
    assert "root:" not in json.dumps(result), sql


@pytest.mark.parametrize("sql, expected_class, refused_before_execution", HOSTILE, ids=[h[0][:60] for h in HOSTILE])
def test_hostile_statement_is_refused_and_changes_nothing(capsys, db, sql, expected_class, refused_before_execution):
    before, listing = sha256(db), sorted(p.name for p in db.parent.iterdir())
    check_refused(capsys, db, sql.format(dir=db.parent), expected_class, refused_before_execution)
    assert sha256(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == listing  # no out.csv, export/, other.duckdb, .wal


def test_database_is_byte_identical_after_all_hostile_statements(capsys, db):
    before = sha256(db)
    listing = sorted(p.name for p in db.parent.iterdir())
    for sql, expected_class, refused_before_execution in HOSTILE:
        check_refused(capsys, db, sql.format(dir=db.parent), expected_class, refused_before_execution)
    assert sha256(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == listing
    code, result = run_json(capsys, db, "SELECT count(*) AS n, sum(balance) AS b FROM users")
    assert code == 0 and result["rows"] == [[3, {"$dec": "10.75"}]]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM glob('/etc/*')",
    ],
)
def test_file_reads_are_refused_in_text_mode(capsys, db, sql):
    code = main(["sql", "--database", str(db), "--sql", sql])
    captured = capsys.readouterr()
    assert code == 1
    assert "query refused (forbidden)" in captured.err
    assert "root:" not in captured.out + captured.err


def test_parquet_beside_the_database_is_not_readable(capsys, db):
    code, result = run_json(capsys, db, f"SELECT * FROM read_parquet('{db.parent / 'secret.parquet'}')")
    assert (code, result["error_class"]) == (1, "forbidden")
    assert "42" not in json.dumps(result["rows"])


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("SELEC name FROM users", "syntax"),
        ("SELECT name FROM users WHERE", "syntax"),
        ("SELECT nickname FROM users", "binder"),
        ("SELECT name FROM users GROUP BY id", "binder"),
        ("SELECT * FROM customers", "catalog"),
        ("SELECT no_such_function(1)", "catalog"),
        ("SELECT CAST('abc' AS INTEGER)", "runtime"),
    ],
)
def test_errors_are_classified(capsys, db, sql, expected):
    code, result = run_json(capsys, db, sql)
    assert code == 1
    assert result["error_class"] == expected, result["error_message"]
    text_code = main(["sql", "--database", str(db), "--sql", sql])
    assert text_code == 1
    assert f"query failed ({expected})" in capsys.readouterr().err


def test_runaway_cross_join_stops_at_the_timeout(capsys, db):
    sql = "SELECT count(*) FROM range(1000000000) AS a, range(1000000000) AS b"
    # a query that is not stopped would run for hours: pytest-timeout fails the test then; here the sandbox
    # interrupts it at its timeout and says so
    code, result = run_json(capsys, db, sql, "--timeout", "0.5")
    assert code == 1
    assert result["error_class"] == "timeout"
    assert "0.5 s timeout" in result["error_message"]
    assert result["elapsed_ms"] >= 500


def test_huge_result_is_capped_and_flagged(capsys, db):
    code, result = run_json(capsys, db, "SELECT * FROM range(1000000)")
    assert code == 0
    assert result["truncated"] is True
    assert result["row_count"] == 10_000 and len(result["rows"]) == 10_000
    assert result["rows"][-1] == [9_999]
    code = main(["sql", "--database", str(db), "--sql", "SELECT * FROM range(1000000)", "--row-cap", "120"])
    out = capsys.readouterr().out
    assert code == 0
    assert "... 70 more" in out
    assert "(120 rows, truncated)" in out


def test_text_table_is_aligned_with_nulls(capsys, db):
    code = main(["sql", "--database", str(db), "--sql", "SELECT id, name, balance FROM users ORDER BY id"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[0].split("|")[1].strip() == "name"
    assert len({line.index("|") for line in lines[:5] if "|" in line}) == 1  # one column boundary
    assert "NULL" in lines[3]
    assert lines[-1].startswith("(3 rows)")


def test_json_output_has_every_field_and_codec_values(capsys, db):
    code, result = run_json(capsys, db, "SELECT name, balance, DATE '2024-01-31' AS d FROM users WHERE id = 1")
    assert code == 0
    assert set(result) == {
        "ok",
        "columns",
        "column_types",
        "rows",
        "row_count",
        "truncated",
        "error_class",
        "error_message",
        "elapsed_ms",
    }
    assert result["columns"] == ["name", "balance", "d"]
    assert result["column_types"] == ["VARCHAR", "DECIMAL(10,2)", "DATE"]
    assert result["rows"] == [["ann", {"$dec": "10.50"}, {"$date": "2024-01-31"}]]
    assert (result["row_count"], result["truncated"], result["error_class"]) == (1, False, None)


def test_environment_does_not_leak(capsys, db, tmp_path, monkeypatch):
    fake_home = tmp_path / f"home-{CANARY}"
    fake_home.mkdir()
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("NL2SQL_CANARY_SECRET", CANARY)
    queries = [
        "SELECT getenv('NL2SQL_CANARY_SECRET')",
        "SELECT getenv('HOME')",
        "SELECT current_setting('home_directory')",
        "SELECT name, value FROM duckdb_settings()",
        "SELECT * FROM duckdb_secrets()",
        "SELECT * FROM duckdb_extensions()",
        "SELECT * FROM which_secret('s3://bucket/x', 's3')",
        "SELECT * FROM pg_catalog.pg_settings",
    ]
    outputs = []
    for sql in queries:
        code = main(["sql", "--database", str(db), "--sql", sql, "--json"])
        captured = capsys.readouterr()
        outputs.append(captured.out + captured.err)
        assert code in (0, 1)
    joined = "\n".join(outputs)
    assert CANARY not in joined
    assert json.loads(outputs[0])["error_class"] == "catalog"  # getenv does not exist in this build


def test_database_by_name_and_missing_database(capsys, home, db):
    code = main(["sql", "--database", "anime_platform", "--sql", "SELECT 1"])
    err = capsys.readouterr().err
    assert code == 3
    assert "nl2sql-eval db build" in err and "anime_platform" in err
    code = main(["sql", "--database", str(db.parent / "nope.duckdb"), "--sql", "SELECT 1"])
    err = capsys.readouterr().err
    assert code == 3 and "does not exist" in err
    built = home / "databases" / "shop.duckdb"
    built.parent.mkdir(parents=True, exist_ok=True)
    built.write_bytes(db.read_bytes())
    code, result = run_json(capsys, db, "SELECT count(*) FROM orders")
    assert code == 0 and result["rows"] == [[2]]
    code = main(["sql", "--database", "shop", "--sql", "SELECT count(*) AS n FROM users", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["rows"] == [[3]]


def test_not_a_duckdb_file_is_an_environment_error(capsys, tmp_path, home):
    bogus = tmp_path / "bogus.duckdb"
    bogus.write_text("not a database")
    code = main(["sql", "--database", str(bogus), "--sql", "SELECT 1"])
    assert code == 3
    assert "cannot open" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flag, value", [("--timeout", "0"), ("--timeout", "-1"), ("--timeout", "nan"), ("--row-cap", "-5")]
)
def test_bad_limits_exit_2(capsys, db, flag, value):
    code = main(["sql", "--database", str(db), "--sql", "SELECT 1", flag, value])
    assert code == 2
    assert flag in capsys.readouterr().err


def test_sql_from_stdin(capsys, db, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("SELECT name FROM users WHERE id = 2"))
    code, result = run_json(capsys, db, "-")
    assert code == 0 and result["rows"] == [["bob"]]


def test_isolated_flag_runs_in_a_worker(capsys, db):
    code, result = run_json(capsys, db, "SELECT count(*) FROM users", "--isolated")
    assert code == 0 and result["rows"] == [[3]]
    code, result = run_json(capsys, db, "DROP TABLE users", "--isolated")
    assert (code, result["error_class"]) == (1, "forbidden")
