"""Gold triage: expected queries whose result is a weak or unstable reference, flagged by kind with the reason.

The preflight (``preflight.run_preflight``) runs every expected SQL and asks here what is wrong with it:

- ``clock_dependent`` (blocking): the query reads the clock (``CURRENT_DATE``, ``now()``, ``current_timestamp``,
  ``today()``, ...; found in the sqlglot AST, never by a text search). The oracle result is stored once per
  gold version and candidates run later, so the gold answer is stale as soon as the date changes.
- ``thread_dependent`` (blocking): the result with ``threads=1`` differs from the result with several threads
  (e.g. ``string_agg``/``list``/``first`` without ORDER BY, floating sums in another order beyond tolerance);
  any other run-to-run difference is caught by the same comparison.
- ``limit_without_order`` (blocking): an outermost LIMIT/OFFSET without ORDER BY that cuts rows: which rows
  the gold returns is arbitrary.
- ``limit_ties`` (warning): ``ORDER BY ... LIMIT k`` where rows tied on every sort key straddle the boundary
  (the k-th and the (k+1)-th row, or the rows around an OFFSET): the gold itself is one of several valid
  answers. Not blocking: the comparator accepts any valid choice of tied rows (rule ``limit_ties``).
- ``empty_result`` (warning): no rows; every query that finds nothing matches it.
- ``degenerate_result`` (warning): every value NULL, or a single row whose every value is NULL or 0.

Each flag names its kind, whether it blocks, and why; the preflight reports blocking flags as problems
(the gold version is not prepared, no model is judged) and the others as warnings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlglot import exp

from nl2sql_pipeline.compare import CompareConfig, EngineSource, compare_query_results
from nl2sql_pipeline.compare.matching import values_close
from nl2sql_pipeline.compare.order import key_sequences, order_spec
from nl2sql_pipeline.execution import QueryResult, SandboxLimits
from nl2sql_pipeline.sql import parse as sql_ast

logger = logging.getLogger(__name__)

CLOCK_DEPENDENT = "clock_dependent"
THREAD_DEPENDENT = "thread_dependent"
LIMIT_WITHOUT_ORDER = "limit_without_order"
LIMIT_TIES = "limit_ties"
EMPTY_RESULT = "empty_result"
DEGENERATE_RESULT = "degenerate_result"

BLOCKING_KINDS = frozenset({CLOCK_DEPENDENT, THREAD_DEPENDENT, LIMIT_WITHOUT_ORDER})
"""Kinds that fail the preflight; the others are warnings."""
KINDS = (CLOCK_DEPENDENT, THREAD_DEPENDENT, LIMIT_WITHOUT_ORDER, LIMIT_TIES, EMPTY_RESULT, DEGENERATE_RESULT)

MANY_THREADS = 4
"""The thread count compared with ``threads=1`` when the configured limits use a single thread."""

_CLOCK_EXPRESSIONS: tuple[type[exp.Expression], ...] = tuple(
    getattr(exp, name)
    for name in (
        "CurrentDate",
        "CurrentTime",
        "CurrentTimestamp",
        "CurrentDatetime",
        "Localtime",
        "Localtimestamp",
        "CurrentTimestampLTZ",
    )
    if hasattr(exp, name)
)
_CLOCK_FUNCTIONS = frozenset(
    {
        "now",
        "today",
        "current_date",
        "current_time",
        "current_timestamp",
        "current_localtime",
        "current_localtimestamp",
        "get_current_time",
        "get_current_timestamp",
        "localtime",
        "localtimestamp",
        "transaction_timestamp",
        "statement_timestamp",
    }
)
"""Clock functions sqlglot leaves as anonymous calls (lower case)."""

Run = Callable[[str, SandboxLimits], QueryResult]
"""Runs one query in the sandbox (``execution.run_query`` bound to the case's database)."""


@dataclass(frozen=True)
class TriageFlag:
    """One finding about one expected query: ``label`` is the case id (``id[i]`` for the i-th alternative)."""

    label: str
    kind: str
    reason: str

    @property
    def blocking(self) -> bool:
        return self.kind in BLOCKING_KINDS

    def line(self) -> str:
        """``<label>: [<kind>] <reason>``, as the CLI and the asset check print it."""
        return f"{self.label}: [{self.kind}] {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "blocking": self.blocking}


def clock_functions(sql: str) -> list[str]:
    """The clock-reading calls in ``sql`` (as written back by sqlglot), from its AST; empty if it does not parse."""
    try:
        tree = sql_ast.parse(sql)
    except sql_ast.SqlParseError:
        return []
    found = []
    for node in tree.walk():
        if isinstance(node, _CLOCK_EXPRESSIONS) or (
            isinstance(node, exp.Anonymous) and str(node.this).casefold() in _CLOCK_FUNCTIONS
        ):
            text = node.sql(dialect="duckdb")
            if text not in found:
                found.append(text)
    return found


def result_flags(label: str, result: QueryResult) -> list[TriageFlag]:
    """``empty_result`` / ``degenerate_result`` for a successful expected result."""
    if not result.rows:
        return [TriageFlag(label, EMPTY_RESULT, "expected result is empty: any query that finds nothing matches it")]
    if all(value is None for row in result.rows for value in row):
        return [TriageFlag(label, DEGENERATE_RESULT, "expected result is all NULL")]
    if len(result.rows) == 1 and all(_null_or_zero(value) for value in result.rows[0]):
        shown = ", ".join("NULL" if v is None else str(v) for v in result.rows[0])
        return [TriageFlag(label, DEGENERATE_RESULT, f"expected result is one row of NULL/0 ({shown})")]
    return []


def _null_or_zero(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float, Decimal)) and not isinstance(value, bool) and value == 0)


def other_thread_count(limits: SandboxLimits) -> SandboxLimits:
    """The limits of the second run: ``threads=1`` against the configured count (``MANY_THREADS`` if that is 1)."""
    return replace(limits, threads=MANY_THREADS if limits.threads == 1 else 1)


def thread_flags(
    label: str,
    sql: str,
    first: QueryResult,
    second: QueryResult,
    db_path: Path | None,
    limits: SandboxLimits,
    config: CompareConfig,
) -> list[TriageFlag]:
    """``thread_dependent`` when the two runs (different thread counts) give different results.

    Rows may come in any order the gold's ORDER BY allows, and under ``ORDER BY ... LIMIT`` any choice of
    rows tied at the boundary is the same answer (that is ``limit_ties``, flagged on its own).
    """
    other = other_thread_count(limits).threads
    if not second.ok:
        return [
            TriageFlag(
                label, THREAD_DEPENDENT, f"fails with threads={other} ({second.error_class}: {second.error_message})"
            )
        ]
    source = EngineSource(db_path, sql, sql, limits) if db_path is not None else None
    same = compare_query_results(first, second, config, source)
    if same.match:
        return []
    reason = f"not deterministic: runs with threads={limits.threads} and threads={other} differ ({same.reason})"
    return [TriageFlag(label, THREAD_DEPENDENT, reason)]


@dataclass(frozen=True)
class _LimitShape:
    limit: int
    offset: int
    ordered: bool


def _limit_shape(tree: exp.Expr) -> _LimitShape | None:
    """The outermost literal LIMIT (and OFFSET) of a SELECT or set operation; None without one."""
    if not isinstance(tree, (exp.Select, exp.SetOperation)):
        return None
    limit = tree.args.get("limit")
    value = limit.expression if isinstance(limit, exp.Limit) else None
    if not (isinstance(value, exp.Literal) and value.is_int):
        return None
    offset_node = tree.args.get("offset")
    offset_value = offset_node.expression if isinstance(offset_node, exp.Offset) else None
    if offset_node is not None and not (isinstance(offset_value, exp.Literal) and offset_value.is_int):
        return None
    order = tree.args.get("order")
    ordered = isinstance(order, exp.Order) and bool(order.expressions)
    return _LimitShape(int(value.this), int(offset_value.this) if offset_value is not None else 0, ordered)


def _probe(tree: exp.Expr, rows: int, hidden_keys: Sequence[exp.Expr] = ()) -> str:
    """The query without its OFFSET, with ``LIMIT rows`` and the hidden sort keys appended as result columns."""
    probe = tree.copy()
    probe.set("offset", None)
    probe.set("limit", exp.Limit(expression=exp.Literal.number(rows)))
    for index, key in enumerate(hidden_keys):
        probe.append("expressions", exp.alias_(key.copy(), f"__triage_sort_key_{index}"))
    return probe.sql(dialect="duckdb")


def limit_flags(
    label: str, sql: str, run: Run, limits: SandboxLimits, config: CompareConfig
) -> tuple[list[TriageFlag], int]:
    """``limit_without_order`` / ``limit_ties`` for an outermost literal LIMIT, and the number of queries run.

    The query is run again without its OFFSET and with ``LIMIT offset + k + 1``: the rows just outside the
    window show whether the boundary cuts through rows the order does not tell apart.
    """
    try:
        tree = sql_ast.parse(sql)
    except sql_ast.SqlParseError:
        return [], 0
    shape = _limit_shape(tree)
    if shape is None or shape.limit <= 0:
        return [], 0
    end = shape.offset + shape.limit
    if not shape.ordered:
        probe = run(_probe(tree, end + 1), limits)
        if not probe.ok or probe.truncated:
            return [], 1
        total = len(probe.rows)
        if total > end or (shape.offset and total > shape.offset):
            window = f"LIMIT {shape.limit}" + (f" OFFSET {shape.offset}" if shape.offset else "")
            return [
                TriageFlag(
                    label,
                    LIMIT_WITHOUT_ORDER,
                    f"{window} without ORDER BY keeps {min(total, end) - shape.offset} of more rows "
                    "in no defined order: which rows the gold returns is arbitrary (add an ORDER BY "
                    "that tells every row apart)",
                )
            ], 1
        return [], 1
    spec = order_spec(sql)
    if spec is None:
        return [], 0
    hidden: list[exp.Expr] = []
    if spec.hidden:
        if not isinstance(tree, exp.Select) or tree.args.get("distinct") is not None:
            return [], 0  # the hidden keys cannot be added as result columns without changing the rows
        order = tree.args["order"]
        hidden = [item.this if isinstance(item, exp.Ordered) else item for item in order.expressions]
        probe_sql = _probe(tree, end + 1, hidden)
        probe_spec = order_spec(probe_sql)
        if probe_spec is None or probe_spec.hidden:
            return [], 0
    else:
        probe_sql, probe_spec = _probe(tree, end + 1), spec
    probe = run(probe_sql, limits)
    if not probe.ok or probe.truncated:
        return [], 1
    keys, _ = key_sequences(probe_spec, probe.rows, probe.rows, tuple(range(len(probe.columns))))
    texts = ", ".join(f"{k.text}{' DESC' if k.descending else ''}" for k in spec.keys)
    for before, after, where in (
        (end - 1, end, f"LIMIT {shape.limit}"),
        (shape.offset - 1, shape.offset, f"OFFSET {shape.offset}"),
    ):
        if before < 0 or after >= len(keys):
            continue
        if all(values_close(a, b, config) for a, b in zip(keys[before], keys[after])):
            tied = sum(1 for key in keys if all(values_close(a, b, config) for a, b in zip(key, keys[after])))
            return [
                TriageFlag(
                    label,
                    LIMIT_TIES,
                    f"rows {before + 1} and {after + 1} tie on every sort key (ORDER BY {texts}) across "
                    f"the {where} boundary ({tied} tied rows seen): the gold keeps one valid choice of "
                    "them; candidates keeping another are accepted (rule limit_ties)",
                )
            ], 1
    return [], 1
