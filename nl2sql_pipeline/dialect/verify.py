"""Check a converted gold query: it runs in the DuckDB sandbox and returns what the source engine returns.

The original runs in SQLite (read-only, with a timeout and the same row cap), the conversion runs
through ``execution.run_query`` on the copied DuckDB file, and the two results are compared by the
project's comparator (``nl2sql_pipeline.compare``) with columns matched by position (engines name
computed columns differently: ``count(*)`` / ``count_star()``). Another source engine is given as a
``SourceEngine`` (``postgres_verify.PostgresRunner``: the database loaded into PostgreSQL). Without a
source engine (a Postgres query and no ``--verify-with``) only "runs in DuckDB" can be checked, and the
status says so.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sqlglot import exp, parse_one
from sqlglot.errors import SqlglotError

from nl2sql_pipeline.compare import CompareConfig, compare_results
from nl2sql_pipeline.dialect.convert import TARGET_DIALECT, ConvertedSql
from nl2sql_pipeline.execution import QueryResult, SandboxLimits, run_query

VERIFIED = "verified"
RUNS = "runs"
SOURCE_FAILED = "source_failed"
DUCKDB_FAILED = "duckdb_failed"
RESULT_DIFFERS = "result_differs"
CONVERSION_FAILED = "conversion_failed"
CHECK_STATUSES: tuple[str, ...] = (VERIFIED, RUNS, SOURCE_FAILED, DUCKDB_FAILED, RESULT_DIFFERS, CONVERSION_FAILED)
"""``verified``: same result on both engines; ``runs``: runs in DuckDB, no source engine to compare with;
the others say why a query is not kept."""
KEPT_STATUSES: frozenset[str] = frozenset({VERIFIED, RUNS})
POSITIONAL = CompareConfig(column_order="positional")


@dataclass(frozen=True)
class ConversionCheck:
    """The verdict on one converted query: its status and, when it is not kept, why."""

    status: str
    reason: str = ""

    @property
    def kept(self) -> bool:
        """True when the converted query may stand as gold."""
        return self.status in KEPT_STATUSES


class SourceEngine(Protocol):
    """The engine the gold was written for, holding the database: runs an original query."""

    engine: str
    """Its name in messages (``PostgreSQL``)."""

    def run(self, sql: str, limits: SandboxLimits = ...) -> QueryResult:
        """The result of ``sql`` (a failed ``QueryResult`` for bad SQL, never an exception)."""
        ...


def run_sqlite(path: Path, sql: str, limits: SandboxLimits = SandboxLimits()) -> QueryResult:
    """Run ``sql`` on a read-only SQLite connection with a wall-clock timeout and the row cap."""
    started = time.monotonic()
    con = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    con.text_factory = lambda raw: raw.decode("utf-8", "replace")
    deadline = started + limits.timeout_s
    con.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        cursor = con.execute(sql)
        rows = cursor.fetchmany(limits.row_cap + 1)
        columns = [d[0] for d in cursor.description or ()]
    except sqlite3.OperationalError as exc:
        elapsed = (time.monotonic() - started) * 1000
        if "interrupted" in str(exc):
            return QueryResult.failure("timeout", f"SQLite query exceeded {limits.timeout_s}s", elapsed)
        return QueryResult.failure("runtime", f"SQLite: {exc}", elapsed)
    except sqlite3.Error as exc:
        return QueryResult.failure("runtime", f"SQLite: {exc}", (time.monotonic() - started) * 1000)
    finally:
        con.close()
    truncated = len(rows) > limits.row_cap
    return QueryResult(
        ok=True,
        columns=columns,
        rows=[tuple(r) for r in rows[: limits.row_cap]],
        truncated=truncated,
        elapsed_ms=(time.monotonic() - started) * 1000,
    )


def _has_limit(sql: str) -> bool:
    try:
        tree = parse_one(sql, read=TARGET_DIALECT)
    except SqlglotError:
        return False
    return tree.find(exp.Limit) is not None and tree.find(exp.Order) is not None


def verify_conversion(
    converted: ConvertedSql,
    duckdb_path: Path,
    sqlite_path: Path | None = None,
    limits: SandboxLimits = SandboxLimits(),
    source: SourceEngine | None = None,
) -> ConversionCheck:
    """Run the conversion in the sandbox and the original on its engine (``source``, or SQLite with a
    SQLite source); compare."""
    expected, engine = None, "SQLite"
    if source is not None:
        engine = source.engine
        expected = source.run(converted.source_sql, limits)
    elif sqlite_path is not None and converted.source_dialect == "sqlite":
        expected = run_sqlite(sqlite_path, converted.source_sql, limits)
    if expected is not None and not expected.ok:
        return ConversionCheck(SOURCE_FAILED, f"the original fails in {engine}: {expected.error_message}")
    actual = run_query(duckdb_path, converted.sql, limits)
    if not actual.ok:
        return ConversionCheck(
            DUCKDB_FAILED, f"the conversion fails in DuckDB ({actual.error_class}): {actual.error_message}"
        )
    if expected is None:
        hint = " (gold import --verify-with postgres checks it)" if converted.source_dialect == "postgres" else ""
        return ConversionCheck(RUNS, f"runs in DuckDB; no source engine to compare results with{hint}")
    comparison = compare_results(expected.columns, expected.rows, actual.columns, actual.rows, POSITIONAL)
    if comparison.match:
        return ConversionCheck(VERIFIED)
    reason = f"DuckDB returns another result than {engine}: {comparison.reason}"
    if _has_limit(converted.sql):
        reason += " (ORDER BY ... LIMIT: ties may pick different rows on each engine)"
    return ConversionCheck(RESULT_DIFFERS, reason)
