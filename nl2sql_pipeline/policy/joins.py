"""Cartesian products: every FROM item of a SELECT must be linked to the others by a predicate.

Per SELECT, the FROM items (tables, CTEs, derived tables, table functions, laterals) are the nodes
of a graph; a predicate (an ON condition or a WHERE conjunct) that references columns of two items
links them, and so do USING, NATURAL and POSITIONAL joins and a LATERAL/UNNEST item correlated with
an earlier one. A CROSS JOIN, an ON condition that references no column (``ON TRUE``, ``ON 1 = 1``)
and a graph that is not connected (a comma join without a linking WHERE predicate) are cartesian.

A disjunction links two items only if each branch does (``ON a.x = b.x OR TRUE`` does not).
Columns inside nested subqueries do not link the outer items.
"""

from __future__ import annotations

from sqlglot import exp

from nl2sql_pipeline.policy.context import QueryContext, TableRef, from_items, is_join_tree, joins_of


def cartesian_violation(ctx: QueryContext) -> str | None:
    """A sentence naming the first cartesian product found, or None."""
    for select in ctx.nodes(exp.Select):
        problem = _select_violation(ctx, select)
        if problem:
            return problem
    return None


def _select_violation(ctx: QueryContext, select: exp.Select) -> str | None:
    items = from_items(select)
    joins = joins_of(select)
    if len(items) < 2:
        return None
    graph = _ItemGraph(ctx, items)
    for join in joins:
        if join.kind.upper() == "CROSS":
            return f"CROSS JOIN {_item_text(join.this)} is a cartesian product; join with ON <predicate linking the tables>"
        method = join.method.upper()
        if method in ("NATURAL", "POSITIONAL") or join.args.get("using"):
            graph.link_to_previous(join.this)
            continue
        on = join.args.get("on")
        if on is not None:
            if not _columns_outside_subqueries(on):
                return (
                    f"JOIN {_item_text(join.this)} ON {on.sql(dialect='duckdb')} is a constant condition (a cartesian "
                    f"product); join on columns of both tables"
                )
            graph.add_predicate(on)
        if isinstance(join.this, (exp.Lateral, exp.Unnest)) or _is_function_item(join.this):
            graph.link_correlated(join.this)
    where = select.args.get("where")
    if isinstance(where, exp.Where):
        graph.add_predicate(where.this)
    orphan = graph.first_unlinked()
    if orphan is not None:
        return (
            f"{_item_text(orphan)} is not linked to the other tables of its FROM clause by any predicate "
            f"(a cartesian product); add a JOIN ... ON or a WHERE condition linking them"
        )
    return None


class _ItemGraph:
    """Union-find over the FROM items of one SELECT."""

    def __init__(self, ctx: QueryContext, items: list[exp.Expr]) -> None:
        self.items = items
        self.parent = list(range(len(items)))
        self.by_alias: dict[str, int] = {}
        self.by_column: dict[str, list[int]] = {}
        for index, item in enumerate(items):
            alias = _item_alias(item)
            if alias:
                self.by_alias.setdefault(alias, index)
            ancestor = item.parent
            while ancestor is not None and not isinstance(ancestor, exp.Select):
                if is_join_tree(ancestor) and ancestor.alias:  # (a JOIN b ON ...) AS j: j.x is in the tree
                    self.by_alias.setdefault(ancestor.alias.lower(), index)
                ancestor = ancestor.parent
            for column in _item_columns(ctx, item, ctx.ref_of(item)):
                self.by_column.setdefault(column, []).append(index)

    def _find(self, index: int) -> int:
        while self.parent[index] != index:
            self.parent[index] = self.parent[self.parent[index]]
            index = self.parent[index]
        return index

    def _union(self, indices: set[int]) -> None:
        ordered = sorted(indices)
        for other in ordered[1:]:
            self.parent[self._find(other)] = self._find(ordered[0])

    def _index_of(self, item: exp.Expr) -> int:
        return next(i for i, candidate in enumerate(self.items) if candidate is item)

    def link_to_previous(self, item: exp.Expr) -> None:
        """Link ``item`` to everything before it (USING, NATURAL, POSITIONAL)."""
        index = self._index_of(item)
        if index:
            self._union({0, index})

    def link_correlated(self, item: exp.Expr) -> None:
        """Link a LATERAL/UNNEST/table-function item to the earlier items its expressions reference."""
        index = self._index_of(item)
        referenced = {i for c in item.find_all(exp.Column) for i in self._items_of(c) if i < index}
        if referenced:
            self._union(referenced | {index})

    def add_predicate(self, condition: exp.Expr) -> None:
        """Link the items each AND-ed conjunct of ``condition`` references."""
        for conjunct in condition.flatten() if isinstance(condition, exp.And) else [condition]:
            linked = self._linked_by(conjunct)
            if len(linked) >= 2:
                self._union(linked)

    def first_unlinked(self) -> exp.Expr | None:
        """The first item not connected to the first one, or None when all are connected."""
        root = self._find(0)
        for index, item in enumerate(self.items):
            if self._find(index) != root:
                return item
        return None

    def _linked_by(self, conjunct: exp.Expr) -> set[int]:
        conjunct = conjunct.unnest()
        if isinstance(conjunct, exp.And):
            linked: set[int] = set()
            for part in conjunct.flatten():
                linked |= self._linked_by(part)
            return linked
        if isinstance(conjunct, exp.Or):
            branches = [self._linked_by(part) for part in conjunct.flatten()]
            common = set.intersection(*branches) if branches else set()
            return common if len(common) >= 2 else set()
        return {i for column in _columns_outside_subqueries(conjunct) for i in self._items_of(column)}

    def _items_of(self, column: exp.Column) -> list[int]:
        table = column.table.lower()
        if table:
            index = self.by_alias.get(table)
            return [index] if index is not None else []
        return self.by_column.get(column.name.lower(), [])


def _columns_outside_subqueries(node: exp.Expr) -> list[exp.Column]:
    columns = []
    for found in node.walk(prune=lambda n: isinstance(n, exp.Query) and n is not node):
        if isinstance(found, exp.Column) and not isinstance(found.this, exp.Star):
            columns.append(found)
    return columns


def _is_function_item(item: exp.Expr) -> bool:
    return isinstance(item, exp.Table) and isinstance(item.this, exp.Func)


def _item_alias(item: exp.Expr) -> str:
    if isinstance(item, exp.Table) and not isinstance(item.this, exp.Func):
        return item.alias_or_name.lower()
    return item.alias.lower() if item.alias else ""


def _item_columns(ctx: QueryContext, item: exp.Expr, ref: TableRef | None) -> list[str]:
    """Column names an item exposes, for resolving unqualified columns (empty when unknown)."""
    alias = item.args.get("alias")
    declared = [c.name.lower() for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    if ref is not None and ref.kind == "relation":
        return list(ref.column_names(ctx.schema))
    if ref is not None and ref.kind == "cte":
        return declared or _cte_columns(ref)
    if isinstance(item, exp.Subquery) and isinstance(item.this, exp.Query):
        return declared or [name.lower() for name in item.this.named_selects]
    return declared


def _cte_columns(ref: TableRef) -> list[str]:
    node: exp.Expr | None = ref.node
    while node is not None:
        with_ = node.args.get("with_") if not isinstance(node, exp.With) else node
        if isinstance(with_, exp.With):
            for cte in with_.expressions:
                if cte.alias.lower() == ref.name:
                    alias = cte.args.get("alias")
                    declared = [c.name.lower() for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
                    query = cte.this
                    return declared or (
                        [n.lower() for n in query.named_selects] if isinstance(query, exp.Query) else []
                    )
        node = node.parent
    return []


def _item_text(item: exp.Expr) -> str:
    text = item.sql(dialect="duckdb")
    return text if len(text) <= 60 else text[:57] + "..."
