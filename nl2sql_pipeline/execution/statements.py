"""Which SQL may reach the sandbox: exactly one query, as decided by DuckDB's own parser.

``duckdb.extract_statements`` types every statement. ``SELECT`` covers plain selects, ``WITH``,
set operations, ``VALUES``, ``FROM``-first queries, ``TABLE t``, ``DESCRIBE``/``SHOW``/``SUMMARIZE``
and ``PIVOT`` with an explicit ``IN`` list. A ``PIVOT`` without one parses as a ``MULTI`` statement
(DuckDB creates a temporary enum type, selects, then drops it): it is accepted when the parser's
expected results are only those of that rewrite and the SQL holds a ``PIVOT`` keyword. Everything
else (``EXPLAIN``, ``PRAGMA``, ``CALL``, ``CHECKPOINT``, ``SET``, ``ATTACH``, ``COPY``, ``LOAD``, every
write, ...) is refused, and so is an empty string or more than one statement.
"""

from __future__ import annotations

import duckdb

from nl2sql_pipeline.sql import parse as sql_ast

_PIVOT_RESULT_TYPES = frozenset(
    {
        duckdb.ExpectedResultType.CHANGED_ROWS,
        duckdb.ExpectedResultType.QUERY_RESULT,
        duckdb.ExpectedResultType.NOTHING,
    }
)


class StatementRefused(Exception):
    """Internal: the SQL parses but is not exactly one query; the message says why."""


def parse_single_query(sql: str) -> duckdb.Statement:
    """The one query statement of ``sql``, ready to execute.

    Raises ``StatementRefused`` when ``sql`` is empty, holds several statements or a non-query, and
    lets ``duckdb.ParserException`` through for SQL that does not parse.
    """
    if not isinstance(sql, str):
        raise StatementRefused(f"SQL must be a string, got {type(sql).__name__}")
    if not sql.strip():
        raise StatementRefused("empty SQL: there is no query to run")
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: undecodable input bytes, or "\ud800" from JSON
        raise StatementRefused(
            f"the SQL is not valid text: character {exc.start + 1} ({sql[exc.start]!r}) cannot be encoded as "
            "UTF-8 (invalid bytes in the input?)"
        ) from exc
    try:
        statements = sql_ast.duckdb_statements(sql)
    except duckdb.ParserException:
        raise
    except duckdb.Error as exc:
        raise StatementRefused(f"DuckDB could not split the SQL into statements ({exc})") from exc
    if not statements:
        raise StatementRefused("no statement found (only comments or semicolons); write one SELECT query")
    if len(statements) > 1:
        kinds = ", ".join(_type_name(s) for s in statements)
        raise StatementRefused(
            f"{len(statements)} statements ({kinds}); exactly one SELECT query is allowed, remove the others"
        )
    statement = statements[0]
    kind = _statement_type(statement)
    if kind == duckdb.StatementType.SELECT:
        return statement
    if kind == duckdb.StatementType.MULTI and _is_dynamic_pivot(sql, statement):
        return statement
    raise StatementRefused(f"statement type {_type_name(statement)} is not a query; only a single SELECT query may run")


def statement_check(sql: str) -> str | None:
    """None when ``sql`` is exactly one SELECT-type statement, else the reason it may not run."""
    try:
        parse_single_query(sql)
    except StatementRefused as exc:
        return str(exc)
    except duckdb.ParserException as exc:
        return f"the SQL does not parse: {exc}"
    return None


def _statement_type(statement: duckdb.Statement) -> duckdb.StatementType | None:
    """The statement's type; None for one the Python enum does not know (e.g. UPDATE EXTENSIONS)."""
    try:
        return statement.type
    except ValueError:
        return None


def _type_name(statement: duckdb.Statement) -> str:
    kind = _statement_type(statement)
    return kind.name if kind is not None else "unknown-type"


def _is_dynamic_pivot(sql: str, statement: duckdb.Statement) -> bool:
    """True for the MULTI statement DuckDB makes of a PIVOT whose values are found at run time."""
    expected = set(statement.expected_result_type)
    if duckdb.ExpectedResultType.QUERY_RESULT not in expected or not expected <= _PIVOT_RESULT_TYPES:
        return False
    tokens = duckdb.tokenize(sql)
    for index, (start, kind) in enumerate(tokens):
        end = tokens[index + 1][0] if index + 1 < len(tokens) else len(sql)
        if kind == duckdb.token_type.keyword and sql[start:end].strip().upper() == "PIVOT":
            return True
    return False


def embeddable_text(statement: duckdb.Statement) -> str:
    """The text of an accepted query, safe to wrap in parentheses: trailing semicolons and comments
    dropped, a newline before the closing parenthesis (so that a trailing ``--`` comment cannot swallow it)."""
    text = statement.query
    end = len(text)
    for start, kind in reversed(duckdb.tokenize(text)):  # drop trailing semicolons and comments
        if kind == duckdb.token_type.comment or (kind == duckdb.token_type.operator and text[start:end].strip() == ";"):
            end = start
            continue
        break
    return text[:end].rstrip() + "\n"
