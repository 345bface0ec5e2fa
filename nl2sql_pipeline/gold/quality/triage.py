"""Gold triage: expected queries whose result is a weak or unstable reference, flagged by kind with the reason.

The preflight (``preflight.run_preflight``) runs every expected SQL and asks here what is wrong with it:

- ``clock_dependent`` (information, not blocking): the query reads the clock (``CURRENT_DATE``, ``now()``,
  ``current_timestamp``, ``today()``, ...; found in the sqlglot AST, never by a text search). Every run pins
  the clock at the case's reference date (``sql.clock``: gold, candidates and test-suite variants alike), so
  the gold answer is deterministic; the finding says which date the question's "today" is.
- ``thread_dependent`` (blocking): the result with ``threads=1`` differs from the result with several threads
  (e.g. ``string_agg``/``list``/``first`` without ORDER BY, floating sums in another order beyond tolerance);
  any other run-to-run difference is caught by the same comparison. A different choice of rows tied at the
  outermost ``ORDER BY ... LIMIT`` is not a difference (sort keys that are not result columns included).
- ``subquery_limit_tie`` (blocking): an ``ORDER BY ... LIMIT`` inside the query cuts through rows tied on
  every sort key and the gold's result depends on which of them it keeps (``WHERE x = (SELECT x ... ORDER BY
  count(*) LIMIT 1)`` with two rarest values): ambiguous gold. Found deterministically (the rows at the
  subquery's cut, then the whole query with the tie broken both ways), never by the chance that two thread
  counts choose differently; reported in place of ``thread_dependent``.
- ``limit_without_order`` (blocking): an outermost LIMIT/OFFSET without ORDER BY that cuts rows: which rows
  the gold returns is arbitrary.
- ``limit_ties`` (warning): ``ORDER BY ... LIMIT k`` where rows tied on every sort key straddle the boundary
  (the k-th and the (k+1)-th row, or the rows around an OFFSET): the gold itself is one of several valid
  answers. Not blocking: the comparator accepts any valid choice of tied rows (rule ``limit_ties``).
- ``empty_result`` (warning): no rows; every query that finds nothing matches it.
- ``degenerate_result`` (warning): every value NULL, or a single row whose every value is NULL or 0.

Each flag names its kind, whether it blocks, and why; a blocking flag quarantines its case in the preflight
(left out of the scores, listed and counted; under strict gold the run stops) and the others are warnings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import date
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

from sqlglot import exp

from nl2sql_pipeline.compare import CompareConfig, EngineSource, compare_query_results
from nl2sql_pipeline.compare.matching import values_close
from nl2sql_pipeline.compare.order import key_sequences, order_spec
from nl2sql_pipeline.execution import QueryResult, SandboxLimits, run_query
from nl2sql_pipeline.sql import parse as sql_ast
from nl2sql_pipeline.sql.clock import clock_reads

logger = logging.getLogger(__name__)

CLOCK_DEPENDENT = "clock_dependent"
THREAD_DEPENDENT = "thread_dependent"
LIMIT_WITHOUT_ORDER = "limit_without_order"
SUBQUERY_LIMIT_TIE = "subquery_limit_tie"
LIMIT_TIES = "limit_ties"
EMPTY_RESULT = "empty_result"
DEGENERATE_RESULT = "degenerate_result"

BLOCKING_KINDS = frozenset({THREAD_DEPENDENT, LIMIT_WITHOUT_ORDER, SUBQUERY_LIMIT_TIE})
"""Kinds that fail the preflight; the others are warnings."""
KINDS = (
    CLOCK_DEPENDENT,
    THREAD_DEPENDENT,
    SUBQUERY_LIMIT_TIE,
    LIMIT_WITHOUT_ORDER,
    LIMIT_TIES,
    EMPTY_RESULT,
    DEGENERATE_RESULT,
)

MANY_THREADS = 4
"""The thread count compared with ``threads=1`` when the configured limits use a single thread."""

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
    found: list[str] = []
    for node in clock_reads(tree):
        text = node.sql(dialect="duckdb")
        if text not in found:
            found.append(text)
    return found


def clock_flags(label: str, sql: str, reference: date) -> list[TriageFlag]:
    """``clock_dependent`` (not blocking) when ``sql`` reads the clock: it is evaluated at ``reference``."""
    clock = clock_functions(sql)
    if not clock:
        return []
    return [
        TriageFlag(
            label,
            CLOCK_DEPENDENT,
            f"reads the clock ({', '.join(clock)}): evaluated at the reference date {reference.isoformat()} "
            "(gold and candidates alike), so its answer does not change with the real date",
        )
    ]


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
    """``subquery_limit_tie`` (``subquery_tie_flags``) if any, else ``thread_dependent`` when the two runs
    (different thread counts) give different results.

    Rows may come in any order the gold's ORDER BY allows, and under ``ORDER BY ... LIMIT`` any choice of
    rows tied at the boundary is the same answer (that is ``limit_ties``, flagged on its own), sort keys that
    are not result columns included. A tie at the LIMIT of a subquery is found by checking the rows at its
    cut, whether or not the two thread counts happened to choose differently, and reported as such.
    """
    if db_path is not None:
        ties, _ = subquery_tie_flags(label, sql, db_path, limits, config)
        if ties:
            return ties
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
    tie, _, queries = _cut_tie(sql, tree, shape, run, limits, config)
    if tie is None:
        return [], queries
    return [
        TriageFlag(
            label,
            LIMIT_TIES,
            f"{tie}: the gold keeps one valid choice of them; candidates keeping another are accepted "
            "(rule limit_ties)",
        )
    ], queries


def _cut_tie(
    sql: str, tree: exp.Expr, shape: _LimitShape, run: Run, limits: SandboxLimits, config: CompareConfig
) -> tuple[str | None, bool, int]:
    """Whether rows tied on every sort key straddle the LIMIT (or OFFSET) of an ordered query.

    Returns the tie as a reason names it (None: no tie seen), whether the rows at the cut were seen (the
    probe could be built and ran), and the number of queries run.
    """
    end = shape.offset + shape.limit
    spec = order_spec(sql)
    if spec is None:
        return None, False, 0
    hidden: list[exp.Expr] = []
    if spec.hidden:
        if not isinstance(tree, exp.Select) or tree.args.get("distinct") is not None:
            return None, False, 0  # the hidden keys cannot be added as result columns without changing the rows
        order = tree.args["order"]
        hidden = [item.this if isinstance(item, exp.Ordered) else item for item in order.expressions]
        probe_sql = _probe(tree, end + 1, hidden)
        probe_spec = order_spec(probe_sql)
        if probe_spec is None or probe_spec.hidden:
            return None, False, 0
    else:
        probe_sql, probe_spec = _probe(tree, end + 1), spec
    probe = run(probe_sql, limits)
    if not probe.ok or probe.truncated:
        return None, False, 1
    keys, _ = key_sequences(probe_spec, probe.rows, probe.rows, tuple(range(len(probe.columns))))
    texts = ", ".join(spec.texts)
    for before, after, where in (
        (end - 1, end, f"LIMIT {shape.limit}"),
        (shape.offset - 1, shape.offset, f"OFFSET {shape.offset}"),
    ):
        if before < 0 or after >= len(keys):
            continue
        if all(values_close(a, b, config) for a, b in zip(keys[before], keys[after])):
            tied = sum(1 for key in keys if all(values_close(a, b, config) for a, b in zip(key, keys[after])))
            return (
                f"rows {before + 1} and {after + 1} tie on every sort key (ORDER BY {texts}) across "
                f"the {where} boundary ({tied} tied rows seen)",
                True,
                1,
            )
    return None, True, 1


def _limited_subqueries(tree: exp.Expr) -> list[exp.Select | exp.SetOperation]:
    """Every SELECT or set operation below the outermost one with ORDER BY and a literal LIMIT, in walk order."""
    found: list[exp.Select | exp.SetOperation] = []
    for node in tree.walk():
        if node is tree or not isinstance(node, (exp.Select, exp.SetOperation)):
            continue
        shape = _limit_shape(node)
        if shape is not None and shape.ordered and shape.limit > 0:
            found.append(node)
    return found


def _standalone(tree: exp.Expr, node: exp.Expr) -> str:
    """A subquery as a query of its own (with the outer query's CTEs, which it may read)."""
    alone = node.copy()
    outer_with = tree.args.get("with")
    if outer_with is not None and alone.args.get("with") is None:
        alone.set("with", outer_with.copy())
    return alone.sql(dialect="duckdb")


def _tiebroken(tree: exp.Expr, index: int, descending: bool) -> str | None:
    """The whole query with the ``index``-th limited subquery's ties broken by all its result columns
    (ascending, or descending with NULLs first: the two extreme choices of the rows tied at its cut)."""
    copy = tree.copy()
    node = _limited_subqueries(copy)[index]
    selects = node.selects
    if not selects:
        return None
    if any(isinstance(item, exp.Star) or (isinstance(item, exp.Column) and item.is_star) for item in selects):
        columns = exp.Anonymous(this="COLUMNS", expressions=[exp.Star()])
        extra = [exp.Ordered(this=columns, desc=descending, nulls_first=descending)]
    else:
        extra = [
            exp.Ordered(this=exp.Literal.number(position), desc=descending, nulls_first=descending)
            for position in range(1, len(selects) + 1)
        ]
    order = node.args["order"]
    order.set("expressions", [*order.expressions, *extra])
    return copy.sql(dialect="duckdb")


def subquery_tie_flags(
    label: str, sql: str, db_path: Path, limits: SandboxLimits, config: CompareConfig, run: Run | None = None
) -> tuple[list[TriageFlag], int]:
    """``subquery_limit_tie`` for each ``ORDER BY ... LIMIT`` below the outermost query whose cut falls in
    a tie the gold's result depends on; and the number of queries run.

    Deterministic: the subquery runs on its own with ``LIMIT k+1`` (as ``limit_flags`` does) to see whether
    rows tied on every sort key straddle its cut (a subquery that cannot run alone, e.g. a correlated one, is
    not ruled out by that probe); then the whole query runs twice with the subquery's ties broken both ways
    (all its result columns ascending, then descending): the gold depends on the tie when the two differ.
    """
    try:
        tree = sql_ast.parse(sql)
    except sql_ast.SqlParseError:
        return [], 0
    subqueries = _limited_subqueries(tree)
    if not subqueries:
        return [], 0
    if run is None:
        run = partial(run_query, db_path)
    flags: list[TriageFlag] = []
    queries = 0
    for index, node in enumerate(subqueries):
        alone = _standalone(tree, node)
        shape = _limit_shape(node)
        assert shape is not None
        try:
            alone_tree = sql_ast.parse(alone)
        except sql_ast.SqlParseError:
            continue
        tie, seen, ran = _cut_tie(alone, alone_tree, shape, run, limits, config)
        queries += ran
        if seen and tie is None:
            continue  # no tie at this subquery's cut
        first, second = _tiebroken(tree, index, False), _tiebroken(tree, index, True)
        if first is None or second is None:
            continue
        one, other = run(first, limits), run(second, limits)
        queries += 2
        if not (one.ok and other.ok):
            continue
        same = compare_query_results(one, other, config, EngineSource(db_path, first, second, limits))
        if same.match:
            continue
        where = tie or "rows tied on its sort keys straddle its LIMIT (seen by breaking the tie both ways)"
        flags.append(
            TriageFlag(
                label,
                SUBQUERY_LIMIT_TIE,
                f"the subquery {_short(node)} cuts through a tie ({where}) and the gold's result depends on "
                f"which tied rows it keeps (breaking the tie one way or the other: {same.reason}): the gold "
                "answer is ambiguous (add a sort key that tells the tied rows apart)",
            )
        )
    return flags, queries


def _short(node: exp.Expr, width: int = 160) -> str:
    text = node.sql(dialect="duckdb")
    return f"({text})" if len(text) <= width else f"({text[: width - 3]}...)"
