"""The row rules: row counts, multisets matched exactly or within float tolerance, and the reason
that names the rows missing, extra or differently repeated (the matching itself is in ``matching``).
"""

from __future__ import annotations

from collections.abc import Sequence

from nl2sql_pipeline.compare.format_only import differ_only_in_format
from nl2sql_pipeline.compare.matching import differing_columns
from nl2sql_pipeline.compare.model import Comparison
from nl2sql_pipeline.compare.state import Aligned, ComparisonState
from nl2sql_pipeline.compare.wording import format_row, plural


def _first_in(ordered: Sequence[tuple], wanted: set[tuple]) -> tuple | None:
    """The first row of ``ordered`` that is in ``wanted`` (None when ``wanted`` is empty)."""
    if not wanted:
        return None
    return next((row for row in ordered if row in wanted), None)


def describe_row_differences(state: ComparisonState, aligned: Aligned) -> str:
    """Which rows are missing, extra or differently repeated, and which columns' values differ."""
    rows = aligned.rows
    n_missing, n_extra = rows.missing.total(), rows.extra.total()
    if n_extra and n_missing:
        parts = [f"candidate has {plural(n_extra, 'extra row')}, {n_missing} missing"]
    elif n_extra:
        parts = [f"candidate has {plural(n_extra, 'extra row')}"]
    else:
        parts = [f"candidate is missing {plural(n_missing, 'row')}"]
    repeated = _first_in(aligned.expected_rows, {r for r in rows.missing if rows.candidate_counter[r] > 0})
    if repeated is None:
        repeated = _first_in(aligned.candidate_rows, {r for r in rows.extra if rows.expected_counter[r] > 0})
    if repeated is not None:
        shown = state.original_row("expected", repeated, aligned)
        parts.append(
            f"row {format_row(shown)} appears {rows.expected_counter[repeated]}x in expected, "
            f"{rows.candidate_counter[repeated]}x in candidate"
        )
    first_missing = _first_in(aligned.expected_rows, {r for r in rows.missing if rows.candidate_counter[r] == 0})
    if first_missing is not None:
        parts.append(f"first missing: {format_row(state.original_row('expected', first_missing, aligned))}")
    first_extra = _first_in(aligned.candidate_rows, {r for r in rows.extra if rows.expected_counter[r] == 0})
    if first_extra is not None:
        parts.append(f"first extra: {format_row(state.original_row('candidate', first_extra, aligned))}")
    if rows.expected_count == rows.candidate_count:
        differing = [state.column_label(index, aligned) for index in differing_columns(rows, state.config)]
        if differing:
            parts.append(f"values differ in {'column' if len(differing) == 1 else 'columns'} {', '.join(differing)}")
    return "; ".join(parts)


def row_count_mismatch(state: ComparisonState) -> Comparison | None:
    """Both results must have the same number of rows; the reason names the rows missing and extra."""
    n_exp, n_cand = len(state.expected_rows), len(state.candidate_rows)
    if n_exp == n_cand:
        return None
    aligned = state.aligned()
    return state.mismatched(
        "row_count_mismatch",
        f"expected {plural(n_exp, 'row')}, candidate returned {n_cand}: {describe_row_differences(state, aligned)}",
        aligned.rows.score,
    )


def multiset_exact(state: ComparisonState) -> Comparison | None:
    """Rows match as multisets of canonical values: row order is ignored, duplicates count."""
    aligned = state.aligned()
    if aligned.rows.complete and not aligned.rows.tolerance_matched:
        return state.matched(aligned)
    return None


def float_tolerance(state: ComparisonState) -> Comparison | None:
    """Rows that differ only in float values within ``rel_tol``/``abs_tol`` match (math.isclose semantics)."""
    aligned = state.aligned()
    if aligned.rows.complete:
        return state.matched(aligned)
    return None


def multiset_mismatch(state: ComparisonState) -> Comparison | None:
    """No rule matched: the reason names rows missing, extra or differently repeated, and the differing columns."""
    aligned = state.aligned()
    comparison = state.mismatched(
        "multiset_mismatch", f"rows differ: {describe_row_differences(state, aligned)}", aligned.rows.score
    )
    rows = aligned.rows
    if rows.expected_count == rows.candidate_count and differ_only_in_format(
        rows, differing_columns(rows, state.config)
    ):
        comparison = comparison.evolve(format_only=True)
    return comparison
