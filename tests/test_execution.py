"""The sandbox's core API: statement check, error classes, timeouts, caps, pooling, concurrency, backstop."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pytest

import nl2sql_pipeline.execution.isolated as isolated_module
import nl2sql_pipeline.execution.sandbox as sandbox_module
from nl2sql_pipeline.errors import DatabaseNotFoundError
from nl2sql_pipeline.execution import (
    ERROR_CLASSES,
    IsolatedRunner,
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


@pytest.mark.parametrize("sql", ["SELECT '\ud800'", "SELECT \udcff\udcfe"])
def test_text_that_is_not_unicode_is_refused_not_raised(db, sql):
    """A lone surrogate (undecodable bytes read with surrogateescape, or '\\ud800' in a JSON reply) is refused."""
    assert "not valid text" in statement_check(sql)
    result = run_query(db, sql)
    assert result.error_class == "forbidden" and "UTF-8" in result.error_message


def test_statement_check_rejects_non_strings():
    assert "must be a string" in statement_check(None)  # type: ignore[arg-type]  # a non-string, on purpose


def test_result_shape_types_and_values(db):
    started = time.perf_counter()
    result = run_query(db, "SELECT x, y, z FROM t ORDER BY x")
    caller_ms = (time.perf_counter() - started) * 1000
    assert result.ok and result.error_class is None and result.error_message is None
    assert result.columns == ["x", "y", "z"]
    assert result.column_types == ["INTEGER", "VARCHAR", "DECIMAL(6,2)"]
    assert result.rows == [(0, "v0", pytest.approx(0)), (1, "v1", pytest.approx(0.25)), (2, "v2", pytest.approx(0.5))]
    assert str(result.rows[1][2]) == "0.25"
    assert not result.truncated
    assert 0 < result.elapsed_ms <= caller_ms  # milliseconds, measured inside the call (not a speed bound)


@pytest.mark.parametrize("cap, expected_rows, truncated", [(0, 0, True), (2, 2, True), (3, 3, False), (10, 3, False)])
def test_row_cap_boundaries(db, cap, expected_rows, truncated):
    result = run_query(db, "SELECT * FROM t ORDER BY x", SandboxLimits(row_cap=cap))
    assert len(result.rows) == expected_rows
    assert result.truncated is truncated


def test_huge_result_is_fetched_only_up_to_the_cap(db):
    # a row far past the cap raises when it is computed: fetching it (or materializing the whole result)
    # would turn the result into an error; streaming fetches stop at row_cap + 1
    sql = (
        "SELECT CASE WHEN range < 50000000 THEN range ELSE error('computed past the cap') END AS r "
        "FROM range(100000000)"
    )
    result = run_query(db, sql, SandboxLimits(row_cap=5, timeout_s=60))
    assert result.ok, result.error_message
    assert result.rows == [(0,), (1,), (2,), (3,), (4,)] and result.truncated


def test_large_values_under_the_row_cap_are_bounded_by_max_result_bytes(db):
    """DuckDB's memory limit does not bound rows converted to Python: 10,000 rows of 200 KB would be 2 GB."""
    limits = SandboxLimits(max_result_bytes=4 * 1024 * 1024, timeout_s=60)
    result = run_query(db, "SELECT repeat('x', 200000) AS v FROM range(10000)", limits)
    assert result.error_class == "resource" and not result.ok
    assert "max_result_bytes" in result.error_message and "fewer or shorter columns" in result.error_message
    nested = run_query(db, "SELECT [repeat('x', 2000), 'y'] AS l FROM range(10000)", limits)
    assert nested.error_class == "resource"  # values inside lists count too


@pytest.mark.parametrize("cap", [3000, 2500, 1024, 1023])
def test_measured_fetch_returns_the_rows_a_plain_fetch_does(db, cap):
    """Text columns are fetched in chunks (to measure them): same rows, same truncation, at every boundary."""
    sql = "SELECT range AS i, 'v' || range AS s FROM range(2500) ORDER BY i"
    result = run_query(db, sql, SandboxLimits(row_cap=cap))
    assert result.ok and result.rows == [(i, f"v{i}") for i in range(min(cap, 2500))]
    assert result.truncated is (cap < 2500)
    fixed = run_query(db, "SELECT range AS i FROM range(2500) ORDER BY i", SandboxLimits(row_cap=cap))
    assert fixed.rows == [(i,) for i in range(min(cap, 2500))] and fixed.truncated is (cap < 2500)


def test_timeout_interrupts_and_the_sandbox_stays_usable(db):
    with Sandbox(db, SandboxLimits(timeout_s=0.3)) as sandbox:
        result = sandbox.run(RUNAWAY)  # 1e18 rows: it returns at all only because the interrupt stopped it
        assert result.error_class == "timeout" and not result.ok
        assert "was interrupted" in result.error_message
        assert result.elapsed_ms >= 300  # not before its deadline
        follow_up = sandbox.run("SELECT count(*) FROM t")
        assert follow_up.ok and follow_up.rows == [(3,)]


def test_ctrl_c_during_a_query_reaches_the_caller(db):
    """SIGINT while DuckDB runs a query: DuckDB stops it and swallows the KeyboardInterrupt (RuntimeError 'Query
    interrupted'); the sandbox raises it again instead of recording a failed query."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    try:
        with Sandbox(db, SandboxLimits(timeout_s=60)) as sandbox:
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                sandbox.run(RUNAWAY)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert run_query(db, "SELECT error('Query interrupted')").error_class == "runtime"  # a query cannot fake it


def test_recursive_cte_without_end_times_out(db):
    sql = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    result = run_query(db, sql, SandboxLimits(timeout_s=0.3))
    assert result.error_class == "timeout"


def test_memory_and_spill_limits_give_resource(db, tmp_path):
    # a generous timeout: on a loaded machine the query must still reach the limit, not the deadline
    limits = SandboxLimits(memory_limit="16MB", max_temp_directory_size="1MB", timeout_s=120)
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
    [
        ("timeout_s", 0),
        ("timeout_s", float("nan")),
        ("row_cap", -1),
        ("row_cap", 10**20),
        ("threads", 0),
        ("memory_limit", "lots"),
        ("max_result_bytes", 0),
        ("max_result_bytes", 1.5),
    ],
)
def test_limits_are_validated(field, value):
    with pytest.raises(SandboxLimitsError, match=field):
        SandboxLimits(**{field: value})


def test_failure_rejects_unknown_error_class():
    with pytest.raises(ValueError):
        QueryResult.failure("oops", "x")


def test_pool_reuses_one_database_instance_for_every_query(db, monkeypatch):
    # opening a DuckDB instance is what costs (30-40 ms, benchmarks/bench_pipeline.py); count the opens
    opened: list[Path] = []
    real_open = sandbox_module._open_locked_down

    def counting_open(db_path: Path, folder: Path, limits: SandboxLimits) -> duckdb.DuckDBPyConnection:
        opened.append(db_path)
        return real_open(db_path, folder, limits)

    monkeypatch.setattr(sandbox_module, "_open_locked_down", counting_open)
    assert run_query(db, "SELECT 1").rows == [(1,)]
    assert opened == [db.resolve()]  # this test's fresh file: the first query opened its instance
    held = POOL.open_count()
    for _ in range(200):
        assert run_query(db, "SELECT x FROM t WHERE x = 1").rows == [(1,)]
    assert opened == [db.resolve()] and POOL.open_count() == held  # ... and no query opened another


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
    deadline = time.monotonic() + 30
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


def passed_by(scheduler: Scheduler, delay_s: float) -> bool:
    """True once a ticket due ``delay_s`` from now has fired: every ticket due before it was handled first."""
    marker = threading.Event()
    scheduler.schedule(delay_s, marker.set)
    return marker.wait(30)


def test_scheduler_repeats_until_cancelled_and_never_after():
    scheduler = Scheduler(name="test-scheduler")
    calls: list[float] = []
    ticket = scheduler.schedule(0.02, lambda: calls.append(time.monotonic()), repeat_s=0.01)
    deadline = time.monotonic() + 30
    while len(calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    fired = Scheduler.cancel(ticket)
    count = len(calls)
    assert fired == count >= 3  # re-sent, as an interrupt must be when it lands before execution starts
    assert passed_by(scheduler, 0.05)  # its next repeat (due in 0.01 s) would have come before this
    assert len(calls) == count
    cancelled = scheduler.schedule(0.05, lambda: calls.append(-1.0))
    assert Scheduler.cancel(cancelled) == 0
    assert passed_by(scheduler, 0.1)
    assert -1.0 not in calls


def test_scheduler_survives_a_failing_callback():
    scheduler = Scheduler(name="test-scheduler-2")
    done = threading.Event()
    scheduler.schedule(0.0, lambda: 1 / 0)
    scheduler.schedule(0.01, done.set)
    assert done.wait(30)


def test_isolated_runner_kills_a_query_that_ignores_interrupt(db):
    sql = "SELECT length(repeat('x', 1000000000))"  # one huge value: no interrupt check for 10-20 s in-process
    warm = run_query_isolated(db, "SELECT count(*) FROM t")  # starts the worker
    assert warm.rows == [(3,)]
    worker = isolated_module._RUNNER._process
    assert worker is not None and worker.poll() is None
    result = run_query_isolated(db, sql, SandboxLimits(timeout_s=0.2), grace_s=0.3)
    assert result.error_class == "timeout"
    assert "ignored interrupt and its process was killed" in result.error_message  # not merely interrupted
    assert worker.returncode == -signal.SIGKILL  # the backstop killed the worker that ran the query
    assert result.elapsed_ms >= (0.2 + 0.3) * 1000  # only after the timeout and the grace
    assert run_query_isolated(db, "SELECT 7").rows == [(7,)]  # a new worker took over
    assert isolated_module._RUNNER._process is not None and isolated_module._RUNNER._process.pid != worker.pid


def test_isolated_worker_ignores_ctrl_c_meant_for_its_parent(db):
    """SIGINT goes to the whole process group; the worker leaves the stopping to its parent."""
    runner = IsolatedRunner()
    try:
        assert runner.run(db, "SELECT 1 AS one").rows == [(1,)]
        worker = runner._process
        assert worker is not None
        os.kill(worker.pid, signal.SIGINT)
        deadline = time.monotonic() + 2.0  # a worker that took the signal exits well within this
        while worker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert worker.poll() is None
        assert runner.run(db, "SELECT 2 AS two").rows == [(2,)] and runner._process is worker
    finally:
        runner.close()


def test_isolated_runner_refuses_without_a_worker_and_reports_missing_databases(db, tmp_path):
    assert run_query_isolated(db, "DROP TABLE t").error_class == "forbidden"
    assert run_query_isolated(db, "SELEC").error_class == "syntax"
    with pytest.raises(DatabaseNotFoundError):
        run_query_isolated(tmp_path / "absent.duckdb", "SELECT 1")


def test_isolated_runner_runs_many_in_order_and_kills_a_query_past_its_deadline(db, tmp_path):
    """``run_many``: one outcome per query in order (refusals and missing databases included), a query that
    ignores interrupt killed with its worker after its own timeout and grace, the next on a new worker."""
    runner = IsolatedRunner(grace_s=0.3)
    limits = SandboxLimits(timeout_s=0.2)
    queries = [
        (db, "SELECT count(*) FROM t"),
        (db, "DROP TABLE t"),
        (tmp_path / "absent.duckdb", "SELECT 1"),
        (db, "SELECT length(repeat('x', 1000000000))"),  # one huge value: no interrupt check in-process
        (db, "SELECT 7"),
    ]
    try:
        outcomes = []
        for outcome in runner.run_many(queries, limits):
            outcomes.append(outcome)
            time.sleep(0.05)  # the caller working on a result while the worker runs the next query
        counted, refused, missing, hung, seven = outcomes
        assert counted.rows == [(3,)] and refused.error_class == "forbidden"
        assert isinstance(missing, DatabaseNotFoundError)
        assert hung.error_class == "timeout" and "ignored interrupt and its process was killed" in hung.error_message
        assert hung.elapsed_ms >= (0.2 + 0.3) * 1000
        assert seven.rows == [(7,)]
    finally:
        runner.close()


def test_isolated_runner_left_mid_run_many_kills_the_query_in_flight(db):
    runner = IsolatedRunner()
    try:
        results = runner.run_many([(db, "SELECT 1"), (db, "SELECT 2")])
        assert next(results).rows == [(1,)]  # SELECT 2 is in flight now
        worker = runner._process
        results.close()
        assert worker is not None and worker.poll() is not None  # its reply can never be read by a later call
        assert runner.run(db, "SELECT 3").rows == [(3,)]
    finally:
        runner.close()


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
