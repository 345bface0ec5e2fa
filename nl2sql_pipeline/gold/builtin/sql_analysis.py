"""SQL analysis for the gold sets: parsing, the literal-free skeleton of a query and its structural tags.

Tags come from the one SQL-features classifier (:mod:`nl2sql_pipeline.sql.features`).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from nl2sql_pipeline.gold.builtin.vocabulary import SQL_DIALECT, GoldTemplateError
from nl2sql_pipeline.sql.features import sql_features

BRIDGE_TABLE = "anime_genres"
# query tags that are features of the same name (see nl2sql_pipeline.sql.features.FEATURES)
_FEATURE_TAGS: frozenset[str] = frozenset(
    {
        "join",
        "left_join",
        "multi_hop",
        "aggregate",
        "window",
        "group_by",
        "having",
        "filter",
        "order_by",
        "top_n",
        "distinct",
        "case_when",
        "cte",
        "set_op",
        "ratio",
        "string_match",
        "date_trunc",
        "null_handling",
        "date_range",
        "subquery",
        "correlated_subquery",
    }
)


def parse_sql(sql: str) -> exp.Expr:
    """Parse one DuckDB statement with sqlglot; raise GoldTemplateError when it does not parse (or is empty)."""
    try:
        return sqlglot.parse_one(sql, dialect=SQL_DIALECT)
    except sqlglot.errors.ParseError as exc:
        raise GoldTemplateError([f"SQL does not parse as DuckDB: {exc}\n{sql}"]) from exc


def sql_skeleton(sql: str | exp.Expr) -> str:
    """The query with every literal replaced by ``?``, normalized by sqlglot: equal skeletons = same shape."""
    tree = parse_sql(sql) if isinstance(sql, str) else sql
    stripped = tree.copy().transform(lambda node: exp.Placeholder() if isinstance(node, exp.Literal) else node)
    return stripped.sql(dialect=SQL_DIALECT, normalize=True, comments=False)


def structural_tags(sql: str | exp.Expr) -> frozenset[str]:
    """The query tags (see QUERY_TAGS) that the SQL's syntax tree exhibits."""
    features = sql_features(parse_sql(sql) if isinstance(sql, str) else sql)
    tags = set(features.names & _FEATURE_TAGS)
    if "join" in features and BRIDGE_TABLE in features.tables:
        tags.add("bridge")  # joins through the anime_genres bridge table
    return frozenset(tags)
