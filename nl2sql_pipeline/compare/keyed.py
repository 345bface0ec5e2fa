"""Sort keys that are not result columns, evaluated beside the expected query's result.

    sql = keyed_sql(expected_sql)                  # the gold with its hidden sort keys appended as columns
    reference = keyed_reference(spec, rerun(sql))  # each row of the gold with its whole sort key
    check = reference.check(candidate_rows, alignment, config, free_tail=spec.limited)

``SELECT name FROM t ORDER BY age`` does not show ``age``: the rows' order can only be judged against the
gold's own sort keys. ``keyed_sql`` rewrites the gold's AST (sqlglot) to also select every ORDER BY key that
is not a result column (aliased ``__order_key_<i>``, appended after the result columns, so ordinals and the
result columns keep their positions); a DISTINCT select or a set operation is wrapped instead (its keys can
only name its output columns). The rows of the re-run, grouped into runs of rows equal on every sort key,
are the reference: a candidate is in a valid order when each run's positions hold the same rows (as a
multiset) as the reference's run there. Under a LIMIT the last run may hold any of the rows tied at the cut
(and the first one, under an OFFSET).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from nl2sql_pipeline.compare.matching import match_rows, values_close
from nl2sql_pipeline.compare.model import CompareConfig
from nl2sql_pipeline.compare.order import ORDER_OK, ORDER_WRONG, OrderCheck, OrderSpec, order_spec
from nl2sql_pipeline.compare.rules import CANONICALISER
from nl2sql_pipeline.compare.values import canonicalise_pair
from nl2sql_pipeline.compare.wording import format_row
from nl2sql_pipeline.sql import parse as sql_ast

if TYPE_CHECKING:
    from nl2sql_pipeline.execution import QueryResult

KEY_PREFIX = "__order_key_"
"""The alias of each appended sort key (``__order_key_0``, ...)."""

_WRAPPED_ALIAS = "__order_q"


@lru_cache(maxsize=4096)
def keyed_sql(expected_sql: str, keep_limit: bool = True) -> str | None:
    """``expected_sql`` also selecting its ORDER BY keys that are not result columns; None when it cannot.

    ``keep_limit`` False drops the outermost LIMIT (the OFFSET stays): every row tied at the cut is then seen.
    None: no hidden key, the query does not parse, or a hidden key is an ordinal out of range.
    """
    spec = order_spec(expected_sql)
    if spec is None or not spec.hidden:
        return None
    try:
        tree = sql_ast.parse(expected_sql)  # shared: copied below before any change
    except sql_ast.SqlParseError:
        return None
    order = tree.args.get("order")
    if not isinstance(order, exp.Order) or len(order.expressions) != len(spec.keys):
        return None
    hidden = []
    for item, key in zip(order.expressions, spec.keys):
        if key.column is not None:
            continue
        node = item.this if isinstance(item, exp.Ordered) else item
        if isinstance(node, exp.Literal) and node.is_int:
            return None  # an ordinal out of range: the gold itself cannot have run
        hidden.append(node)
    aliased = [exp.alias_(node.copy(), f"{KEY_PREFIX}{index}") for index, node in enumerate(hidden)]
    if isinstance(tree, exp.Select) and tree.args.get("distinct") is None:
        keyed = tree.copy()
        for item in aliased:
            keyed.append("expressions", item)
    elif isinstance(tree, (exp.Select, exp.SetOperation)):
        # the keys of a DISTINCT select or of a set operation can only name its output columns: wrap it
        inner = tree.copy()
        for part in ("order", "limit", "offset"):
            inner.set(part, None)
        keyed = exp.select(exp.Star(), *aliased).from_(
            exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(_WRAPPED_ALIAS)))
        )
        for part in ("order", "limit", "offset"):
            value = tree.args.get(part)
            if value is not None:
                keyed.set(part, value.copy())
    else:
        return None
    if not keep_limit:
        keyed.set("limit", None)
    return keyed.sql(dialect="duckdb")


@dataclass(frozen=True)
class KeyedReference:
    """The expected rows (result columns only) in the gold's order, and the runs of rows tied on every key.

    ``runs``: (start, end) of each run of consecutive rows equal on every sort key, in row order.
    """

    spec: OrderSpec
    rows: list[tuple]
    keys: list[tuple]
    runs: list[tuple[int, int]]

    def check(
        self,
        candidate_rows: Sequence[Sequence[Any]],
        alignment: Sequence[int],
        config: CompareConfig,
        free_tail: bool,
        free_head: bool = False,
    ) -> OrderCheck | None:
        """The order check of ``candidate_rows`` (as many as the reference's) against the runs; None when the
        reference cannot decide (its rows are not the candidate's, outside the runs left free).

        ``free_tail`` (a LIMIT): the last run may hold any rows (the tie choice at the cut; the caller has
        shown they are the expected rows). ``free_head`` (an OFFSET): the same for the first run.
        """
        if len(candidate_rows) != len(self.rows):
            return None
        reference, candidate, floats = canonical_rows(self.rows, candidate_rows, alignment)
        last = len(self.runs) - 1
        fixed = [
            (start, end)
            for index, (start, end) in enumerate(self.runs)
            if not ((index == last and free_tail) or (index == 0 and free_head))
        ]
        fixed_rows = [row for start, end in fixed for row in reference[start:end]]
        if not in_multiset(fixed_rows, candidate, config, floats):
            return None  # the re-run kept rows the candidate (equal to the expected) does not have
        for start, end in fixed:
            if _same_multiset(reference[start:end], candidate[start:end], config, floats):
                continue
            expected_here = Counter(reference[start:end])
            position = next((p for p in range(start, end) if candidate[p] not in expected_here), start)
            return OrderCheck(
                ORDER_WRONG,
                f"row {position + 1} {format_row(candidate[position])} is out of order: {_where(start, end)} "
                f"hold the rows with sort key {format_row(self.keys[start])} in the expected order "
                f"(ORDER BY {', '.join(self.spec.texts)}, keys that are not result columns evaluated on the gold)",
                self.spec.texts,
            )
        return OrderCheck(
            ORDER_OK,
            f"rows follow ORDER BY {', '.join(self.spec.texts)} (sort keys that are not result columns evaluated on the gold; "
            "ties in any order)",
            self.spec.texts,
        )


def _where(start: int, end: int) -> str:
    return f"row {start + 1}" if end - start == 1 else f"rows {start + 1}-{end}"


def keyed_reference(spec: OrderSpec, keyed: QueryResult, width: int, config: CompareConfig) -> KeyedReference | None:
    """The reference from the re-run of ``keyed_sql`` (``width`` result columns, then the hidden keys);
    None when that result is not usable (failed, hit the row cap, another shape)."""
    if not keyed.ok or keyed.truncated or len(keyed.columns) != width + len(spec.hidden):
        return None
    rows = keyed.rows
    columns = []
    hidden = width
    for key in spec.keys:
        position = key.column
        if position is None:
            position, hidden = hidden, hidden + 1
        values = [row[position] for row in rows]
        columns.append(canonicalise_pair(CANONICALISER, values, values).expected)
    keys = list(zip(*columns)) if columns else [() for _ in rows]
    runs: list[tuple[int, int]] = []
    start = 0
    for position in range(1, len(rows) + 1):
        if position == len(rows) or not all(
            values_close(a, b, config) for a, b in zip(keys[position - 1], keys[position])
        ):
            runs.append((start, position))
            start = position
    return KeyedReference(spec, [tuple(row[:width]) for row in rows], keys, runs)


def canonical_rows(
    reference_rows: Sequence[Sequence[Any]], candidate_rows: Sequence[Sequence[Any]], alignment: Sequence[int]
) -> tuple[list[tuple], list[tuple], list[int]]:
    """Both row lists canonicalised column by column (the candidate's columns taken through ``alignment``),
    and the positions of the columns holding floats on either side (where tolerance applies)."""
    exp_cols, cand_cols, floats = [], [], []
    for index, column in enumerate(alignment):
        pair = canonicalise_pair(
            CANONICALISER, [row[index] for row in reference_rows], [row[column] for row in candidate_rows]
        )
        exp_cols.append(pair.expected)
        cand_cols.append(pair.candidate)
        if "float" in pair.expected_kinds or "float" in pair.candidate_kinds:
            floats.append(index)
    if not alignment:
        return [() for _ in reference_rows], [() for _ in candidate_rows], floats
    return list(zip(*exp_cols)), list(zip(*cand_cols)), floats


def _same_multiset(a: Sequence[tuple], b: Sequence[tuple], config: CompareConfig, floats: list[int]) -> bool:
    if len(a) != len(b):
        return False
    if a == b or Counter(a) == Counter(b):
        return True
    return bool(floats) and match_rows(list(a), list(b), config, floats).complete


def in_multiset(part: Sequence[tuple], whole: Sequence[tuple], config: CompareConfig, floats: list[int]) -> bool:
    """Every row of ``part`` has its own partner in ``whole``."""
    return not match_rows(list(whole), list(part), config, floats).extra
