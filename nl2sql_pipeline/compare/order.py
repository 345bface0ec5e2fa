"""Row order, decided from the expected query's AST (sqlglot), never from its text.

    spec = order_spec(expected_sql)                   # None: the gold has no outermost ORDER BY
    check = check_order(spec, expected, candidate, alignment, config)

When the outermost SELECT or set operation of the expected query has ORDER BY, the order matters:
the candidate's rows must come in the same sequence of sort-key values (rows tied on every sort key
may come in any order among themselves). Sort keys given by ordinal, by output name (alias or column)
or by the same expression as a select item are resolved to result columns; a key that is not among
the result columns (``SortKey.column`` None, a hidden key) is evaluated on the gold itself by
``keyed`` (the gold re-run with its hidden keys as extra columns, ``ordered.with_order``); ``check_order``
alone checks the visible keys up to the first hidden one, which is what is left when that re-run cannot be
made (the verdict says so). With ORDER BY ... LIMIT k, rows tied with the k-th row on the sort keys may be
any of the tied rows: ``ordered`` finds them, and accepts any valid choice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import sqlglot
from sqlglot import exp

from nl2sql_pipeline.compare.matching import values_close
from nl2sql_pipeline.compare.model import CompareConfig
from nl2sql_pipeline.compare.rules import CANONICALISER
from nl2sql_pipeline.compare.values import canonicalise_pair
from nl2sql_pipeline.sql import parse as sql_ast

ORDER_NOT_REQUIRED = "not_required"
ORDER_OK = "ok"
ORDER_WRONG = "wrong"
ORDER_PARTIAL = "checked_visible_keys"
ORDER_UNCHECKED = "not_checked"


@dataclass(frozen=True)
class SortKey:
    """One ORDER BY item: the result column it names (None: not among the result columns), its text, direction."""

    column: int | None
    text: str
    descending: bool


@dataclass(frozen=True)
class OrderSpec:
    """The expected query's outermost ORDER BY (and LIMIT, when it is a literal)."""

    keys: tuple[SortKey, ...]
    limit: int | None = None
    limited: bool = False
    """The query has an outermost LIMIT (literal or not): the rows tied at the cut may be any of them."""
    offset: bool = False
    """The query has an outermost OFFSET."""

    # a spec is memoised per expected SQL (``order_spec``) and read by every comparison with that SQL:
    # what follows from its keys alone is worked out once

    @cached_property
    def checkable(self) -> tuple[SortKey, ...]:
        """The keys up to (not including) the first one that is not a result column."""
        out = []
        for key in self.keys:
            if key.column is None:
                break
            out.append(key)
        return tuple(out)

    @cached_property
    def hidden(self) -> tuple[SortKey, ...]:
        return tuple(k for k in self.keys if k.column is None)

    @cached_property
    def texts(self) -> tuple[str, ...]:
        """The keys as a reason shows them (``a.title``, ``n DESC``)."""
        return tuple(f"{k.text}{' DESC' if k.descending else ''}" for k in self.keys)

    @cached_property
    def followed(self) -> OrderCheck:
        """The check of whole results whose rows follow this order (``check_order`` when no key is out of place)."""
        return _followed(self, None)


@dataclass(frozen=True)
class OrderCheck:
    """The outcome of the order check: ``status`` (one of the ORDER_* names) and why."""

    status: str
    detail: str = ""
    keys: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "detail": self.detail, "keys": list(self.keys)}


NOT_REQUIRED = OrderCheck(ORDER_NOT_REQUIRED, "the expected query has no outermost ORDER BY: row order is ignored")


@lru_cache(maxsize=4096)
def order_spec(expected_sql: str) -> OrderSpec | None:
    """The outermost ORDER BY of ``expected_sql`` resolved to result columns; None without one (or unparsable)."""
    try:
        tree = sql_ast.parse(expected_sql)  # shared with the policy engine's parse: read only, never modified
    except sql_ast.SqlParseError:
        return None
    order = tree.args.get("order") if isinstance(tree, (exp.Select, exp.SetOperation)) else None
    if not isinstance(order, exp.Order) or not order.expressions:
        return None
    projections = list(tree.selects) if isinstance(tree, (exp.Select, exp.SetOperation)) else []
    names = [p.alias_or_name.casefold() for p in projections]
    text = _renderer()
    set_operation = isinstance(tree, exp.SetOperation)
    keys = tuple(_resolve(item, projections, names, set_operation, text) for item in order.expressions)
    return OrderSpec(
        keys, _literal_limit(tree), tree.args.get("limit") is not None, tree.args.get("offset") is not None
    )


def _renderer() -> Callable[[exp.Expr], str]:
    """``node.sql(dialect="duckdb")`` for the nodes of one shared tree, from one generator.

    ``node.sql()`` builds a dialect and a generator and copies the node on every call (the generator may
    rewrite what it renders); a column is rendered as it stands, so it is not copied (the copy costs three
    times the rendering, and sort keys are mostly columns).
    """
    generator = sql_ast.DIALECT.generator()

    def text(node: exp.Expr) -> str:
        return generator.generate(node, copy=not isinstance(node, exp.Column))

    return text


def _resolve(
    item: exp.Expr,
    projections: list[exp.Expr],
    names: list[str],
    set_operation: bool,
    render: Callable[[exp.Expr], str],
) -> SortKey:
    ordered = item if isinstance(item, exp.Ordered) else exp.Ordered(this=item)
    key = ordered.this
    descending = bool(ordered.args.get("desc"))
    text = render(key)
    if isinstance(key, exp.Literal) and key.is_int:
        position = int(key.this) - 1
        return SortKey(position if 0 <= position < len(projections) else None, text, descending)
    if isinstance(key, exp.Column) and key.name.casefold() in names and not (key.table and set_operation):
        if not key.table or _projection_column(projections[names.index(key.name.casefold())], key):
            return SortKey(names.index(key.name.casefold()), text, descending)
    if not set_operation:
        for index, projection in enumerate(projections):
            inner = projection.this if isinstance(projection, exp.Alias) else projection
            if inner == key or render(inner).casefold() == text.casefold():
                return SortKey(index, text, descending)
    return SortKey(None, text, descending)


def _projection_column(projection: exp.Expr, key: exp.Column) -> bool:
    inner = projection.this if isinstance(projection, exp.Alias) else projection
    return isinstance(inner, exp.Column) and inner.name.casefold() == key.name.casefold()


def _literal_limit(tree: exp.Expr) -> int | None:
    limit = tree.args.get("limit")
    value = limit.expression if isinstance(limit, exp.Limit) else None
    if isinstance(value, exp.Literal) and value.is_int:
        return int(value.this)
    return None


def without_limit(expected_sql: str) -> str | None:
    """The expected query with its outermost LIMIT removed (to see every row tied at the boundary)."""
    try:
        tree = sqlglot.parse_one(expected_sql, read="duckdb")
    except sqlglot.errors.ParseError:
        return None
    if tree.args.get("limit") is None:
        return None
    tree = tree.copy()
    tree.set("limit", None)
    return tree.sql(dialect="duckdb")


def key_sequences(
    spec: OrderSpec,
    expected_rows: Sequence[Sequence[Any]],
    candidate_rows: Sequence[Sequence[Any]],
    alignment: Sequence[int],
) -> tuple[list[tuple], list[tuple]]:
    """The canonical sort-key tuples of each row, in row order (checkable keys only)."""
    keys = spec.checkable
    exp_cols, cand_cols = [], []
    for key in keys:
        assert key.column is not None
        pair = canonicalise_pair(
            CANONICALISER,
            [row[key.column] for row in expected_rows],
            [row[alignment[key.column]] for row in candidate_rows],
        )
        exp_cols.append(pair.expected)
        cand_cols.append(pair.candidate)
    return list(zip(*exp_cols)) if keys else [], list(zip(*cand_cols)) if keys else []


def _same_key(a: tuple, b: tuple, config: CompareConfig) -> bool:
    return all(values_close(x, y, config) for x, y in zip(a, b))


def check_order(
    spec: OrderSpec | None,
    expected_rows: Sequence[Sequence[Any]],
    candidate_rows: Sequence[Sequence[Any]],
    alignment: Sequence[int],
    config: CompareConfig,
    shown_only: bool = False,
    same_rows: bool = False,
) -> OrderCheck:
    """Whether the candidate's rows (already equal to the expected as a multiset) come in a valid order.

    ``shown_only``: the rows are the first ones of longer results (the order is checked on those).
    ``same_rows``: the candidate's rows are the expected rows, cell for cell (every sort key is in place).
    """
    if spec is None:
        return NOT_REQUIRED
    texts = spec.texts
    checkable = spec.checkable
    if not checkable:
        return OrderCheck(
            ORDER_UNCHECKED,
            f"the first sort key ({spec.keys[0].text}) is not among the result columns: row order cannot be checked",
            texts,
        )
    exp_keys, cand_keys = ([], []) if same_rows else key_sequences(spec, expected_rows, candidate_rows, alignment)
    for position, (a, b) in enumerate(zip(exp_keys, cand_keys)):
        if not _same_key(a, b, config):
            return OrderCheck(
                ORDER_WRONG,
                f"row {position + 1} has sort key {_show(b)} where the expected order has {_show(a)} "
                f"(ORDER BY {', '.join(texts)})",
                texts,
            )
    return _followed(spec, len(expected_rows)) if shown_only else spec.followed


def _followed(spec: OrderSpec, shown_rows: int | None) -> OrderCheck:
    """The check of rows in a valid order: ``ok``, or partial when a sort key is not among the result columns
    (``shown_rows``: only the first rows of longer results were seen)."""
    notes = []
    if spec.hidden:
        notes.append(
            f"sort key {spec.hidden[0].text} is not among the result columns: order checked on "
            f"{', '.join(k.text for k in spec.checkable)} only"
        )
    if shown_rows is not None:
        notes.append(f"order checked on the first {shown_rows} rows")
    status = ORDER_PARTIAL if spec.hidden else ORDER_OK
    detail = "; ".join(notes) or f"rows follow ORDER BY {', '.join(spec.texts)} (ties in any order)"
    return OrderCheck(status, detail, spec.texts)


def _show(key: tuple) -> str:
    from nl2sql_pipeline.compare.wording import format_row

    return format_row(key)
