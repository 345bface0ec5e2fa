"""The result comparator: is a candidate query's result the same answer as the expected one?

    comparison = compare_results(exp_columns, exp_rows, cand_columns, cand_rows)
    comparison.match, comparison.rule, comparison.reason, comparison.score

Results are compared as multisets of rows (order ignored, duplicates counted) after each cell is
canonicalised by the value rules; columns are aligned by name or position first. Every rule lives in
``rules.RULES`` with its name and docstring; the verdict names the rule(s) that decided.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nl2sql_pipeline.compare.model import (
    COLUMN_ORDERS,
    COMPARATOR_VERSION,
    MAX_PERMUTATION_COLUMNS,
    CompareConfig,
    Comparison,
    ComparisonInputError,
    ExpectedResultError,
    Rule,
)
from nl2sql_pipeline.compare.rules import CANONICALISER, QUERY_RULES, RULE_NAMES, RULES, STEP_RULES
from nl2sql_pipeline.compare.state import ComparisonState

if TYPE_CHECKING:
    from nl2sql_pipeline.execution import QueryResult

__all__ = [
    "COLUMN_ORDERS",
    "COMPARATOR_VERSION",
    "MAX_PERMUTATION_COLUMNS",
    "RULES",
    "CompareConfig",
    "Comparison",
    "ComparisonInputError",
    "ExpectedResultError",
    "Rule",
    "compare_query_results",
    "compare_results",
]

_DEFAULT_CONFIG = CompareConfig()


def compare_results(
    expected_columns: Sequence[str],
    expected_rows: Sequence[Sequence[Any]],
    candidate_columns: Sequence[str],
    candidate_rows: Sequence[Sequence[Any]],
    config: CompareConfig = _DEFAULT_CONFIG,
) -> Comparison:
    """Compare a candidate result with the expected one; raises ComparisonInputError on ragged rows."""
    with _gc_paused():
        state = ComparisonState(
            expected_columns, expected_rows, candidate_columns, candidate_rows, config, CANONICALISER, RULE_NAMES
        )
        for rule in STEP_RULES:
            verdict = rule.apply(state)
            if verdict is not None:
                return verdict
    raise AssertionError("multiset_mismatch always decides")  # pragma: no cover


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: the comparison allocates many tuples but no cycles, and
    collections triggered by those allocations would rescan every live row (2-5x slower on big results)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def compare_query_results(
    expected: QueryResult, candidate: QueryResult, config: CompareConfig = _DEFAULT_CONFIG
) -> Comparison:
    """Compare two sandbox results (``execution.QueryResult``); raises ExpectedResultError if the expected failed."""
    for rule in QUERY_RULES:
        verdict = rule.apply(expected, candidate, config)
        if verdict is not None:
            return verdict
    comparison = compare_results(expected.columns, expected.rows, candidate.columns, candidate.rows, config)
    if expected.truncated and candidate.truncated:
        note = f"both results hit the row cap: only their first {len(expected.rows)} rows were compared"
        comparison = replace(comparison, reason=f"{comparison.reason}; {note}")
    return comparison
