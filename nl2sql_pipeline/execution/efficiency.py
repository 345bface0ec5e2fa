"""The work a query does, read from DuckDB's own profile: a measure that does not move with the machine's load.

``query_work(sandbox, sql)`` runs ``EXPLAIN (ANALYZE, FORMAT JSON) <sql>`` on a sandbox connection (the
same lock-down, timeout and row cap as any untrusted query; the query is first checked to be exactly one
SELECT, and the wrapped statement to be exactly one EXPLAIN) and reads the profile's ``query`` section:

    rows_scanned        ``total_rows_scanned``: rows the scans read from the tables
    intermediate_rows   ``total_intermediate_rows``: rows every operator produced
    work                rows_scanned + intermediate_rows

These are counts of rows, not times: on a noisy machine the same query on the same database gives the
same numbers run after run (with the sandbox's default single thread; a parallel plan may stop a LIMIT at
another point). ``wall_ms`` is the profiled run's wall time, kept beside the counts and never used to score.
A query DuckDB answers from table statistics alone (``SELECT count(*) FROM t``) has a profile of
``{"result": "error"}`` and no operator: its work is 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import duckdb

from nl2sql_pipeline.execution.query_result import QueryResult
from nl2sql_pipeline.execution.sandbox import Sandbox, check_query

PROFILE_PREFIX = "EXPLAIN (ANALYZE, FORMAT JSON) "


@dataclass(frozen=True)
class QueryWork:
    """The profiled work of one query (``error``: why it could not be profiled; the counts are then 0)."""

    rows_scanned: int = 0
    intermediate_rows: int = 0
    wall_ms: float | None = None
    error: str | None = None

    @property
    def work(self) -> int:
        """Rows scanned plus rows produced by every operator."""
        return self.rows_scanned + self.intermediate_rows

    @property
    def ok(self) -> bool:
        """True when the profile was read."""
        return self.error is None


def profile_statement(sql: str) -> duckdb.Statement | str:
    """The EXPLAIN ANALYZE statement of ``sql`` (one checked SELECT), or why it cannot be profiled."""
    checked = check_query(sql)
    if isinstance(checked, QueryResult):
        return f"{checked.error_class}: {checked.error_message}"
    if checked.type != duckdb.StatementType.SELECT:
        return "only a plain SELECT is profiled (a dynamic PIVOT is several statements)"
    statements = duckdb.extract_statements(PROFILE_PREFIX + sql)
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.EXPLAIN:
        return "the profiled query is not one EXPLAIN statement"
    return statements[0]


def work_from_profile(profile: dict[str, Any]) -> tuple[int, int]:
    """(rows scanned, intermediate rows) of an ``EXPLAIN (ANALYZE, FORMAT JSON)`` profile."""
    query = profile.get("query")
    if query is None and profile == {"result": "error"}:
        # DuckDB 2.0 answers e.g. ``SELECT count(*) FROM t`` or ``max(x)`` from the table statistics: the
        # query ran (EXPLAIN ANALYZE returned) but no operator did any work, and the profile says only this
        return 0, 0
    if not isinstance(query, dict):
        raise ValueError("the profile has no 'query' section (another DuckDB profile format?)")
    return int(query["total_rows_scanned"]), int(query["total_intermediate_rows"])


def query_work(sandbox: Sandbox, sql: str) -> QueryWork:
    """The work of ``sql`` on ``sandbox``'s database (never raises for a bad or hostile query)."""
    statement = profile_statement(sql)
    if isinstance(statement, str):
        return QueryWork(error=statement)
    result = sandbox.run_statement(statement, PROFILE_PREFIX + sql)
    if not result.ok:
        return QueryWork(wall_ms=result.elapsed_ms, error=f"{result.error_class}: {result.error_message}")
    try:
        (row,) = result.rows
        scanned, intermediate = work_from_profile(json.loads(row[1]))
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        return QueryWork(wall_ms=result.elapsed_ms, error=f"unreadable profile: {exc}")
    return QueryWork(rows_scanned=scanned, intermediate_rows=intermediate, wall_ms=result.elapsed_ms)
