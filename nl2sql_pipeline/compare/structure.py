"""AST clause scores: how alike the expected and the candidate query are, clause by clause (structure only).

    scores = clause_scores(expected_sql, candidate_sql)   # {"select": 1.0, "where": 0.5, ...} or None

Both queries are parsed with sqlglot (DuckDB dialect), identifiers are normalized (case-folded), and each
clause of the outermost query becomes a set of normalized items: SELECT expressions (aliases dropped),
FROM/JOIN tables with each join's kind and condition, WHERE and HAVING conjuncts, GROUP BY and ORDER BY
items (with direction), the LIMIT. A clause scores the F1 of its two item sets (1.0 when both are empty).
These numbers describe structure, never correctness: two very different queries can return the same rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from nl2sql_pipeline.sql import parse as sql_ast

CLAUSES: tuple[str, ...] = ("select", "from_join", "where", "group_by", "having", "order_by", "limit")

CLAUSE_ITEMS_VERSION = 1
"""Bump when ``parse_clauses`` would make other items of the same SQL: stored items of another version
are ignored (``ClauseItems.from_json``) and worked out again."""


@dataclass(frozen=True)
class ClauseItems:
    """The normalized items of each clause of one query's outermost SELECT, and whether it is DISTINCT."""

    items: dict[str, frozenset[str]]
    distinct: bool
    aggregates: frozenset[str]
    join_kinds: frozenset[str]

    def to_json(self) -> str:
        """The items as JSON (sorted, stamped with ``CLAUSE_ITEMS_VERSION``), for the oracle's stored rows."""
        return json.dumps(
            {
                "version": CLAUSE_ITEMS_VERSION,
                "items": {clause: sorted(self.items[clause]) for clause in CLAUSES},
                "distinct": self.distinct,
                "aggregates": sorted(self.aggregates),
                "join_kinds": sorted(self.join_kinds),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> ClauseItems | None:
        """Items stored by ``to_json``; None when they were made by another version of ``parse_clauses``."""
        data = json.loads(text)
        if data.get("version") != CLAUSE_ITEMS_VERSION:
            return None
        return cls(
            items={clause: frozenset(data["items"][clause]) for clause in CLAUSES},
            distinct=bool(data["distinct"]),
            aggregates=frozenset(data["aggregates"]),
            join_kinds=frozenset(data["join_kinds"]),
        )


@lru_cache(maxsize=4096)
def parse_clauses(sql: str) -> ClauseItems | None:
    """The clause items of ``sql`` (None when it does not parse or has no SELECT)."""
    try:  # ``sqlglot.parse_one`` from the tokens the policy engine cached (a tree of our own: items are generated in place)
        parsed = sql_ast.DIALECT.parser().parse(list(sql_ast.tokens(sql)), sql)
    except sqlglot.errors.SqlglotError:  # a parse error, or a tokenizer error (an unclosed quote or comment)
        return None
    if not parsed or parsed[0] is None:
        return None
    tree = exp.Block(expressions=parsed) if len(parsed) > 1 else parsed[0]
    if needs_normalizing(tree):
        tree = normalize_identifiers(tree, dialect=sql_ast.DIALECT)
    return _clause_items(tree)


def needs_normalizing(tree: exp.Expr) -> bool:
    """Whether ``normalize_identifiers`` would change ``tree``: DuckDB folds every identifier (quoted ones
    too) to lower case, so a tree whose identifiers are all lower case is already normalized and the
    pass (a walk that visits every node, ~20 % of the clause items' cost) can be skipped."""
    for identifier in tree.find_all(exp.Identifier):
        name = identifier.this
        if not isinstance(name, str) or name != name.lower():
            return True
    return False


def _clause_items(tree: exp.Expr) -> ClauseItems | None:
    """The clause items of a normalized tree of this call's own (items are generated without copies)."""
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    if select is None:
        return None
    order_tree = tree if tree.args.get("order") is not None else select

    generator = sql_ast.DIALECT.generator()  # one generator for every item (``node.sql()`` builds one per call)

    def text(node: exp.Expr) -> str:  # the tree is this call's own: no copy per item
        return generator.generate(node, copy=False)

    def conjuncts(node: exp.Expr | None) -> frozenset[str]:
        if node is None:
            return frozenset()
        inner = node.this if isinstance(node, (exp.Where, exp.Having)) else node
        return (
            frozenset(text(part) for part in inner.flatten())
            if isinstance(inner, exp.And)
            else frozenset({text(inner)})
        )

    projections = frozenset(text(p.this if isinstance(p, exp.Alias) else p) for p in select.expressions)
    from_items: set[str] = set()
    source = select.args.get("from") or select.args.get("from_")
    if source is not None:
        from_items.add(text(source.this))
    join_kinds = set()
    for join in select.args.get("joins") or []:
        kind = " ".join(part for part in (join.side, join.kind) if part).upper() or "INNER"
        join_kinds.add(kind)
        from_items.add(f"{kind} JOIN {text(join.this)}")
        if join.args.get("on") is not None:
            from_items.add(f"ON {text(join.args['on'])}")
        for using in join.args.get("using") or []:
            from_items.add(f"USING {text(using)}")
    group = select.args.get("group")
    order = order_tree.args.get("order")
    limit = order_tree.args.get("limit")
    aggregates = frozenset(type(node).__name__.lower() for node in select.find_all(exp.AggFunc))
    return ClauseItems(
        items={
            "select": projections,
            "from_join": frozenset(from_items),
            "where": conjuncts(select.args.get("where")),
            "group_by": frozenset(text(g) for g in group.expressions) if group is not None else frozenset(),
            "having": conjuncts(select.args.get("having")),
            "order_by": frozenset(text(o) for o in order.expressions) if order is not None else frozenset(),
            "limit": frozenset({text(limit)}) if limit is not None else frozenset(),
        },
        distinct=select.args.get("distinct") is not None,
        aggregates=aggregates,
        join_kinds=frozenset(join_kinds),
    )


def _f1(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return round(2 * len(a & b) / (len(a) + len(b)), 6)


def clause_scores(expected: ClauseItems | None, candidate: ClauseItems | None) -> dict[str, float] | None:
    """Per clause, the F1 of the two queries' normalized items (None when either does not parse)."""
    if expected is None or candidate is None:
        return None
    return {clause: _f1(expected.items[clause], candidate.items[clause]) for clause in CLAUSES}
