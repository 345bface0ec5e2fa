"""Row order applied to a verdict: the order check after a multiset match, and LIMIT ties after a mismatch.

``with_order`` is the last step of ``compare_query_results`` when the expected SQL is known: a multiset
match whose rows come in a wrong order becomes ``row_order_mismatch`` (its score, the row F1, stays);
an ``ORDER BY ... LIMIT k`` mismatch where the candidate chose other rows tied with the k-th row on the
sort keys becomes a ``limit_ties`` match, once every chosen row is shown to be one of the tied rows (the
expected query is run again without its LIMIT).

Sort keys that are not result columns are evaluated on the gold (``keyed``: the gold re-run with those keys
as extra columns), for the order check and for the rows tied at a LIMIT alike; when that re-run cannot be
made, the visible keys are checked as far as they go and the verdict says the rest was not. Results over the
row cap have their order checked whole in the engine (``engine_order``, through ``whole``); only when that
fails is the order checked on the fetched rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from nl2sql_pipeline.compare.engine import EngineComparisonError
from nl2sql_pipeline.compare.keyed import KeyedReference, canonical_rows, in_multiset, keyed_reference, keyed_sql
from nl2sql_pipeline.compare.matching import values_close
from nl2sql_pipeline.compare.model import CompareConfig, Comparison
from nl2sql_pipeline.compare.order import (
    ORDER_OK,
    ORDER_PARTIAL,
    ORDER_UNCHECKED,
    ORDER_WRONG,
    OrderCheck,
    OrderSpec,
    check_order,
    key_sequences,
    order_spec,
    without_limit,
)
from nl2sql_pipeline.compare.query import one_line
from nl2sql_pipeline.compare.rules import CANONICALISER, RULE_NAMES
from nl2sql_pipeline.compare.state import ComparisonState

if TYPE_CHECKING:
    from nl2sql_pipeline.execution import QueryResult

logger = logging.getLogger(__name__)

Rerun = Callable[[str], "QueryResult | None"]
"""Runs a query derived from the expected SQL (the same query without its LIMIT); None when it cannot."""
CompareRows = Callable[..., Comparison]
"""``compare_results`` (passed in by the package, which imports this module)."""
WholeOrder = Callable[[OrderSpec, tuple[int, ...]], OrderCheck]
"""The order check of the whole results under a column alignment (``engine_order.whole_order``); raises
EngineComparisonError when it cannot be made."""


def with_order(
    comparison: Comparison,
    expected: QueryResult,
    candidate: QueryResult,
    expected_sql: str,
    config: CompareConfig,
    rerun: Rerun | None,
    compare_rows: CompareRows,
    same_rows: bool = False,
    whole: WholeOrder | None = None,
) -> Comparison:
    """``comparison`` with its order check (and the verdict it changes).

    ``same_rows``: the candidate's rows are the expected rows in the same order (``identical.same_result``).
    ``whole``: checks the order of results over the row cap on the whole results (else: the fetched rows).
    """
    spec = order_spec(expected_sql)
    if spec is None:
        return comparison.evolve(order=check_order(None, [], [], (), config))
    if not candidate.ok or comparison.alignment is None:
        return comparison.evolve(order=OrderCheck(ORDER_UNCHECKED, "no comparable result: order not checked"))
    shown_only = expected.truncated or candidate.truncated
    if comparison.match:
        check = _whole_order(spec, comparison.alignment, whole) if shown_only else None
        if check is None and spec.hidden and not shown_only:
            check = _hidden_order(
                spec, expected, candidate, expected_sql, comparison.alignment, config, rerun, same_rows
            )
        elif check is None:
            check = check_order(
                spec, expected.rows, candidate.rows, comparison.alignment, config, shown_only, same_rows
            )
        if check.status == ORDER_WRONG:
            return comparison.evolve(
                match=False,
                rule="row_order_mismatch",
                reason=f"same rows in a different order: {check.detail}",
                order=check,
            )
        if check.status in (ORDER_PARTIAL, ORDER_UNCHECKED) or shown_only:
            return comparison.evolve(reason=f"{comparison.reason}; {check.detail}", order=check)
        return comparison.evolve(order=check)
    if spec.hidden:
        tied = _hidden_limit_ties(spec, expected, candidate, expected_sql, comparison.alignment, config, rerun)
    else:
        tied = _limit_ties(spec, expected, candidate, expected_sql, comparison.alignment, config, rerun, compare_rows)
    if tied is not None:
        return tied
    return comparison.evolve(order=OrderCheck(ORDER_UNCHECKED, "the rows differ: order not checked"))


def _whole_order(spec: OrderSpec, alignment: tuple[int, ...], whole: WholeOrder | None) -> OrderCheck | None:
    """The order check on the whole results, or None when it cannot be made (then the fetched rows are checked)."""
    if whole is None:
        return None
    try:
        return whole(spec, alignment)
    except EngineComparisonError as exc:
        logger.warning("the row order was not checked on the whole results: %s", exc)
        return None


def _split(
    rows: Sequence[Sequence[Any]], keys: list[tuple], boundary: tuple, config: CompareConfig
) -> tuple[list[tuple], list[tuple]]:
    rest: list[tuple] = []
    tied: list[tuple] = []
    for row, key in zip(rows, keys):
        (tied if all(values_close(a, b, config) for a, b in zip(key, boundary)) else rest).append(tuple(row))
    return rest, tied


def _limit_ties(
    spec: OrderSpec,
    expected: QueryResult,
    candidate: QueryResult,
    expected_sql: str,
    alignment: tuple[int, ...],
    config: CompareConfig,
    rerun: Rerun | None,
    compare_rows: CompareRows,
) -> Comparison | None:
    """A ``limit_ties`` match when the candidate differs only in which rows tied at the LIMIT it kept."""

    if spec.limit is None or not spec.checkable or expected.truncated or candidate.truncated:
        return None
    if not expected.rows or len(expected.rows) != len(candidate.rows) or len(expected.rows) != spec.limit:
        return None
    exp_keys, cand_keys = key_sequences(spec, expected.rows, candidate.rows, alignment)
    boundary = exp_keys[-1]
    exp_rest, exp_tied = _split(expected.rows, exp_keys, boundary, config)
    cand_rest, cand_tied = _split(candidate.rows, cand_keys, boundary, config)
    if (
        len(exp_tied) != len(cand_tied)
        or not compare_rows(expected.columns, exp_rest, candidate.columns, cand_rest, config).match
    ):
        return None
    unlimited_sql = without_limit(expected_sql)
    full = rerun(unlimited_sql) if rerun is not None and unlimited_sql is not None else None
    if full is None or not full.ok or full.truncated:
        return None  # the tied rows cannot be shown to be tied rows of the expected query
    full_keys, _ = key_sequences(spec, full.rows, full.rows, tuple(range(len(full.columns))))
    _, all_tied = _split(full.rows, full_keys, boundary, config)
    if len(all_tied) <= len(exp_tied):
        return None  # no tie crosses the boundary: the rows had to be the same
    state = ComparisonState(full.columns, all_tied, candidate.columns, cand_tied, config, CANONICALISER, RULE_NAMES)
    state.alignment = alignment
    if state.aligned().rows.extra:
        return None
    check = check_order(spec, expected.rows, candidate.rows, alignment, config)
    if check.status == ORDER_WRONG:
        return None
    return Comparison(
        match=True,
        rule="limit_ties",
        reason=(
            f"all {len(expected.rows)} rows valid: {len(all_tied)} rows tie with the last one on the sort keys "
            f"and the candidate kept {len(cand_tied)} of them (any choice is valid under LIMIT {spec.limit})"
        ),
        score=1.0,
        expected_rows=len(expected.rows),
        candidate_rows=len(candidate.rows),
        order=check if check.status != ORDER_OK else OrderCheck(ORDER_OK, check.detail, check.keys),
        alignment=alignment,
    )


def _hidden_order(
    spec: OrderSpec,
    expected: QueryResult,
    candidate: QueryResult,
    expected_sql: str,
    alignment: tuple[int, ...],
    config: CompareConfig,
    rerun: Rerun | None,
    same_rows: bool,
) -> OrderCheck:
    """The order check when a sort key is not a result column (the rows already match as multisets).

    Rows in the gold's own order are in a valid order; otherwise the gold's sort keys are evaluated beside
    its result (``keyed``) and each run of rows tied on every key must hold the same rows in the candidate.
    """
    done = f"rows follow ORDER BY {', '.join(spec.texts)} (in the expected result's own order)"
    if same_rows:
        return OrderCheck(ORDER_OK, done, spec.texts)
    reference, rows, _ = canonical_rows(expected.rows, candidate.rows, alignment)
    if all(a == b or all(values_close(x, y, config) for x, y in zip(a, b)) for a, b in zip(reference, rows)):
        return OrderCheck(ORDER_OK, done, spec.texts)
    visible = check_order(spec, expected.rows, candidate.rows, alignment, config)
    if visible.status == ORDER_WRONG:
        return visible
    keyed, why = _keyed(spec, expected_sql, len(expected.columns), config, rerun, keep_limit=True)
    check = keyed.check(candidate.rows, alignment, config, spec.limited, spec.offset) if keyed is not None else None
    if check is None:
        why = why or "it returned other rows than the expected result"
        return OrderCheck(
            visible.status,
            f"{visible.detail}; the gold could not be re-run with its sort keys as columns ({why})",
            spec.texts,
        )
    return check


def _keyed(
    spec: OrderSpec, expected_sql: str, width: int, config: CompareConfig, rerun: Rerun | None, keep_limit: bool
) -> tuple[KeyedReference | None, str]:
    """The gold's rows with their whole sort keys (``keyed``), or None and why not."""
    sql = keyed_sql(expected_sql, keep_limit)
    if sql is None:
        return None, "the rewrite of its AST could not be built"
    result = rerun(sql) if rerun is not None else None
    if result is None:
        return None, "no database to run it on"
    if not result.ok:
        return None, f"{result.error_class}: {one_line(result.error_message)}"
    if result.truncated:
        return None, "it hit the row cap"
    keyed = keyed_reference(spec, result, width, config)
    return keyed, "" if keyed is not None else "it returned another number of columns"


def _hidden_limit_ties(
    spec: OrderSpec,
    expected: QueryResult,
    candidate: QueryResult,
    expected_sql: str,
    alignment: tuple[int, ...],
    config: CompareConfig,
    rerun: Rerun | None,
) -> Comparison | None:
    """``_limit_ties`` when a sort key is not a result column: the tie group comes from the gold's own keys.

    The gold runs again without its LIMIT and with its hidden keys as columns; the rows equal on every key
    with the k-th row are the tie group. The candidate's rows before that group must be the gold's, run by
    run; the rest must be rows of the tie group.
    """
    limit = spec.limit
    if limit is None or limit <= 0 or expected.truncated or candidate.truncated:
        return None
    if len(expected.rows) != limit or len(candidate.rows) != limit:
        return None
    full, _ = _keyed(spec, expected_sql, len(expected.columns), config, rerun, keep_limit=False)
    if full is None or len(full.rows) < limit:
        return None
    start, end = next(run for run in full.runs if run[0] < limit <= run[1])
    if end <= limit:
        return None  # no tie crosses the cut: the rows had to be the same
    head_runs = [run for run in full.runs if run[1] <= start] + [(start, limit)]
    head = KeyedReference(spec, full.rows[:limit], full.keys[:limit], head_runs)
    check = head.check(candidate.rows, alignment, config, free_tail=True)
    if check is None or check.status != ORDER_OK:
        return None
    tied, chosen, floats = canonical_rows(full.rows[start:end], candidate.rows[start:], alignment)
    if not in_multiset(chosen, tied, config, floats):
        return None  # a row at the cut that is not one of the tied rows
    return Comparison(
        match=True,
        rule="limit_ties",
        reason=(
            f"all {limit} rows valid: {end - start} rows tie with the last one on the sort keys "
            f"(ORDER BY {', '.join(spec.texts)}, evaluated on the gold) and the candidate kept {limit - start} "
            f"of them (any choice is valid under LIMIT {limit})"
        ),
        score=1.0,
        expected_rows=limit,
        candidate_rows=limit,
        order=check,
        alignment=alignment,
    )
