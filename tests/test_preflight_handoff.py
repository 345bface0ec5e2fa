"""The gold preflight hands its successful first runs to the oracle of the same process: each gold query runs
once with the configured limits, unless the file, the limits or the SQL differ."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
from eval_support import query_case

from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.execution import SandboxLimits, held_sandboxes, release_sandboxes
from nl2sql_pipeline.gold.quality.preflight import run_preflight, take_gold_results
from nl2sql_pipeline.stages import oracle

LIMITS = SandboxLimits(timeout_s=10)


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    path = tmp_path / "shop.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER); INSERT INTO t SELECT i, i % 7 FROM range(50) r(i)")
    con.close()
    yield path
    release_sandboxes(path)


@pytest.fixture
def oracle_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The SQL texts the oracle runs itself."""
    ran: list[str] = []

    @contextmanager
    def counting():
        with held_sandboxes() as run:

            def counted(db_path, sql, limits):
                ran.append(sql)
                return run(db_path, sql, limits)

            yield counted

    monkeypatch.setattr(oracle, "held_sandboxes", counting)
    return ran


def _cases():
    return [
        case_from_dict(query_case("a", "SELECT count(*) AS n FROM t", database="shop")),
        case_from_dict(query_case("b", "SELECT v, count(*) AS n FROM t GROUP BY v ORDER BY v", database="shop")),
        case_from_dict(query_case("c", "SELECT nope FROM t", database="shop")),  # fails: run again by the oracle
    ]


def test_the_oracle_uses_the_preflight_results_once(shop, oracle_runs):
    cases = _cases()
    report = run_preflight(cases, lambda _name: shop, LIMITS, check_policy=False)
    assert report.quarantined == ["c"]
    rows = oracle.run_oracle(cases, lambda _name: shop, LIMITS)
    assert oracle_runs == ["SELECT nope FROM t"]  # only the failing gold ran again
    assert [row.result.ok for row in rows] == [True, True, False]
    assert rows[0].result.rows == [(50,)] and len(rows[1].result.rows) == 7
    assert take_gold_results() == {}  # handed over once
    again = oracle.run_oracle(cases, lambda _name: shop, LIMITS)
    assert len(oracle_runs) == 4
    assert [r.result.rows for r in again] == [r.result.rows for r in rows]


def test_other_limits_or_a_changed_file_run_the_gold_again(shop, oracle_runs):
    cases = _cases()[:2]
    run_preflight(cases, lambda _name: shop, LIMITS, check_policy=False)
    oracle.run_oracle(cases, lambda _name: shop, SandboxLimits(timeout_s=9))
    assert len(oracle_runs) == 2
    run_preflight(cases, lambda _name: shop, LIMITS, check_policy=False)
    release_sandboxes(shop)
    con = duckdb.connect(str(shop))
    con.execute("INSERT INTO t VALUES (50, 1)")
    con.close()
    stat = shop.stat()
    os.utime(shop, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a new identity even within one tick
    rows = oracle.run_oracle(cases, lambda _name: shop, LIMITS)
    assert len(oracle_runs) == 4
    assert rows[0].result.rows == [(51,)]


def test_findings_come_case_by_case_and_alternative_by_alternative(shop):
    """The second runs go to the worker after every first run; the report still lists each alternative's
    findings together, in order (as when each was checked in turn)."""
    two = case_from_dict(
        query_case(
            "two",
            ["SELECT id FROM t WHERE v = 3 AND current_date > DATE '2000-01-01'", "SELECT id FROM t LIMIT 3"],
            database="shop",
        )
    )
    report = run_preflight([two, *_cases()], lambda _name: shop, LIMITS, check_policy=False)
    labels = [flag.label for flag in report.triage]
    assert labels == sorted(labels, key=lambda label: ("two[1]" in label,))  # every two[0] before any two[1]
    assert {"two[0]", "two[1]"} <= set(labels)
    assert report.quarantined == ["two", "c"]
    assert report.queries_run >= 6


def test_a_worker_that_cannot_start_is_a_problem_for_each_query(shop, monkeypatch):
    from nl2sql_pipeline.execution import IsolatedRunner
    from nl2sql_pipeline.execution.exceptions import SandboxError

    def refuse(self):
        raise SandboxError("the sandbox worker process did not start")

    monkeypatch.setattr(IsolatedRunner, "_worker", refuse)
    report = run_preflight(_cases(), lambda _name: shop, LIMITS, check_policy=False)
    assert [line.split(":")[0] for line in report.problems] == ["a", "b"]
    assert "threads=" in report.problems[0] and "did not start" in report.problems[0]
    assert not report.passed
