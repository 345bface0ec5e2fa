"""Check a converted gold query: it runs in the DuckDB sandbox and returns what the source engine returns.

The original runs in SQLite (read-only, with a timeout and the same row cap), the conversion runs
through ``execution.run_query`` on the copied DuckDB file, and the two results are compared by the
project's comparator (``nl2sql_pipeline.compare``) with columns matched by position (engines name
computed columns differently: ``count(*)`` / ``count_star()``). Another source engine is given as a
``SourceEngine`` (``postgres_verify.PostgresRunner``: the database loaded into PostgreSQL). Without a
source engine (a Postgres query and no ``--verify-with``) only "runs in DuckDB" can be checked, and the
status says so.

Two differences are not a different result:

- **Ties at a LIMIT.** ``ORDER BY … LIMIT k`` over rows tied at the cut keeps any of them, and SQLite and
  DuckDB often keep different ones (also when the sort key is not selected). The source's rows are judged
  as a candidate against the conversion, by the same rule as a model's answer (``limit_ties``: the
  conversion re-run without its LIMIT, its hidden sort keys beside it): a valid choice of the tied rows
  verifies the conversion.
- **The clock.** With a ``reference`` date (the gold set's), SQLite's clock reads (``date('now')``,
  ``CURRENT_DATE``, ...) and the conversion's are evaluated at that date, as every later run evaluates
  them (``sql.clock``), so a time-relative gold query is checked at the instant it will be judged at.
"""

from __future__ import annotations

import datetime
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sqlglot import exp, parse_one
from sqlglot.errors import SqlglotError

from nl2sql_pipeline.compare import CompareConfig, compare_query_results, compare_results
from nl2sql_pipeline.compare.engine import EngineSource
from nl2sql_pipeline.compare.model import ExpectedResultError
from nl2sql_pipeline.dialect.convert import TARGET_DIALECT, ConvertedSql
from nl2sql_pipeline.execution import QueryResult, SandboxLimits, run_query
from nl2sql_pipeline.sql.clock import pin_clock

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


SQLITE_TIME_FUNCTIONS: tuple[str, ...] = ("date", "time", "datetime", "julianday", "unixepoch", "strftime")
"""SQLite's date and time functions: each reads the clock when a time value is the string ``'now'``."""
SQLITE_CLOCK_KEYWORDS: dict[type[exp.Expr], str] = {
    exp.CurrentDate: "%Y-%m-%d",
    exp.CurrentTime: "%H:%M:%S",
    exp.CurrentTimestamp: "%Y-%m-%d %H:%M:%S",
}
"""SQLite's clock keywords (sqlglot's expressions) and the text each gives."""


def pin_sqlite_clock(con: sqlite3.Connection, sql: str, reference: datetime.date) -> str:
    """Make ``con`` read the clock at midnight of ``reference``; return ``sql`` with its clock keywords pinned.

    SQLite has no setting for its clock: its time functions are replaced on ``con`` by ones that read
    ``'now'`` (any case) as ``'<reference> 00:00:00'`` and call the built-in function on a private
    in-memory connection; ``CURRENT_DATE``/``CURRENT_TIME``/``CURRENT_TIMESTAMP`` are keywords, so they are
    rewritten in the sqlglot AST into their text at that instant (SQL without one comes back unchanged).

    >>> con = sqlite3.connect(":memory:")
    >>> con.execute(pin_sqlite_clock(con, "SELECT date('now', '-1 day'), CURRENT_DATE", datetime.date(2026, 6, 30))).fetchone()
    ('2026-06-29', '2026-06-30')
    """
    midnight = f"{reference.isoformat()} 00:00:00"
    builtin = sqlite3.connect(":memory:")

    def pinned(name: str) -> Callable[..., str | int | float | None]:
        def call(*args: object) -> str | int | float | None:
            values = [midnight if isinstance(a, str) and a.strip().lower() == "now" else a for a in args]
            if name == "strftime" and len(values) == 1:
                values.append(midnight)  # strftime(fmt) alone reads 'now'
            if name != "strftime" and not values:
                values.append(midnight)  # date() alone reads 'now'
            placeholders = ", ".join("?" for _ in values)
            return builtin.execute(f"SELECT {name}({placeholders})", values).fetchone()[0]

        return call

    for name in SQLITE_TIME_FUNCTIONS:
        con.create_function(name, -1, pinned(name), deterministic=True)
    try:
        tree = parse_one(sql, read="sqlite")
    except SqlglotError:
        return sql
    keywords = [node for node in tree.walk() if type(node) in SQLITE_CLOCK_KEYWORDS and not node.args.get("this")]
    if not keywords:
        return sql
    instant = datetime_at_midnight(reference)
    for node in keywords:
        node.replace(exp.Literal.string(instant.strftime(SQLITE_CLOCK_KEYWORDS[type(node)])))
    return tree.sql(dialect="sqlite")


def datetime_at_midnight(day: datetime.date) -> datetime.datetime:
    """Midnight at the start of ``day``."""
    return datetime.datetime.combine(day, datetime.time())


def run_sqlite(
    path: Path, sql: str, limits: SandboxLimits = SandboxLimits(), reference: datetime.date | None = None
) -> QueryResult:
    """Run ``sql`` on a read-only SQLite connection with a wall-clock timeout and the row cap; with
    ``reference``, its clock reads are evaluated at midnight of that date (``pin_sqlite_clock``)."""
    started = time.monotonic()
    con = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    con.text_factory = lambda raw: raw.decode("utf-8", "replace")
    if reference is not None:
        sql = pin_sqlite_clock(con, sql, reference)
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
    reference: datetime.date | None = None,
) -> ConversionCheck:
    """Run the conversion in the sandbox and the original on its engine (``source``, or SQLite with a
    SQLite source); compare. With ``reference``, the SQLite original and the conversion read the clock
    at that date (another source engine reads its own clock, and so does the conversion then)."""
    expected, engine, duckdb_sql = None, "SQLite", converted.sql
    if source is not None:
        engine = source.engine
        expected = source.run(converted.source_sql, limits)
    elif sqlite_path is not None and converted.source_dialect == "sqlite":
        expected = run_sqlite(sqlite_path, converted.source_sql, limits, reference)
        if reference is not None:
            duckdb_sql = pin_clock(converted.sql, reference)
    if expected is not None and not expected.ok:
        return ConversionCheck(SOURCE_FAILED, f"the original fails in {engine}: {expected.error_message}")
    actual = run_query(duckdb_path, duckdb_sql, limits)
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
    if _has_limit(converted.sql) and _a_tie_choice(actual, expected, duckdb_path, duckdb_sql, limits):
        return ConversionCheck(VERIFIED, f"{engine} kept other rows tied at the LIMIT (any choice is valid)")
    reason = f"DuckDB returns another result than {engine}: {comparison.reason}"
    if _has_limit(converted.sql):
        reason += " (ORDER BY ... LIMIT: ties may pick different rows on each engine)"
    return ConversionCheck(RESULT_DIFFERS, reason)


def _a_tie_choice(
    actual: QueryResult, expected: QueryResult, duckdb_path: Path, duckdb_sql: str, limits: SandboxLimits
) -> bool:
    """True when the source engine's rows are a valid choice of the rows the conversion's ``ORDER BY …
    LIMIT`` ties at its cut: judged as a model's answer is (rule ``limit_ties``, hidden sort keys included)."""
    try:
        comparison = compare_query_results(
            actual,
            expected,
            POSITIONAL,
            EngineSource(db_path=Path(duckdb_path), expected_sql=duckdb_sql, candidate_sql=duckdb_sql, limits=limits),
        )
    except ExpectedResultError:
        return False
    return comparison.match and comparison.rule == "limit_ties"
