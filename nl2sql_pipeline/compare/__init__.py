"""The result comparator: is a candidate query's result the same answer as the expected one?

    comparison = compare_results(exp_columns, exp_rows, cand_columns, cand_rows)
    comparison.match, comparison.rule, comparison.reason, comparison.score

Results are compared as multisets of rows (order ignored, duplicates counted) after each cell is
canonicalised by the value rules; columns are aligned by name or position first. Every rule lives in
``rules.RULES`` with its name and docstring; the verdict names the rule(s) that decided. The functions are in
``comparator``; the version and the accepted column orders in ``names``.

This face loads what it names on first use: ``from nl2sql_pipeline.compare.names import COMPARATOR_VERSION`` (run
identities, the CLI's argument parser) costs no sqlglot or comparator import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nl2sql_pipeline.compare.comparator import ROW_STEP_NAMES, compare_query_results, compare_results, compare_whole
    from nl2sql_pipeline.compare.engine import EngineComparisonError, EngineSource
    from nl2sql_pipeline.compare.model import (
        MAX_PERMUTATION_COLUMNS,
        CompareConfig,
        Comparison,
        ComparisonInputError,
        ExpectedResultError,
        Rule,
    )
    from nl2sql_pipeline.compare.names import COLUMN_ORDERS, COMPARATOR_VERSION
    from nl2sql_pipeline.compare.rules import RULES

_EXPORTS: dict[str, str] = {
    "compare_results": "comparator",
    "compare_query_results": "comparator",
    "compare_whole": "comparator",
    "ROW_STEP_NAMES": "comparator",
    "COLUMN_ORDERS": "names",
    "COMPARATOR_VERSION": "names",
    "MAX_PERMUTATION_COLUMNS": "model",
    "CompareConfig": "model",
    "Comparison": "model",
    "ComparisonInputError": "model",
    "ExpectedResultError": "model",
    "Rule": "model",
    "RULES": "rules",
    "EngineComparisonError": "engine",
    "EngineSource": "engine",
}
"""Each name this face exports, and the module of the package that defines it."""

__all__ = [
    "COLUMN_ORDERS",
    "COMPARATOR_VERSION",
    "CompareConfig",
    "Comparison",
    "ComparisonInputError",
    "EngineComparisonError",
    "EngineSource",
    "ExpectedResultError",
    "MAX_PERMUTATION_COLUMNS",
    "ROW_STEP_NAMES",
    "RULES",
    "Rule",
    "compare_query_results",
    "compare_results",
    "compare_whole",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
