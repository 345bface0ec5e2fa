"""``convert_sql``: gold SQL of another dialect as one DuckDB query, with the source dialect's fixes.

sqlglot transpiles the syntax; the fixes of ``DIALECT_FIXES`` (SQLite's and Postgres's) restore the
meaning sqlglot does not carry over (see ``sqlite_fixes`` and ``postgres_fixes``). The names of the fixes that changed the query are
kept, so a report can say what was rewritten. DuckDB SQL is parsed and regenerated unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from nl2sql_pipeline.dialect.postgres_fixes import POSTGRES_FIXES, keep_date_format_calls
from nl2sql_pipeline.dialect.sqlite_fixes import SQLITE_FIXES, ColumnInfo, Fix
from nl2sql_pipeline.errors import Nl2SqlError

TARGET_DIALECT = "duckdb"
DIALECT_FIXES: dict[str, tuple[Fix, ...]] = {"sqlite": SQLITE_FIXES, "postgres": POSTGRES_FIXES}
"""The ordered fixes per source dialect (a dialect without an entry is transpiled only)."""
PREPARED: dict[str, Callable[[str], str]] = {"postgres": keep_date_format_calls}
"""Text rewrites before parsing, for fixes that need what sqlglot's parser would lose."""


class ConversionError(Nl2SqlError):
    """A query cannot be converted: it does not parse in its dialect, or is not one query."""


@dataclass(frozen=True)
class ConvertedSql:
    """A query converted to DuckDB: the original, the DuckDB SQL and the fixes that changed it."""

    source_sql: str
    sql: str
    source_dialect: str
    fixes: tuple[str, ...] = ()


def known_dialect(name: str) -> bool:
    """True when sqlglot knows the dialect ``name`` (``sqlite``, ``postgres``, ``mysql``, ...)."""
    try:
        sqlglot.Dialect.get_or_raise(name)
    except (ValueError, SqlglotError):
        return False
    return True


def convert_sql(sql: str, source_dialect: str, columns: ColumnInfo | None = None) -> ConvertedSql:
    """Convert ``sql`` from ``source_dialect`` to DuckDB; raises ``ConversionError`` when it cannot.

    >>> convert_sql("SELECT name FROM singer WHERE name LIKE 'a%'", "sqlite", {}).sql
    "SELECT name FROM singer WHERE name ILIKE 'a%'"
    """
    text = sql.strip().rstrip(";").strip()
    try:
        text = PREPARED.get(source_dialect, str)(text)
    except SqlglotError as exc:  # the tokenizer's TokenError (an unclosed quote, ...) is no ParseError
        raise ConversionError(f"does not parse as {source_dialect}: {exc}") from exc
    tree = _parse(text, source_dialect)
    applied = []
    out: str | None = None  # the SQL written so far; None: the parsed tree's, not written yet
    nodes = list(tree.walk())
    types = _node_types(nodes)
    for fix in DIALECT_FIXES.get(source_dialect, ()):
        hash(tree)  # caches every node's hash; a change through set/append/replace clears the root's
        try:
            fixed = fix(tree, columns or {})
        except SqlglotError as exc:  # a fix re-reads what it writes (``postgres_fixes._as_sqlglot_reads_it``)
            raise ConversionError(f"cannot be rewritten by {fix.__name__}: {exc}") from exc
        same_nodes = fixed is tree and tree._hash is not None  # nothing set, appended or replaced: the same nodes
        if not same_nodes:
            nodes = list(fixed.walk())
        after_types = _node_types(nodes)
        untouched = same_nodes and _same_types(types, after_types)
        tree, types = fixed, after_types
        if untouched:
            continue  # its SQL is the one already written (most fixes find nothing to do)
        if out is None:  # the SQL before the first fix that changed the tree: the parsed tree's, from a new parse
            out = _duckdb_sql(_parse(text, source_dialect), copy=False)
        after = _duckdb_sql(tree)
        if after != out:
            applied.append(fix.__name__)
        out = after
    if out is None:  # no fix changed the tree: it is written once, and needs no copy (it is not used again)
        out = _duckdb_sql(tree, copy=False)
    return ConvertedSql(sql, out, source_dialect, tuple(applied))


def _parse(text: str, source_dialect: str) -> exp.Expr:
    """The one query of ``text`` (prepared) in ``source_dialect``; ``ConversionError`` when it is not one query."""
    try:
        trees = [t for t in sqlglot.parse(text, read=source_dialect) if t is not None]
    except (SqlglotError, ValueError) as exc:
        raise ConversionError(f"does not parse as {source_dialect}: {exc}") from exc
    if len(trees) != 1:
        raise ConversionError(f"is not exactly one query in {source_dialect} ({len(trees)} statements)")
    tree = trees[0]
    if isinstance(tree, exp.Query):
        return tree
    if isinstance(
        tree, (exp.Condition, exp.Alias, exp.Star)
    ):  # no statement keyword: ``SELEC name`` reads as ``SELEC AS name``
        raise ConversionError(
            f"does not parse as {source_dialect}: it is no statement, only the expression "
            f"{tree.sql(dialect=source_dialect)!r} (a misspelled keyword?)"
        )
    kind = tree.name if isinstance(tree, exp.Command) else tree.key
    raise ConversionError(f"is not exactly one query in {source_dialect} ({kind.upper()} is not a query)")


def _node_types(nodes: list[exp.Expr]) -> list[tuple[exp.Expr, object]]:
    """Each typed node of a tree's ``nodes`` with its type (a fix may type a node, as ``integer_division`` does:
    that changes the SQL written but not the tree's hash)."""
    return [(node, node._type) for node in nodes if node._type is not None]


def _same_types(before: list[tuple[exp.Expr, object]], after: list[tuple[exp.Expr, object]]) -> bool:
    return len(before) == len(after) and all(n is m and t is u for (n, t), (m, u) in zip(before, after))


def _duckdb_sql(tree: exp.Expr, copy: bool = True) -> str:
    """``tree`` as DuckDB SQL (the generator works on a copy, ``tree`` is left as it is; without ``copy`` the
    generator may change ``tree``: for a tree not used again)."""
    try:
        return tree.sql(dialect=TARGET_DIALECT, copy=copy)
    except SqlglotError as exc:
        raise ConversionError(f"cannot be written as DuckDB SQL: {exc}") from exc
