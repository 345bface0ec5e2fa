"""Spider's hardness of a gold query (easy / medium / hard / extra), computed on sqlglot's AST.

    >>> spider_hardness("SELECT count(*) FROM singer")
    'easy'
    >>> spider_hardness("SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)")
    'hard'

This follows ``eval_hardness`` of Spider's official ``evaluation.py`` (taoyds/spider; test-suite-sql-eval
keeps the same function), which classifies by three counts taken on the outermost query (for a set
operation: its leftmost SELECT, as Spider's parser nests the rest under it):

- ``component1``: one each for WHERE, GROUP BY, ORDER BY and LIMIT; one per joined table; one per ``OR``
  and one per ``LIKE`` condition in the join conditions, WHERE and HAVING.
- ``component2``: nested queries: one per subquery that is an operand of a condition in the join
  conditions, WHERE or HAVING, plus one when the query is a UNION / INTERSECT / EXCEPT. (A subquery in
  FROM is a table, as in Spider, not a nested query.)
- ``others``: one each for more than one aggregate, more than one selected column, more than one WHERE
  condition and more than one GROUP BY key.

The aggregate count reproduces what ``count_agg`` computes on Spider's parse, quirks included, so the
levels match the leaderboards': a SELECT item counts when it starts with an aggregate
(``max(a) - min(a)`` counts once), an ORDER BY key per aggregate operand, a WHERE condition when it is
negated (``NOT IN``, ``NOT LIKE``, ``NOT BETWEEN``: Spider reads the condition's ``not`` flag there),
and HAVING once per negated condition and once per ``AND``/``OR`` between its conditions.

Then: easy if component1 <= 1, others == 0 and component2 == 0; medium if (others <= 2, component1 <= 1
and component2 == 0) or (component1 <= 2, others < 2 and component2 == 0); hard if (others > 2,
component1 <= 2 and component2 == 0) or (2 < component1 <= 3, others <= 2 and component2 == 0) or
(component1 <= 1, others == 0 and component2 <= 1); extra otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from nl2sql_pipeline.errors import Nl2SqlError

HARDNESS_LEVELS: tuple[str, ...] = ("easy", "medium", "hard", "extra")
"""Spider's levels, easiest first (the order of ``evaluation.py``'s score table)."""

_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)


class HardnessError(Nl2SqlError):
    """The SQL is not exactly one query sqlglot can parse in the given dialect."""


@dataclass(frozen=True)
class HardnessCounts:
    """The three counts ``eval_hardness`` classifies by (see the module docstring)."""

    component1: int
    component2: int
    others: int

    @property
    def level(self) -> str:
        """easy / medium / hard / extra, by ``eval_hardness``'s rules."""
        return hardness_level(self.component1, self.component2, self.others)


def hardness_level(component1: int, component2: int, others: int) -> str:
    """``eval_hardness``'s decision from the three counts."""
    if component1 <= 1 and others == 0 and component2 == 0:
        return "easy"
    if (others <= 2 and component1 <= 1 and component2 == 0) or (component1 <= 2 and others < 2 and component2 == 0):
        return "medium"
    if (
        (others > 2 and component1 <= 2 and component2 == 0)
        or (2 < component1 <= 3 and others <= 2 and component2 == 0)
        or (component1 <= 1 and others == 0 and component2 <= 1)
    ):
        return "hard"
    return "extra"


def _unwrap(node: exp.Expr | None) -> exp.Expr | None:
    """``node`` without parentheses and a column alias around it."""
    while isinstance(node, (exp.Paren, exp.Alias)):
        node = node.this
    return node


def _conditions(node: exp.Expr | None) -> tuple[list[exp.Expr], int]:
    """The conditions joined by AND/OR in a boolean clause (parentheses flattened), and how many ORs."""
    node = _unwrap(node)
    if node is None:
        return [], 0
    if isinstance(node, exp.Connector):
        left, left_ors = _conditions(node.this)
        right, right_ors = _conditions(node.expression)
        return left + right, left_ors + right_ors + (1 if isinstance(node, exp.Or) else 0)
    return [node], 0


def _negated(condition: exp.Expr) -> exp.Expr | None:
    """The negated comparison of ``x NOT IN/LIKE/BETWEEN ...`` (Spider's ``not_op``), else None."""
    if isinstance(condition, exp.Not):
        inner = _unwrap(condition.this)
        return None if isinstance(inner, exp.Is) else inner
    return condition if condition.args.get("negate") else None


def _is_like(condition: exp.Expr) -> bool:
    return isinstance(_negated(condition) or condition, (exp.Like, exp.ILike))


def _nested_queries(node: exp.Expr) -> Iterator[exp.Expr]:
    """The queries directly inside ``node`` (not those nested deeper inside them)."""
    stack = list(node.iter_expressions())
    while stack:
        child = stack.pop()
        if isinstance(child, (exp.Subquery, exp.Query)):
            yield child
            continue
        stack.extend(child.iter_expressions())


def _aggregates_leading(node: exp.Expr | None) -> int:
    """1 when ``node`` is an aggregate or arithmetic whose left operand is one (Spider's SELECT item)."""
    node = _unwrap(node)
    while isinstance(node, _ARITHMETIC):
        node = _unwrap(node.this)
    return 1 if isinstance(node, exp.AggFunc) else 0


def _aggregate_operands(node: exp.Expr | None) -> int:
    """Aggregates among a value's operands (Spider's ORDER BY key: ``unit_op`` of two column units)."""
    node = _unwrap(node)
    if isinstance(node, _ARITHMETIC):
        return sum(1 for side in (node.this, node.expression) if isinstance(_unwrap(side), exp.AggFunc))
    return 1 if isinstance(node, exp.AggFunc) else 0


def outermost_select(tree: exp.Expr) -> tuple[exp.Expr, bool]:
    """The SELECT Spider's counts are taken on (a set operation's leftmost), and whether it is one."""
    node = _unwrap(tree) or tree
    is_set_operation = False
    while isinstance(node, (exp.SetOperation, exp.Subquery)):
        is_set_operation = is_set_operation or isinstance(node, exp.SetOperation)
        node = _unwrap(node.this) or node.this
    return node, is_set_operation


def hardness_counts(tree: exp.Expr) -> HardnessCounts:
    """Spider's ``count_component1``, ``count_component2`` and ``count_others`` of a parsed query."""
    select, is_set_operation = outermost_select(tree)
    where = select.args.get("where")
    having = select.args.get("having")
    group = select.args.get("group")
    order = select.args.get("order")
    joins = select.args.get("joins") or []
    where_conditions, where_ors = _conditions(where.this if where else None)
    having_conditions, having_ors = _conditions(having.this if having else None)
    join_conditions: list[exp.Expr] = []
    join_ors = 0
    for join in joins:
        found, ors = _conditions(join.args.get("on"))
        join_conditions += found
        join_ors += ors
    conditions = join_conditions + where_conditions + having_conditions

    component1 = sum(1 for clause in (where, group, order, select.args.get("limit")) if clause is not None)
    component1 += len(joins) + join_ors + where_ors + having_ors
    component1 += sum(1 for c in conditions if _is_like(c))

    component2 = sum(1 for c in conditions for _ in _nested_queries(c)) + (1 if is_set_operation else 0)

    group_keys = list(group.expressions) if group is not None else []
    aggregates = sum(_aggregates_leading(e) for e in select.expressions)
    aggregates += sum(1 for c in where_conditions if _negated(c) is not None)
    aggregates += sum(1 for key in group_keys if isinstance(_unwrap(key), exp.AggFunc))
    if order is not None:
        aggregates += sum(_aggregate_operands(key.this) for key in order.expressions)
    aggregates += sum(1 for c in having_conditions if _negated(c) is not None)
    aggregates += max(len(having_conditions) - 1, 0)  # Spider counts each AND/OR token of HAVING
    others = sum(
        (
            aggregates > 1,
            len(select.expressions) > 1,
            len(where_conditions) > 1,
            len(group_keys) > 1,
        )
    )
    return HardnessCounts(component1, component2, others)


def spider_hardness(sql: str, dialect: str = "sqlite") -> str:
    """Spider's hardness of ``sql`` read in ``dialect``: easy, medium, hard or extra.

    Follows ``eval_hardness`` of Spider's ``evaluation.py`` (see the module docstring). Raises
    ``HardnessError`` when ``sql`` is not exactly one query sqlglot parses in ``dialect``.
    """
    text = sql.strip().rstrip(";").strip()
    try:
        trees = [t for t in sqlglot.parse(text, read=dialect) if t is not None]
    except (SqlglotError, ValueError) as exc:
        raise HardnessError(f"does not parse as {dialect}: {exc}") from exc
    if len(trees) != 1 or not isinstance(trees[0], exp.Query):
        raise HardnessError(f"is not exactly one query in {dialect} ({len(trees)} statements)")
    return hardness_counts(trees[0]).level
