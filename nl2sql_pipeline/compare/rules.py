"""Every comparison rule, declared once, in the order it applies (sqlglot-optimizer style).

- ``query`` rules look at whole query results (``compare_query_results`` only);
- ``value`` rules define when two cells are equal: for each Python type, the first rule that applies
  canonicalises the cell;
- ``step`` rules run in order over the comparison state: column checks and alignment, then the rows.
  The first step that returns a ``Comparison`` decides; ``multiset_mismatch`` always does.
"""

from __future__ import annotations

import numbers
from datetime import date, time
from decimal import Decimal

from nl2sql_pipeline.compare import columns, query, rows, values
from nl2sql_pipeline.compare.model import Rule
from nl2sql_pipeline.execution.infinity import TemporalInfinity

RULES: tuple[Rule, ...] = (
    Rule("query", query.expected_failed),
    Rule("query", query.candidate_failed),
    Rule("query", query.candidate_truncated),
    Rule("query", query.expected_truncated),
    Rule("value", values.null_equals_null, (type(None),)),
    Rule("value", values.boolean_strict, (bool,)),
    Rule("value", values.nan_inf_canonical, (numbers.Real, Decimal)),
    Rule("value", values.numeric_value_equality, (numbers.Number,)),
    Rule("value", values.numeric_string_coercion, (str,)),
    Rule("value", values.temporal_equivalence, (date, time, str, TemporalInfinity)),
    Rule("value", values.string_exact, (str,)),
    Rule("value", values.nested_values, (list, tuple, dict)),
    Rule("value", values.other_values),
    Rule("step", columns.column_count_mismatch),
    Rule("step", columns.column_names_mismatch),
    Rule("step", columns.column_reorder_by_name),
    Rule("step", columns.column_positional),
    Rule("step", rows.multiset_exact),
    Rule("step", rows.float_tolerance),
    Rule("step", columns.column_permutation),
    Rule("step", rows.row_count_mismatch),
    Rule("step", rows.multiset_mismatch),
)

QUERY_RULES: tuple[Rule, ...] = tuple(r for r in RULES if r.kind == "query")
VALUE_RULES: tuple[Rule, ...] = tuple(r for r in RULES if r.kind == "value")
STEP_RULES: tuple[Rule, ...] = tuple(r for r in RULES if r.kind == "step")
RULE_NAMES: tuple[str, ...] = tuple(r.name for r in RULES)

CANONICALISER = values.Canonicaliser(VALUE_RULES)
"""The value rules applied to cells and columns (shared; it caches rule chains per Python type)."""
