"""The pinned clock: every clock read of a query rewritten, in the AST, into a literal at a reference instant.

A gold set has a reference date (``Case.reference_instant``); its expected SQL and every candidate are
run with ``CURRENT_DATE``, ``today()``, ``now()``, ``current_timestamp`` and their kin replaced by typed
literals at midnight of that date, so a time-relative question has one answer whatever the real date:

    >>> pin_clock("SELECT count(*) FROM t WHERE d >= CURRENT_DATE - INTERVAL 30 DAY", date(2026, 6, 30))
    "SELECT COUNT(*) FROM t WHERE d >= CAST('2026-06-30' AS DATE) - INTERVAL '30' DAY"

Each literal has the type DuckDB's function returns: ``DATE`` for ``CURRENT_DATE``/``today()``,
``TIMESTAMPTZ`` for ``now()``/``current_timestamp``/``get_current_timestamp()``/``transaction_timestamp()``
(midnight in the session's time zone, so ``now()::DATE = CURRENT_DATE`` still holds), ``TIMESTAMP`` for
``localtimestamp``, ``TIMETZ``/``TIME`` for ``current_time``/``localtime``. Forms that wrap a clock read
(``epoch_ms(now())``, ``date_trunc('month', now())``, ``now()::DATE``) keep their wrapper around the literal.
SQL without a clock read comes back as the very same text; SQL that does not parse comes back unchanged
(the sandbox reports its error as for any other query).
"""

from __future__ import annotations

import functools
from datetime import date

from sqlglot import exp

from nl2sql_pipeline.cases import DEFAULT_REFERENCE_DATE
from nl2sql_pipeline.sql import parse as sql_ast

__all__ = [
    "DEFAULT_REFERENCE_DATE",
    "clock_reads",
    "is_clock_read",
    "pin_clock",
    "pin_clock_tree",
    "today",
]

DATE, TIMESTAMP, TIMESTAMPTZ, TIME, TIMETZ = "DATE", "TIMESTAMP", "TIMESTAMPTZ", "TIME", "TIMETZ"

_EXPRESSION_TYPES: dict[str, str] = {
    "CurrentDate": DATE,
    "CurrentTime": TIMETZ,
    "CurrentTimestamp": TIMESTAMPTZ,
    "CurrentDatetime": TIMESTAMP,
    "Localtime": TIME,
    "Localtimestamp": TIMESTAMP,
    "CurrentTimestampLTZ": TIMESTAMPTZ,
}
"""sqlglot's clock expressions (those the installed version has) -> the type DuckDB returns."""
_CLOCK_EXPRESSIONS: dict[type[exp.Expr], str] = {
    getattr(exp, name): kind for name, kind in _EXPRESSION_TYPES.items() if hasattr(exp, name)
}
FUNCTION_TYPES: dict[str, str] = {
    "now": TIMESTAMPTZ,
    "today": DATE,
    "current_date": DATE,
    "current_time": TIMETZ,
    "current_timestamp": TIMESTAMPTZ,
    "current_localtime": TIME,
    "current_localtimestamp": TIMESTAMP,
    "get_current_time": TIMETZ,
    "get_current_timestamp": TIMESTAMPTZ,
    "localtime": TIME,
    "localtimestamp": TIMESTAMP,
    "transaction_timestamp": TIMESTAMPTZ,
    "statement_timestamp": TIMESTAMPTZ,
}
"""Clock functions sqlglot leaves as anonymous calls (lower-case name, no argument) -> the type returned."""

CACHE_SIZE = 4096
"""Distinct (SQL, reference date) pairs kept: the same gold is pinned for every candidate judged against it."""


def today() -> date:
    """The process's date (the default reference date of an import); the one place the harness reads it."""
    return date.today()


def _clock_type(node: exp.Expr) -> str | None:
    """The type of the value ``node`` reads from the clock; None when it is not a clock read."""
    kind = _CLOCK_EXPRESSIONS.get(type(node))
    if kind is not None:
        return kind
    if isinstance(node, exp.Anonymous) and not node.expressions:
        return FUNCTION_TYPES.get(str(node.this).casefold())
    return None


def is_clock_read(node: exp.Expr) -> bool:
    """True when ``node`` reads the clock (``CURRENT_DATE``, ``now()``, ``current_timestamp``, ...)."""
    return _clock_type(node) is not None


def clock_reads(tree: exp.Expr) -> list[exp.Expr]:
    """Every clock read in ``tree`` (subqueries, CTEs and set operations included), in walk order."""
    return [node for node in tree.walk() if is_clock_read(node)]


def _literal(kind: str, reference: date) -> exp.Expr:
    """The typed literal of a ``kind`` clock read at midnight of ``reference``."""
    text = {
        DATE: reference.isoformat(),
        TIMESTAMP: f"{reference.isoformat()} 00:00:00",
        TIMESTAMPTZ: f"{reference.isoformat()} 00:00:00",
        TIME: "00:00:00",
        TIMETZ: "00:00:00",
    }[kind]
    return exp.cast(exp.Literal.string(text), kind)


def pin_clock_tree(tree: exp.Expr, reference: date) -> exp.Expr:
    """A copy of ``tree`` with every clock read replaced by its literal at ``reference`` (the input is untouched).

    >>> from sqlglot import parse_one
    >>> pin_clock_tree(parse_one("SELECT now()", read="duckdb"), date(2026, 6, 30)).sql("duckdb")
    "SELECT CAST('2026-06-30 00:00:00' AS TIMESTAMPTZ)"
    """

    def replace(node: exp.Expr) -> exp.Expr:
        kind = _clock_type(node)
        return _literal(kind, reference) if kind is not None else node

    return tree.copy().transform(replace, copy=False)


@functools.lru_cache(maxsize=CACHE_SIZE)
def pin_clock(sql: str, reference: date | None = None) -> str:
    """``sql`` with its clock reads evaluated at ``reference`` (default ``DEFAULT_REFERENCE_DATE``).

    The same text when it reads no clock or does not parse as one statement.
    """
    try:
        tree = sql_ast.parse(sql)
    except sql_ast.SqlParseError:
        return sql
    if not any(is_clock_read(node) for node in tree.walk()):
        return sql
    pinned = pin_clock_tree(tree, reference or date.fromisoformat(DEFAULT_REFERENCE_DATE))
    return pinned.sql(dialect="duckdb")
