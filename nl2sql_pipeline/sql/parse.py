"""Parse each SQL text once: sqlglot's tokens and tree and DuckDB's statements, cached by the text.

The policy engine, the sandbox's statement check and any other reader of a query ask here instead of
parsing again; the same text parsed twice in a process costs one dictionary lookup the second time.

    >>> parse("SELECT a FROM t WHERE a > 1").sql()
    'SELECT a FROM t WHERE a > 1'

The cached values are shared: a caller must never modify a tree it got from ``parse`` (copy it first,
``tree.copy()``, as ``generation.mutations`` does). Failures are not cached: a text that does not parse
raises every time it is asked for, so whoever fails closed on a parse error still does.

Parsing is deterministic, so a cached answer is the answer a fresh parse would give: the sandbox's
statement check keeps its meaning (DuckDB's parser decides) while paying the parse once per text.
"""

from __future__ import annotations

import functools
import threading

import duckdb
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.errors import SqlglotError
from sqlglot.tokens import Token

from nl2sql_pipeline.errors import Nl2SqlError

DIALECT = DuckDB()
"""The one dialect the harness reads SQL in (every database is DuckDB)."""

CACHE_SIZE = 4096
"""Distinct SQL texts kept per cache (a run of a few thousand candidates fits)."""

_THREAD_STATE = threading.local()


class SqlParseError(Nl2SqlError):
    """sqlglot cannot tokenize or parse the text, or it holds other than exactly one statement."""


def _parser_connection() -> duckdb.DuckDBPyConnection:
    """A private in-memory DuckDB connection per thread, used only for its parser."""
    con = getattr(_THREAD_STATE, "connection", None)
    if con is None:
        con = duckdb.connect(":memory:")
        _THREAD_STATE.connection = con
    return con


@functools.lru_cache(maxsize=CACHE_SIZE)
def duckdb_statements(sql: str) -> tuple[duckdb.Statement, ...]:
    """DuckDB's own split of ``sql`` into typed statements; ``duckdb.Error`` when it does not parse."""
    return tuple(_parser_connection().extract_statements(sql))


@functools.lru_cache(maxsize=CACHE_SIZE)
def tokens(sql: str) -> tuple[Token, ...]:
    """sqlglot's tokens of ``sql`` (DuckDB dialect); ``SqlglotError`` when it cannot be tokenized."""
    return tuple(DIALECT.tokenize(sql))


@functools.lru_cache(maxsize=CACHE_SIZE)
def statements(sql: str) -> tuple[exp.Expr, ...]:
    """Every statement sqlglot parses from ``sql`` (empty ones dropped); ``SqlglotError`` on failure.

    The trees are shared between callers: do not modify them.
    """
    parsed = DIALECT.parser().parse(list(tokens(sql)), sql)
    return tuple(expression for expression in parsed if expression is not None)


def parse(sql: str) -> exp.Expr:
    """The one sqlglot tree of ``sql`` (shared: do not modify it; ``copy()`` it first).

    Raises SqlParseError when the text does not parse or holds other than one statement.
    """
    try:
        parsed = statements(sql)
    except SqlglotError as exc:
        raise SqlParseError(f"sqlglot cannot parse the SQL: {_first_line(exc)}") from exc
    if len(parsed) != 1:
        raise SqlParseError(f"expected one SQL statement, found {len(parsed)}")
    return parsed[0]


def clear_caches() -> None:
    """Forget every cached parse (benchmarks measuring a cold start; tests)."""
    duckdb_statements.cache_clear()
    tokens.cache_clear()
    statements.cache_clear()


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
