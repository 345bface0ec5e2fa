"""Parse once: ``sql_ast``'s caches, shared by the policy engine and the sandbox, never weaken either."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from sqlglot import exp

from nl2sql_pipeline.execution import release_sandboxes, run_query, statement_check
from nl2sql_pipeline.gold.registry import load_gold_set
from nl2sql_pipeline.policy import SQLPolicyEngine, load_policy, read_database_schema
from nl2sql_pipeline.sql import parse as sql_ast


@pytest.fixture(autouse=True)
def cold_caches():
    sql_ast.clear_caches()
    yield
    sql_ast.clear_caches()


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path / "home"))
    path = tmp_path / "t.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t(x INTEGER, secret VARCHAR)")
        con.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    yield path
    release_sandboxes()


def test_the_same_text_is_parsed_once_and_the_tree_is_shared():
    sql = "SELECT a, SUM(b) FROM t WHERE c > 1 GROUP BY a"
    tree = sql_ast.parse(sql)
    assert isinstance(tree, exp.Select) and tree.sql() == sql
    assert sql_ast.parse(sql) is tree
    assert sql_ast.statements.cache_info().hits >= 1
    assert sql_ast.duckdb_statements(sql) is sql_ast.duckdb_statements(sql)
    assert sql_ast.duckdb_statements.cache_info().misses == 1


@pytest.mark.parametrize("sql", ["SELECT FROM WHERE (", "SELECT 1; SELECT 2", ""])
def test_what_does_not_parse_to_one_statement_raises_every_time(sql):
    for _ in range(2):
        with pytest.raises(sql_ast.SqlParseError):
            sql_ast.parse(sql)


def test_a_duckdb_parse_error_is_raised_again_not_cached():
    for _ in range(2):
        with pytest.raises(duckdb.ParserException):
            sql_ast.duckdb_statements("SELEC 1")
    assert sql_ast.duckdb_statements.cache_info().currsize == 0


def test_policy_checks_never_modify_the_shared_trees(tmp_path):
    """Every rule over every gold query and probe: the cached tree is the same object, unchanged."""
    from nl2sql_pipeline.sample_db import build_database

    database = tmp_path / "anime_platform.duckdb"
    build_database(database, scale=0.01)
    cases = load_gold_set("multidomain-v1")
    engine = SQLPolicyEngine(load_policy("default"), read_database_schema(database))
    texts = [sql for case in cases for sql in case.expected_sql] + [
        case.policy_probe_sql for case in cases if case.is_probe and case.policy_probe_sql
    ]
    before = {}
    for sql in texts:
        try:
            before[sql] = (sql_ast.parse(sql), sql_ast.parse(sql).copy())
        except sql_ast.SqlParseError:
            continue
    assert len(before) > 100
    decisions = [engine.check(sql) for sql in texts]
    assert any(d.allowed for d in decisions) and any(not d.allowed for d in decisions)
    for sql, (tree, copy) in before.items():
        assert sql_ast.parse(sql) is tree
        assert tree == copy, sql


def test_the_policy_stays_fail_closed_on_cached_text(db):
    engine = SQLPolicyEngine(load_policy("default"), read_database_schema(db))
    for _ in range(2):  # the second time every parse that succeeded comes from the cache
        assert engine.check("SELECT x FROM t").allowed
        bad = engine.check("SELECT x FROM t; DROP TABLE t")
        assert not bad.allowed and bad.rule == "single_statement"
        unparsable = engine.check("SELECT x FROM (")
        assert not unparsable.allowed and unparsable.rule == "parse"
        written = engine.check("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d")
        assert not written.allowed


def test_the_sandbox_reuses_the_policys_parse_and_still_refuses(db):
    sql = "SELECT x FROM t ORDER BY x"
    engine = SQLPolicyEngine(load_policy("default"), read_database_schema(db))
    assert engine.check(sql).allowed
    misses = sql_ast.duckdb_statements.cache_info().misses
    result = run_query(db, sql)
    assert result.ok and result.rows == [(1,), (2,)]
    assert sql_ast.duckdb_statements.cache_info().misses == misses  # no second DuckDB parse
    hostile = "SELECT 1; CREATE TEMP TABLE t AS SELECT 99 AS x"
    for _ in range(2):
        refused = run_query(db, hostile)
        assert not refused.ok and refused.error_class == "forbidden"
        assert statement_check(hostile) is not None
    assert run_query(db, sql).rows == [(1,), (2,)]


def test_the_pool_follows_a_link_pointed_at_another_database(tmp_path, monkeypatch):
    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path / "home"))
    first, second = tmp_path / "first.duckdb", tmp_path / "second.duckdb"
    for path, value in ((first, 1), (second, 2)):
        with duckdb.connect(str(path)) as con:
            con.execute(f"CREATE TABLE t AS SELECT {value} AS x")
    link = tmp_path / "current.duckdb"
    link.symlink_to(first)
    try:
        assert run_query(link, "SELECT x FROM t").rows == [(1,)]
        assert run_query(link, "SELECT x FROM t").rows == [(1,)]
        link.unlink()
        link.symlink_to(second)
        assert run_query(link, "SELECT x FROM t").rows == [(2,)]
    finally:
        release_sandboxes()


def test_the_benchmark_launcher_imports_sqlglot_from_source(tmp_path):
    """``benchmarks/pure_sqlglot.py`` gives the base revision the build it had: pure Python."""
    import subprocess
    import sys

    from sqlglot import tokens

    launcher = Path(__file__).resolve().parent.parent / "benchmarks" / "pure_sqlglot.py"
    script = tmp_path / "which.py"
    script.write_text("import sqlglot.tokens as t, sqlglot.parser as p\nprint(t.SQLGLOTC_INSTALLED, p.__file__)\n")
    out = subprocess.run([sys.executable, str(launcher), str(script)], capture_output=True, text=True, check=True)
    installed, parser_file = out.stdout.split()
    assert installed == "False" and parser_file.endswith("parser.py")
    assert tokens.SQLGLOTC_INSTALLED  # this process has the compiled build (a dependency of the project)
