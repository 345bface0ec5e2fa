"""Seeded SQL mutations: small named rewrites of a sqlglot tree that usually change a query's answer.

The ``sql-mutant`` offline model applies one of them to the expected SQL, so the harness is shown
answers that are plausibly, subtly wrong. Each rule takes a tree (which it may modify: callers pass a
copy) and a ``random.Random``, and returns the rewritten tree, or None when it does not apply.
``MUTATIONS`` lists them in a fixed order; ``mutate`` tries them in an order drawn from the rng.

    >>> import random
    >>> from sqlglot import parse_one
    >>> flip_comparison(parse_one("SELECT a FROM t WHERE a > 1"), random.Random(0)).sql()
    'SELECT a FROM t WHERE a >= 1'
    >>> alter_limit(parse_one("SELECT a FROM t LIMIT 10"), random.Random(2)).sql()
    'SELECT a FROM t LIMIT 9'
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

logger = logging.getLogger(__name__)

DIALECT = "duckdb"
Mutation = Callable[[exp.Expr, random.Random], "exp.Expr | None"]

_DATE_LITERAL_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})((?:[ T].*)?)$")
DATE_SHIFTS_DAYS: tuple[int, ...] = (-30, -7, -1, 1, 7, 30)
_FLIPPED: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.GT: exp.GTE,
    exp.GTE: exp.GT,
    exp.LT: exp.LTE,
    exp.LTE: exp.LT,
}
_SWAPPED: dict[type[exp.Expr], type[exp.Expr]] = {
    exp.Sum: exp.Avg,
    exp.Avg: exp.Sum,
    exp.Min: exp.Max,
    exp.Max: exp.Min,
}


def _query_selects(tree: exp.Expr) -> list[exp.Select]:
    return list(tree.find_all(exp.Select))


def drop_where_predicate(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    """Drop one conjunct of a WHERE clause (the whole WHERE when it has a single predicate).

    >>> drop_where_predicate(sqlglot.parse_one("SELECT a FROM t WHERE a > 1 AND b = 2"), random.Random(0)).sql()
    'SELECT a FROM t WHERE a > 1'
    """
    wheres = list(tree.find_all(exp.Where))
    if not wheres:
        return None
    where = rng.choice(wheres)
    condition = where.this
    conjuncts = list(condition.flatten()) if isinstance(condition, exp.And) else [condition]
    if len(conjuncts) == 1:
        where.pop()
        return tree
    del conjuncts[rng.randrange(len(conjuncts))]
    where.set("this", exp.and_(*conjuncts, copy=False))
    return tree


def swap_aggregate(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    """SUM<->AVG, MIN<->MAX, or COUNT(DISTINCT x) -> COUNT(x), on one aggregate.

    >>> swap_aggregate(sqlglot.parse_one("SELECT SUM(x) FROM t"), random.Random(0)).sql()
    'SELECT AVG(x) FROM t'
    """
    targets: list[exp.Expr] = [
        node
        for node in tree.find_all(exp.Sum, exp.Avg, exp.Min, exp.Max, exp.Count)
        if type(node) in _SWAPPED
        or (isinstance(node, exp.Count) and isinstance(node.this, exp.Distinct) and len(node.this.expressions) == 1)
    ]
    if not targets:
        return None
    node = rng.choice(targets)
    if isinstance(node, exp.Count):
        node.set("this", node.this.expressions[0])
        return tree
    node.replace(_SWAPPED[type(node)](this=node.this))
    return tree


def change_join_type(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    """Turn one inner join (``JOIN`` / ``INNER JOIN`` with ON or USING) into a LEFT join.

    >>> change_join_type(sqlglot.parse_one("SELECT * FROM a JOIN b ON a.id = b.id"), random.Random(0)).sql()
    'SELECT * FROM a LEFT JOIN b ON a.id = b.id'
    """
    joins = [
        join
        for join in tree.find_all(exp.Join)
        if not join.side
        and (join.kind or "").upper() in ("", "INNER")
        and (join.args.get("on") is not None or join.args.get("using"))
    ]
    if not joins:
        return None
    join = rng.choice(joins)
    join.set("kind", None)
    join.set("side", "LEFT")
    return tree


def drop_distinct(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    """Remove DISTINCT from one ``SELECT DISTINCT`` (not DISTINCT ON).

    >>> drop_distinct(sqlglot.parse_one("SELECT DISTINCT a FROM t"), random.Random(0)).sql()
    'SELECT a FROM t'
    """
    selects = [s for s in _query_selects(tree) if s.args.get("distinct") and not s.args["distinct"].args.get("on")]
    if not selects:
        return None
    rng.choice(selects).set("distinct", None)
    return tree


def _shift_date_text(text: str, days: int) -> str | None:
    match = _DATE_LITERAL_RE.match(text)
    if not match:
        return None
    try:
        day = dt.date.fromisoformat(match.group(1))
    except ValueError:
        return None
    return (day + dt.timedelta(days=days)).isoformat() + match.group(2)


def shift_date_bound(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    """Move one date literal (``DATE '2026-01-01'`` or ``'2026-01-01'``) by a few days either way.

    >>> shift_date_bound(sqlglot.parse_one("SELECT a FROM t WHERE d >= DATE '2026-01-01'"), random.Random(4)).sql()
    "SELECT a FROM t WHERE d >= CAST('2025-12-31' AS DATE)"
    """
    literals = [
        lit for lit in tree.find_all(exp.Literal) if lit.is_string and _shift_date_text(lit.this, 0) is not None
    ]
    if not literals:
        return None
    literal = rng.choice(literals)
    shifted = _shift_date_text(literal.this, rng.choice(DATE_SHIFTS_DAYS))
    literal.replace(exp.Literal.string(shifted))
    return tree


def alter_limit(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    """Change one integer LIMIT to n+1, n-1 (n > 1) or 2n.

    >>> alter_limit(sqlglot.parse_one("SELECT a FROM t LIMIT 5"), random.Random(1)).sql()
    'SELECT a FROM t LIMIT 10'
    """
    limits = [
        limit
        for limit in tree.find_all(exp.Limit)
        if isinstance(limit.expression, exp.Literal) and limit.expression.is_int and int(limit.expression.this) > 0
    ]
    if not limits:
        return None
    limit = rng.choice(limits)
    n = int(limit.expression.this)
    choices = [n + 1, n * 2] + ([n - 1] if n > 1 else [])
    limit.set("expression", exp.Literal.number(rng.choice(sorted(set(choices)))))
    return tree


def flip_comparison(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    """Make one strict comparison inclusive or one inclusive comparison strict (> <-> >=, < <-> <=).

    >>> flip_comparison(sqlglot.parse_one("SELECT a FROM t WHERE a <= 3"), random.Random(0)).sql()
    'SELECT a FROM t WHERE a < 3'
    """
    comparisons = list(tree.find_all(*_FLIPPED))
    if not comparisons:
        return None
    node = rng.choice(comparisons)
    node.replace(_FLIPPED[type(node)](this=node.this, expression=node.expression))
    return tree


def drop_order_tiebreaker(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    """Drop the last key of a query's ORDER BY when it has two or more (window orders are left alone).

    >>> drop_order_tiebreaker(sqlglot.parse_one("SELECT a FROM t ORDER BY a DESC, b"), random.Random(0)).sql()
    'SELECT a FROM t ORDER BY a DESC'
    """
    orders = [
        order
        for order in tree.find_all(exp.Order)
        if not isinstance(order.parent, exp.Window) and len(order.expressions) >= 2
    ]
    if not orders:
        return None
    order = rng.choice(orders)
    order.set("expressions", order.expressions[:-1])
    return tree


def _ordinal(node: exp.Expr) -> int | None:
    inner = node.this if isinstance(node, exp.Ordered) else node
    return int(inner.this) if isinstance(inner, exp.Literal) and inner.is_int else None


def _renumber(keys: list[exp.Expr], removed: list[int], key: exp.Expr, aliases: set[str]) -> list[exp.Expr]:
    """GROUP BY / ORDER BY keys without those naming the dropped key, ordinals shifted past the gaps."""
    kept = []
    for node in keys:
        inner = node.this if isinstance(node, exp.Ordered) else node
        ordinal = _ordinal(node)
        if ordinal is not None:
            if ordinal in removed:
                continue
            shift = sum(1 for position in removed if position < ordinal)
            if shift:
                renumbered = exp.Literal.number(ordinal - shift)
                if isinstance(node, exp.Ordered):
                    node.set("this", renumbered)
                else:
                    node = renumbered
        elif inner == key or (isinstance(inner, exp.Column) and not inner.table and inner.name in aliases):
            continue
        kept.append(node)
    return kept


def _repeating_projections(select: exp.Select, key: exp.Expr) -> list[int]:
    """1-based positions of the projections that are ``key`` itself or the alias it names."""
    alias_key = key.name if isinstance(key, exp.Column) and not key.table else None
    return [
        i
        for i, p in enumerate(select.expressions, start=1)
        if p.unalias() == key or (alias_key is not None and isinstance(p, exp.Alias) and p.alias == alias_key)
    ]


def drop_group_by_key(tree: exp.Expr, rng: random.Random) -> exp.Expr | None:
    """Drop one GROUP BY key, with the projections and ORDER BY keys that repeat it.

    Positional references (``GROUP BY 1``, ``ORDER BY 2``) are renumbered to follow their projections.
    A projection is only dropped from the outermost query (a CTE's columns may be used outside it).

    >>> tree = sqlglot.parse_one("SELECT a, b, SUM(x) FROM t GROUP BY a, b ORDER BY 3")
    >>> drop_group_by_key(tree, random.Random(0)).sql()
    'SELECT a, SUM(x) FROM t GROUP BY a ORDER BY 2'
    """
    options: list[tuple[exp.Select, exp.Group, exp.Expr, list[int]]] = []
    for select in _query_selects(tree):
        group = select.args.get("group")
        if group is None:
            continue
        outermost = select.find_ancestor(exp.CTE, exp.Subquery) is None
        for key in group.expressions:
            ordinal = _ordinal(key)
            if ordinal is not None:
                if not 1 <= ordinal <= len(select.expressions):
                    continue
                key = select.expressions[ordinal - 1].unalias()
            removed = _repeating_projections(select, key)
            if (removed and not outermost) or len(removed) == len(select.expressions):
                continue
            options.append((select, group, key, removed))
    if not options:
        return None
    select, group, key, removed = rng.choice(options)
    projections = select.expressions
    aliases = {projections[i - 1].alias for i in removed if isinstance(projections[i - 1], exp.Alias)}
    select.set("expressions", [p for i, p in enumerate(projections, start=1) if i not in removed])
    for clause in (group, select.args.get("order")):
        if clause is None:
            continue
        kept = _renumber(list(clause.expressions), removed, key, aliases)
        if kept:
            clause.set("expressions", kept)
        else:
            clause.pop()
    return tree


MUTATIONS: tuple[Mutation, ...] = (
    drop_where_predicate,
    swap_aggregate,
    change_join_type,
    drop_distinct,
    shift_date_bound,
    alter_limit,
    flip_comparison,
    drop_order_tiebreaker,
    drop_group_by_key,
)
MUTATION_NAMES: tuple[str, ...] = tuple(m.__name__ for m in MUTATIONS)


def mutate(sql: str, rng: random.Random) -> tuple[str, str | None]:
    """Apply one applicable mutation, chosen by ``rng``: ``(mutated_sql, name)``, or ``(sql, None)``.

    A mutation counts only when its output parses and differs from the (normalized) input; when none
    qualifies, or ``sql`` does not parse, the input comes back unchanged.
    """
    try:
        tree = sqlglot.parse_one(sql, dialect=DIALECT)
    except SqlglotError as exc:
        logger.warning("cannot mutate unparseable SQL (%s): %s", exc, sql[:200])
        return sql, None
    original = tree.sql(dialect=DIALECT)
    order = list(MUTATIONS)
    rng.shuffle(order)
    for mutation in order:
        mutated = mutation(tree.copy(), rng)
        if mutated is None:
            continue
        mutated_sql = mutated.sql(dialect=DIALECT)
        if mutated_sql == original:
            continue
        try:
            sqlglot.parse_one(mutated_sql, dialect=DIALECT)
        except SqlglotError:
            logger.debug("mutation %s produced unparseable SQL, skipped", mutation.__name__)
            continue
        return mutated_sql, mutation.__name__
    return sql, None
