"""The sandbox's core API: statement check, error classes, timeouts, caps, pooling, concurrency, backstop."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pytest

from nl2sql_pipeline.errors import DatabaseNotFoundError
from nl2sql_pipeline.execution import (
    ERROR_CLASSES,
    QueryResult,
    Sandbox,
    SandboxLimits,
    SandboxLimitsError,
    classify_error,
    release_sandboxes,
    run_query,
    run_query_isolated,
    statement_check,
)
from nl2sql_pipeline.execution.pool import POOL, SandboxPool
from nl2sql_pipeline.execution.scheduler import Scheduler

RUNAWAY = "SELECT count(*) FROM range(1000000000) AS a, range(1000000000) AS b"


@pytest.fixture
def home(tmp_path, monkeypatch):
    root = tmp_path / "home"
    monkeypatch.setenv("NL2SQL_HOME", str(root))
    yield root
    release_sandboxes()


def make_db(path: Path, rows: int = 3) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t(x INTEGER, y VARCHAR, z DECIMAL(6,2))")
    con.execute("INSERT INTO t SELECT i, 'v' || i, i / 4 FROM range(?) r(i)", [rows])
    con.close()
    return path


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return make_db(tmp_path_factory.mktemp("template") / "t.duckdb")


@pytest.fixture
def db(tmp_path, home, template) -> Path:
    """This test's own copy of a 3-row database."""
    path = tmp_path / "t.duckdb"
    path.write_bytes(template.read_bytes())
    return path


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "select x from t where x > 1 order by x",
        "WITH a AS (SELECT * FROM t) SELECT * FROM a",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r",
        "SELECT 1 UNION ALL SELECT 2 EXCEPT SELECT 3",
        "FROM t",
        "FROM t SELECT x",
        "VALUES (1), (2)",
        "TABLE t",
        "(SELECT 1)",
        "PIVOT t ON x IN (0, 1) USING sum(z)",
        "PIVOT t ON y USING sum(z)",  # values found at run time: DuckDB's MULTI rewrite
        "SELECT * FROM (PIVOT t ON y USING sum(z))",
        "UNPIVOT (SELECT 1 AS a, 2 AS b) ON a, b INTO NAME k VALUE v",
        "DESCRIBE t",
        "SELECT 1; ",
        "SELECT 1 -- trailing comment; DROP TABLE t",
        "/* leading */ SELECT ';'",
    ],
)
def test_statement_check_accepts_single_queries(sql):
    assert statement_check(sql) is None


@pytest.mark.parametrize(
    "sql, reason",
    [
        ("", "empty"),
        ("   \n ", "empty"),
        (";", "no statement"),
        ("-- just a comment", "no statement"),
        ("SELECT 1; SELECT 2", "2 statements"),
        ("SELECT 1; DROP TABLE t", "DROP"),
        ("EXPLAIN SELECT 1", "EXPLAIN"),
        ("EXPLAIN ANALYZE SELECT 1", "EXPLAIN"),
        ("PRAGMA version", "PRAGMA"),
        ("CALL pragma_version()", "CALL"),
        ("CHECKPOINT", "CALL"),
        ("SET threads = 4", "SET"),
        ("COPY t TO 'x.csv'", "COPY"),
        ("ATTACH 'x.duckdb'", "ATTACH"),
        ("LOAD httpfs", "LOAD"),
        ("INSERT INTO t VALUES (1, 'a', 1)", "INSERT"),
        ("CREATE TEMP TABLE t AS SELECT 1", "CREATE"),
        ("UPDATE EXTENSIONS", "unknown-type"),
        ("SELEC 1", "does not parse"),
    ],
)
def test_statement_check_refuses_everything_else(sql, reason):
    message = statement_check(sql)
    assert message is not None and reason in message


def test_statement_check_rejects_non_strings():
    assert "must be a string" in statement_check(None)  # type: ignore[arg-type]


def test_result_shape_types_and_values(db):
    result = run_query(db, "SELECT x, y, z FROM t ORDER BY x")
    assert result.ok and result.error_class is None and result.error_message is None
    assert result.columns == ["x", "y", "z"]
    assert result.column_types == ["INTEGER", "VARCHAR", "DECIMAL(6,2)"]
    assert result.rows == [(0, "v0", pytest.approx(0)), (1, "v1", pytest.approx(0.25)), (2, "v2", pytest.approx(0.5))]
    assert str(result.rows[1][2]) == "0.25"
    assert not result.truncated and 0 < result.elapsed_ms < 5_000


@pytest.mark.parametrize("cap, expected_rows, truncated", [(0, 0, True), (2, 2, True), (3, 3, False), (10, 3, False)])
def test_row_cap_boundaries(db, cap, expected_rows, truncated):
    result = run_query(db, "SELECT * FROM t ORDER BY x", SandboxLimits(row_cap=cap))
    assert len(result.rows) == expected_rows
    assert result.truncated is truncated


def test_huge_result_is_fetched_only_up_to_the_cap(db):
    started = time.perf_counter()
    result = run_query(db, "SELECT * FROM range(100000000)", SandboxLimits(row_cap=5))
    assert result.rows == [(0,), (1,), (2,), (3,), (4,)] and result.truncated
    assert time.perf_counter() - started < 2.0  # 1e8 rows were never materialized


def test_timeout_interrupts_and_the_sandbox_stays_usable(db):
    with Sandbox(db, SandboxLimits(timeout_s=0.3)) as sandbox:
        started = time.perf_counter()
        result = sandbox.run(RUNAWAY)
        assert result.error_class == "timeout" and not result.ok
        assert time.perf_counter() - started < 0.3 + 1.0
        assert 300 <= result.elapsed_ms < 1300
        follow_up = sandbox.run("SELECT count(*) FROM t")
        assert follow_up.ok and follow_up.rows == [(3,)]


def test_recursive_cte_without_end_times_out(db):
    sql = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    result = run_query(db, sql, SandboxLimits(timeout_s=0.3))
    assert result.error_class == "timeout"


def test_memory_and_spill_limits_give_resource(db, tmp_path):
    limits = SandboxLimits(memory_limit="16MB", max_temp_directory_size="1MB", timeout_s=5)
    result = run_query(db, "SELECT count(DISTINCT range::VARCHAR) FROM range(3000000)", limits)
    assert result.error_class == "resource", result.error_message
    assert not (tmp_path / "t.duckdb.tmp").exists()  # spill space lives under the storage root


def test_dynamic_pivot_runs_and_leaves_nothing_behind(db):
    with Sandbox(db) as sandbox:
        pivot = sandbox.run("PIVOT t ON y USING sum(z)")
        assert pivot.ok and pivot.columns == ["x", "v0", "v1", "v2"]
        types = sandbox.run("SELECT count(*) FROM duckdb_types() WHERE NOT internal AND type_name LIKE '%pivot%'")
        assert types.ok and types.rows == [(0,)]


def test_each_query_gets_a_fresh_connection(db):
    with Sandbox(db) as sandbox:
        first = sandbox.run("SELECT current_setting('lock_configuration') AS locked, txid_current() AS tx")
        second = sandbox.run("SELECT current_setting('lock_configuration') AS locked, txid_current() AS tx")
        assert first.rows[0][0] is True and second.rows[0][0] is True
        assert first.rows[0][1] != second.rows[0][1]  # a new transaction context each time


def test_classification_of_duckdb_exceptions():
    cases = [
        (duckdb.InterruptException("INTERRUPT Error: Interrupted!"), "", "timeout"),
        (duckdb.ParserException("Parser Error: syntax error"), "", "syntax"),
        (duckdb.BinderException("Binder Error: column"), "", "binder"),
        (
            duckdb.CatalogException("Catalog Error: Table with name nope does not exist!"),
            "SELECT * FROM nope",
            "catalog",
        ),
        (
            duckdb.CatalogException("Catalog Error: Table with name /x does not exist!"),
            "SELECT * FROM '/x'",
            "forbidden",
        ),
        (duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate"), "", "resource"),
        (duckdb.PermissionException("Permission Error: Cannot access file"), "", "forbidden"),
        (
            duckdb.InvalidInputException('Cannot execute statement of type "SELECT" ... read-only mode!'),
            "",
            "forbidden",
        ),
        (duckdb.ConversionException("Conversion Error: Could not convert"), "", "runtime"),
        (duckdb.IOException("IO Error: No space left on device"), "", "resource"),
    ]
    for exc, sql, expected in cases:
        assert classify_error(exc, sql) == expected, exc
        assert expected in ERROR_CLASSES


def test_a_catalog_error_is_not_mistaken_for_a_file_read(db):
    result = run_query(db, "SELECT * FROM nope WHERE 'nope' = 'nope'")
    assert result.error_class == "catalog"
    for sql in ("SELECT * FROM t, '/etc/shadow'", "SELECT * FROM t JOIN '/etc/shadow' ON true"):
        assert run_query(db, sql).error_class == "forbidden", sql


def test_missing_database_raises(tmp_path, home):
    with pytest.raises(DatabaseNotFoundError, match="nl2sql-eval db build"):
        run_query(tmp_path / "absent.duckdb", "SELECT 1")


@pytest.mark.parametrize(
    "field, value",
    [("timeout_s", 0), ("timeout_s", float("nan")), ("row_cap", -1), ("threads", 0), ("memory_limit", "lots")],
)
def test_limits_are_validated(field, value):
    with pytest.raises(SandboxLimitsError, match=field):
        SandboxLimits(**{field: value})


def test_failure_rejects_unknown_error_class():
    with pytest.raises(ValueError):
        QueryResult.failure("oops", "x")


def test_pool_reuses_one_database_and_stays_cheap(db):
    run_query(db, "SELECT 1")
    opened = POOL.open_count()
    started = time.perf_counter()
    for _ in range(200):
        assert run_query(db, "SELECT x FROM t WHERE x = 1").rows == [(1,)]
    per_query_ms = (time.perf_counter() - started) * 1000 / 200
    assert POOL.open_count() == opened
    assert per_query_ms < 10  # a fresh database instance per query would cost 15-30 ms


def test_other_read_only_connections_coexist_with_the_pool(db):
    assert run_query(db, "SELECT count(*) FROM t").rows == [(3,)]
    reader = duckdb.connect(str(db), read_only=True)  # e.g. a schema reader elsewhere in the process
    try:
        assert reader.execute("SELECT count(*) FROM information_schema.columns WHERE table_name = 't'").fetchone() == (
            3,
        )
    finally:
        reader.close()


def test_a_replaced_database_file_is_reopened(db, tmp_path):
    assert run_query(db, "SELECT count(*) FROM t").rows == [(3,)]
    replacement = make_db(tmp_path / "new.duckdb", rows=7)
    os.replace(replacement, db)
    assert run_query(db, "SELECT count(*) FROM t").rows == [(7,)]


def test_idle_sandboxes_are_closed(db, tmp_path):
    pool = SandboxPool(idle_close_s=0.1)
    assert pool.run(db, "SELECT 1").ok
    assert pool.open_count() == 1
    deadline = time.monotonic() + 3
    while pool.open_count() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pool.open_count() == 0
    assert pool.run(db, "SELECT 2").rows == [(2,)]
    pool.release()


def test_concurrent_queries_from_threads(db):
    limits = SandboxLimits(timeout_s=0.5)

    def one(i: int) -> QueryResult:
        return run_query(db, RUNAWAY if i == 0 else f"SELECT {i} + count(*) FROM t", limits)

    with ThreadPoolExecutor(max_workers=8) as executor:
        results = list(executor.map(one, range(40)))
    assert results[0].error_class == "timeout"
    assert [r.rows for r in results[1:]] == [[(i + 3,)] for i in range(1, 40)]


def test_scheduler_repeats_until_cancelled_and_never_after():
    scheduler = Scheduler(name="test-scheduler")
    calls: list[float] = []
    ticket = scheduler.schedule(0.02, lambda: calls.append(time.monotonic()), repeat_s=0.01)
    time.sleep(0.15)
    fired = Scheduler.cancel(ticket)
    count = len(calls)
    time.sleep(0.05)
    assert fired == count >= 3  # re-sent, as an interrupt must be when it lands before execution starts
    assert len(calls) == count
    cancelled = scheduler.schedule(0.05, lambda: calls.append(-1.0))
    assert Scheduler.cancel(cancelled) == 0
    time.sleep(0.1)
    assert -1.0 not in calls


def test_scheduler_survives_a_failing_callback():
    scheduler = Scheduler(name="test-scheduler-2")
    done = threading.Event()
    scheduler.schedule(0.0, lambda: 1 / 0)
    scheduler.schedule(0.01, done.set)
    assert done.wait(2)


def test_isolated_runner_kills_a_query_that_ignores_interrupt(db):
    sql = "SELECT length(repeat('x', 1000000000))"  # one huge value: no interrupt check for ~10 s in-process
    warm = run_query_isolated(db, "SELECT count(*) FROM t")  # starts the worker
    assert warm.rows == [(3,)]
    started = time.perf_counter()
    result = run_query_isolated(db, sql, SandboxLimits(timeout_s=0.2), grace_s=0.3)
    assert result.error_class == "timeout"
    assert "killed" in result.error_message or "interrupted" in result.error_message
    assert time.perf_counter() - started < 3.0
    assert run_query_isolated(db, "SELECT 7").rows == [(7,)]  # a new worker took over


def test_isolated_runner_refuses_without_a_worker_and_reports_missing_databases(db, tmp_path):
    assert run_query_isolated(db, "DROP TABLE t").error_class == "forbidden"
    assert run_query_isolated(db, "SELEC").error_class == "syntax"
    with pytest.raises(DatabaseNotFoundError):
        run_query_isolated(tmp_path / "absent.duckdb", "SELECT 1")


def test_a_stage_hold_acquires_each_database_once_and_gives_it_back(tmp_path, monkeypatch):
    from nl2sql_pipeline.execution import held_sandboxes
    from nl2sql_pipeline.execution.pool import POOL

    db = tmp_path / "held.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t AS SELECT range AS x FROM range(5)")
    con.close()
    acquired = []
    real_acquire = POOL._acquire
    monkeypatch.setattr(POOL, "_acquire", lambda path, limits: acquired.append(path) or real_acquire(path, limits))
    with held_sandboxes() as run:
        results = [run(db, "SELECT count(*) FROM t") for _ in range(3)]
        refused = run(db, "DROP TABLE t")
        entry = next(e for e in POOL._entries.values() if e.sandbox.db_path == db.resolve())
        assert entry.in_use == 1  # held for the whole block, not per query
    assert [r.rows for r in results] == [[(5,)]] * 3 and refused.error_class == "forbidden"
    assert acquired == [db] and entry.in_use == 0
    with held_sandboxes() as run, pytest.raises(DatabaseNotFoundError):
        run(tmp_path / "missing.duckdb", "SELECT 1")
    release_sandboxes(db)
