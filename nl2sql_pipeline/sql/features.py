"""One SQL-features classifier: what a query's syntax tree exhibits (joins, aggregation, windows, ...).

The SQL is parsed once with sqlglot (dialect duckdb); each feature is a small named predicate over the
tree, listed in :data:`FEATURES` in a visible order. The gold generator derives its structural tags
from the features (``gold.sql_analysis.structural_tags``) and the importer its category guess
(``gold.importers.infer_category``).

>>> sorted(sql_features("SELECT a, COUNT(*) FROM t JOIN u ON t.id = u.id GROUP BY a").names)
['aggregate', 'group_by', 'join']
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

SQL_DIALECT = "duckdb"
_DATE_LITERAL = re.compile(r"^\d{4}-\d{2}-\d{2}")
_DATE_FUNCTION_WORDS = re.compile(r"date|time|year|quarter|month|week|day|hour|minute|epoch|extract|now|today")
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)


@dataclass(frozen=True)
class SqlFeatures:
    """The feature names a query exhibits (see :data:`FEATURES`) and the lower-cased tables it names."""

    names: frozenset[str]
    tables: frozenset[str]

    def __contains__(self, name: object) -> bool:
        return name in self.names


def parse(sql: str) -> exp.Expr:
    """One DuckDB statement parsed by sqlglot (raises ``sqlglot.errors.SqlglotError`` when it does not parse,
    also when it is empty)."""
    return sqlglot.parse_one(sql, dialect=SQL_DIALECT)


# ---------------------------------------------------------------- helpers


def _is_date_literal(node: exp.Expr) -> bool:
    """A string literal cast to a date/time type (``DATE '2026-01-01'``)."""
    return (
        isinstance(node, exp.Cast)
        and isinstance(node.this, exp.Literal)
        and node.this.is_string
        and node.to.is_type(*exp.DataType.TEMPORAL_TYPES)
    )


def _is_ratio(div: exp.Div) -> bool:
    """A division by a computed value (a unit conversion such as ``x / 3600.0`` is not a ratio)."""
    divisor = div.expression.unnest() if isinstance(div.expression, exp.Paren) else div.expression
    return not isinstance(divisor, exp.Literal)


def _is_date_function(node: exp.Func) -> bool:
    """True for a date/time function (``date_trunc``, ``extract``, ``year``, ``current_date``, ...)."""
    name = node.name if isinstance(node, exp.Anonymous) else type(node).__name__
    return bool(_DATE_FUNCTION_WORDS.search(name.lower()))


def _defined_aliases(query: exp.Expr) -> set[str]:
    names: set[str] = set()
    for table in query.find_all(exp.Table):
        names.add(table.alias_or_name.lower())
    for sub in query.find_all(exp.Subquery):
        if sub.alias:
            names.add(sub.alias.lower())
    for cte in query.find_all(exp.CTE):
        names.add(cte.alias.lower())
    return names


def _subquery_bodies(tree: exp.Expr) -> list[exp.Expr]:
    bodies: list[exp.Expr] = [node.this for node in tree.find_all(exp.Subquery)]
    bodies += [node.this for node in tree.find_all(exp.Exists)]
    return bodies


def _orders(tree: exp.Expr) -> list[exp.Order]:
    return [order for order in tree.find_all(exp.Order) if not isinstance(order.parent, exp.Window)]


# ---------------------------------------------------------------- features


def join(tree: exp.Expr) -> bool:
    """Any JOIN."""
    return tree.find(exp.Join) is not None


def left_join(tree: exp.Expr) -> bool:
    """A LEFT JOIN."""
    return any(node.side == "LEFT" for node in tree.find_all(exp.Join))


def multi_hop(tree: exp.Expr) -> bool:
    """One FROM clause joining three or more tables."""
    return any(len(select.args.get("joins") or []) >= 2 for select in tree.find_all(exp.Select))


def aggregate(tree: exp.Expr) -> bool:
    """An aggregate function outside a window."""
    return any(not isinstance(agg.parent, exp.Window) for agg in tree.find_all(exp.AggFunc))


def window(tree: exp.Expr) -> bool:
    """A window function."""
    return tree.find(exp.Window) is not None


def group_by(tree: exp.Expr) -> bool:
    """GROUP BY."""
    return tree.find(exp.Group) is not None


def having(tree: exp.Expr) -> bool:
    """HAVING."""
    return tree.find(exp.Having) is not None


def filter_(tree: exp.Expr) -> bool:
    """A WHERE clause of a query (or UPDATE/DELETE)."""
    return any(isinstance(where.parent, (exp.Select, exp.Update, exp.Delete)) for where in tree.find_all(exp.Where))


def order_by(tree: exp.Expr) -> bool:
    """ORDER BY outside window specifications."""
    return bool(_orders(tree))


def top_n(tree: exp.Expr) -> bool:
    """ORDER BY ... LIMIT n."""
    return any(order.parent is not None and order.parent.args.get("limit") for order in _orders(tree))


def distinct(tree: exp.Expr) -> bool:
    """SELECT DISTINCT or an aggregate over DISTINCT values."""
    return tree.find(exp.Distinct) is not None


def case_when(tree: exp.Expr) -> bool:
    """A CASE expression."""
    return tree.find(exp.Case) is not None


def cte(tree: exp.Expr) -> bool:
    """WITH ..."""
    return tree.find(exp.With) is not None


def set_op(tree: exp.Expr) -> bool:
    """UNION / INTERSECT / EXCEPT."""
    return tree.find(exp.SetOperation) is not None


def ratio(tree: exp.Expr) -> bool:
    """A division by a computed value, or AVG over a 0/1 indicator (CASE / cast)."""
    return any(_is_ratio(div) for div in tree.find_all(exp.Div)) or any(
        isinstance(avg.this, (exp.Case, exp.Cast)) for avg in tree.find_all(exp.Avg)
    )


def string_match(tree: exp.Expr) -> bool:
    """LIKE / ILIKE."""
    return tree.find(exp.Like, exp.ILike) is not None


def date_trunc(tree: exp.Expr) -> bool:
    """date_trunc(...)."""
    return tree.find(exp.DateTrunc, exp.TimestampTrunc) is not None


def null_handling(tree: exp.Expr) -> bool:
    """IS [NOT] NULL, COALESCE or NULLIF."""
    return tree.find(exp.Coalesce, exp.Nullif) is not None or any(
        isinstance(node.expression, exp.Null) for node in tree.find_all(exp.Is)
    )


def date_range(tree: exp.Expr) -> bool:
    """A comparison against a literal DATE/TIMESTAMP."""
    return any(any(_is_date_literal(arg) for arg in node.iter_expressions()) for node in tree.find_all(*_COMPARISONS))


def subquery(tree: exp.Expr) -> bool:
    """A subquery (scalar, IN, EXISTS or derived table)."""
    return bool(_subquery_bodies(tree))


def correlated_subquery(tree: exp.Expr) -> bool:
    """A subquery referencing an alias of an enclosing query."""
    for body in _subquery_bodies(tree):
        inner = _defined_aliases(body)
        if any(col.table and col.table.lower() not in inner for col in body.find_all(exp.Column)):
            return True
    return False


def temporal_cast(tree: exp.Expr) -> bool:
    """Any cast to a date/time type (of a literal or a column)."""
    return any(cast.to.is_type(*exp.DataType.TEMPORAL_TYPES) for cast in tree.find_all(exp.Cast))


def date_function(tree: exp.Expr) -> bool:
    """A date/time function (``date_trunc``, ``extract``, ``year``, ``current_date``, ...)."""
    return any(not isinstance(func, exp.Cast) and _is_date_function(func) for func in tree.find_all(exp.Func))


def date_literal_filter(tree: exp.Expr) -> bool:
    """A WHERE or HAVING clause holding a string literal that starts like a date (``'2026-01-01'``)."""
    return any(
        literal.is_string and bool(_DATE_LITERAL.match(literal.this))
        for clause in (exp.Where, exp.Having)
        for node in tree.find_all(clause)
        for literal in node.find_all(exp.Literal)
    )


FEATURES: tuple[tuple[str, Callable[[exp.Expr], bool]], ...] = (
    ("join", join),
    ("left_join", left_join),
    ("multi_hop", multi_hop),
    ("aggregate", aggregate),
    ("window", window),
    ("group_by", group_by),
    ("having", having),
    ("filter", filter_),
    ("order_by", order_by),
    ("top_n", top_n),
    ("distinct", distinct),
    ("case_when", case_when),
    ("cte", cte),
    ("set_op", set_op),
    ("ratio", ratio),
    ("string_match", string_match),
    ("date_trunc", date_trunc),
    ("null_handling", null_handling),
    ("date_range", date_range),
    ("subquery", subquery),
    ("correlated_subquery", correlated_subquery),
    ("temporal_cast", temporal_cast),
    ("date_function", date_function),
    ("date_literal_filter", date_literal_filter),
)
"""Feature name -> predicate over the parsed tree, in the order they are checked."""


def sql_features(sql: str | exp.Expr) -> SqlFeatures:
    """The features of ``sql`` (a string is parsed once; a tree is used as given).

    Raises ``sqlglot.errors.SqlglotError`` when the string does not parse (also when it is empty).
    """
    tree = parse(sql) if isinstance(sql, str) else sql
    names = frozenset(name for name, predicate in FEATURES if predicate(tree))
    tables = frozenset(table.name.lower() for table in tree.find_all(exp.Table))
    return SqlFeatures(names=names, tables=tables)
