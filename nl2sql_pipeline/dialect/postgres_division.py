"""Postgres's integer division in DuckDB, and the Postgres type of an expression (one of ``postgres_fixes``).

``columns`` maps lower-case table names to lower-case column names to a column with a ``duckdb_type`` (the
type in the DuckDB copy, which is also the type the Postgres verification loads: ``postgres_verify``).

``integer_division``: ``/`` of two integers truncates in Postgres (``7 / 2`` is 3), DuckDB's ``/``
   always divides as floats: such a division becomes DuckDB's integer division ``//`` (which also
   truncates toward zero). Operand types follow Postgres's rules: ``count(*)`` is a bigint, ``sum`` of an
   integer a bigint but ``sum`` of a bigint a numeric, ``date - date`` an integer, ``avg`` and
   ``extract`` numeric; columns are typed by the database, through CTEs and derived tables too.

>>> from sqlglot import parse_one
>>> class Col:
...     duckdb_type = "BIGINT"
>>> columns = {"flights": {"arrival_time": Col(), "departure_time": Col()}}
>>> integer_division(parse_one("SELECT (arrival_time - departure_time) / 60 FROM flights", read="postgres"), columns).sql("duckdb")
'SELECT (arrival_time - departure_time) // 60 FROM flights'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlglot import exp

from nl2sql_pipeline.dialect.sqlite_fixes import ColumnInfo

SMALLINT, INTEGER, BIGINT, NUMERIC, DOUBLE, DATE = "smallint", "integer", "bigint", "numeric", "double", "date"
INTEGER_TYPES: tuple[str, ...] = (SMALLINT, INTEGER, BIGINT)
"""Postgres's integer types, narrowest first (the result of an operation on two is the wider)."""

_FROM_DUCKDB: dict[str, str] = {
    "TINYINT": SMALLINT,
    "UTINYINT": SMALLINT,
    "SMALLINT": SMALLINT,
    "USMALLINT": INTEGER,
    "INTEGER": INTEGER,
    "UINTEGER": BIGINT,
    "BIGINT": BIGINT,
    "UBIGINT": NUMERIC,
    "HUGEINT": NUMERIC,
    "UHUGEINT": NUMERIC,
    "DOUBLE": DOUBLE,
    "FLOAT": DOUBLE,
    "DATE": DATE,
}
_MAX_DEPTH = 32
"""Column resolution through CTEs and derived tables stops this deep (a recursive CTE refers to itself)."""


def postgres_type_of_duckdb(duckdb_type: str) -> str | None:
    """The Postgres type family a DuckDB column type is loaded as, for typing (None: not needed here).

    >>> [postgres_type_of_duckdb(t) for t in ("INTEGER", "BIGINT", "DECIMAL(10,2)", "VARCHAR")]
    ['integer', 'bigint', 'numeric', None]
    """
    upper = duckdb_type.upper()
    if upper.startswith("DECIMAL"):
        return NUMERIC
    return _FROM_DUCKDB.get(upper)


def _wider(left: str, right: str) -> str:
    return left if INTEGER_TYPES.index(left) >= INTEGER_TYPES.index(right) else right


def _literal_type(node: exp.Literal) -> str | None:
    if node.is_string:
        return None
    if not node.is_int:
        return NUMERIC
    value = abs(int(node.name))
    return INTEGER if value < 2**31 else BIGINT if value < 2**63 else NUMERIC


def _cast_type(to: exp.DataType) -> str | None:
    if to.is_type(exp.DataType.Type.SMALLINT, exp.DataType.Type.TINYINT):
        return SMALLINT
    if to.is_type(exp.DataType.Type.INT):
        return INTEGER
    if to.is_type(*exp.DataType.INTEGER_TYPES):
        return BIGINT
    if to.is_type(exp.DataType.Type.DATE):
        return DATE
    return None


def _arithmetic_type(node: exp.Binary, columns: ColumnInfo, depth: int) -> str | None:
    left, right = postgres_type(node.this, columns, depth), postgres_type(node.expression, columns, depth)
    if left in INTEGER_TYPES and right in INTEGER_TYPES:
        return _wider(left, right)
    if isinstance(node, exp.Sub) and left == DATE and right == DATE:
        return INTEGER  # the number of days between two dates
    if isinstance(node, (exp.Add, exp.Sub)) and left == DATE and right in INTEGER_TYPES:
        return DATE
    return None


def postgres_type(node: exp.Expr, columns: ColumnInfo, depth: int = 0) -> str | None:
    """The Postgres type of ``node`` when it matters for division (an integer type, numeric, date), else None."""
    if isinstance(node, (exp.Paren, exp.Neg, exp.Max, exp.Min, exp.Abs)):
        return postgres_type(node.this, columns, depth)
    if isinstance(node, exp.Literal):
        return _literal_type(node)
    if isinstance(node, exp.Column):
        return _column_type(node, columns, depth)
    if isinstance(node, exp.Count):
        return BIGINT
    if isinstance(node, exp.Sum):
        inner = postgres_type(node.this, columns, depth)
        return BIGINT if inner in (SMALLINT, INTEGER) else NUMERIC if inner in (BIGINT, NUMERIC) else inner
    if isinstance(node, (exp.Length, exp.Unicode)):
        return INTEGER
    if isinstance(node, exp.Cast):
        return _cast_type(node.to)
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Mod, exp.Div, exp.IntDiv)):
        return _arithmetic_type(node, columns, depth)
    return None


def _derived_queries(node: exp.Expr) -> dict[str, exp.Query]:
    """CTE name (lower case) -> its query, for every CTE of the statement ``node`` belongs to."""
    root = node.root()
    return {cte.alias.lower(): cte.this for cte in root.find_all(exp.CTE) if isinstance(cte.this, exp.Query)}


def _sources(select: exp.Select) -> dict[str, exp.Table | exp.Query]:
    """Alias (lower case) -> the table or the derived query each FROM/JOIN item of ``select`` reads."""
    items: list[exp.Expr] = []
    source = select.args.get("from_") or select.args.get("from")  # the key is ``from_`` since sqlglot 28
    if source is not None:
        items.append(source.this)
    items += [join.this for join in select.args.get("joins") or ()]
    found: dict[str, exp.Table | exp.Query] = {}
    for item in items:
        if isinstance(item, exp.Table):
            found[item.alias_or_name.lower()] = item
        elif isinstance(item, exp.Subquery) and isinstance(item.this, exp.Query) and item.alias:
            found[item.alias.lower()] = item.this
    return found


def _type_in_source(source: exp.Table | exp.Query, name: str, columns: ColumnInfo, depth: int) -> tuple[bool, Any]:
    """(the source has a column ``name``, its Postgres type)."""
    if isinstance(source, exp.Table):
        derived = _derived_queries(source).get(source.name.lower())
        if derived is None or source.db:
            table: Mapping[str, Any] = columns.get(source.name.lower(), {})
            if name not in table:
                return False, None
            return True, postgres_type_of_duckdb(str(getattr(table[name], "duckdb_type", "") or ""))
        source = derived
    for projection in source.selects:
        if projection.alias_or_name.lower() == name:
            inner = projection.this if isinstance(projection, exp.Alias) else projection
            return True, postgres_type(inner, columns, depth + 1)
    return False, None


def _column_type(column: exp.Column, columns: ColumnInfo, depth: int) -> str | None:
    """The column's type from the nearest query scope that has it (correlated columns from outer scopes)."""
    if depth > _MAX_DEPTH:
        return None
    name, qualifier = column.name.lower(), column.table.lower()
    select = column.find_ancestor(exp.Select)
    while select is not None:
        sources = _sources(select)
        if qualifier:
            if qualifier in sources:
                return _type_in_source(sources[qualifier], name, columns, depth)[1]
        else:
            hits = [t for has, t in (_type_in_source(s, name, columns, depth) for s in sources.values()) if has]
            if hits:
                return hits[0] if len(hits) == 1 else None
        select = select.find_ancestor(exp.Select)
    return None


def integer_division(tree: exp.Expr, columns: ColumnInfo) -> exp.Expr:
    """``a / b`` of two integers truncates in Postgres: written as DuckDB's integer division ``a // b``."""
    divisions = list(tree.find_all(exp.Div, bfs=False))
    for div in reversed(divisions):  # innermost first, so an outer division sees the inner one's type
        left = postgres_type(div.this, columns)
        right = postgres_type(div.expression, columns)
        if left in INTEGER_TYPES and right in INTEGER_TYPES:
            replacement = exp.IntDiv(this=div.this.copy(), expression=div.expression.copy())
            if div is tree:
                return replacement
            div.replace(replacement)
    return tree
