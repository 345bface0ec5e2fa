"""Diagnosis of a case that did not pass: small named rules over the AST diff and the result diff.

    findings = diagnose(comparison, parse_clauses(expected_sql), parse_clauses(candidate_sql))
    # [("missing_filter", "WHERE a.year = 2020 is missing"), ...]

Every rule in ``DIAGNOSIS_RULES`` (in that order) looks at the comparison and both queries' clause items
and returns one finding or None; all findings are kept (a wrong query often has several causes). A case
with no finding gets ``unexplained``. The labels are stable and counted per run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nl2sql_pipeline.compare.model import Comparison
from nl2sql_pipeline.compare.structure import ClauseItems


@dataclass(frozen=True)
class DiagnosisInput:
    """What a diagnosis rule may read: the verdict and both queries' clause items (None: did not parse)."""

    comparison: Comparison | None
    expected: ClauseItems | None
    candidate: ClauseItems | None

    def items(self, clause: str) -> tuple[frozenset[str], frozenset[str]]:
        exp_items = self.expected.items[clause] if self.expected else frozenset()
        cand_items = self.candidate.items[clause] if self.candidate else frozenset()
        return exp_items, cand_items


Finding = tuple[str, str]
DiagnosisRule = Callable[[DiagnosisInput], "Finding | None"]


def _both_parsed(given: DiagnosisInput) -> bool:
    return given.expected is not None and given.candidate is not None


def _parsed(given: DiagnosisInput) -> tuple[ClauseItems, ClauseItems] | None:
    """Both queries' clause items (expected, candidate); None when either did not parse."""
    if given.expected is None or given.candidate is None:
        return None
    return given.expected, given.candidate


def _listed(items: frozenset[str]) -> str:
    return ", ".join(sorted(items))


def extra_or_missing_column(given: DiagnosisInput) -> Finding | None:
    """The candidate returns more or fewer columns than the gold."""
    if given.comparison is not None and given.comparison.rule == "column_count_mismatch":
        return "extra_or_missing_column", given.comparison.reason.split(";")[0]
    return None


def wrong_order_or_direction(given: DiagnosisInput) -> Finding | None:
    """Right rows, wrong order (an ORDER BY missing, on another key or in the other direction)."""
    if given.comparison is not None and given.comparison.rule == "row_order_mismatch":
        return "wrong_order_or_direction", given.comparison.order.detail if given.comparison.order else "row order"
    if not _both_parsed(given):
        return None
    exp_order, cand_order = given.items("order_by")
    if exp_order and exp_order != cand_order:
        return (
            "wrong_order_or_direction",
            f"ORDER BY {_listed(exp_order)} expected, got {_listed(cand_order) or 'none'}",
        )
    return None


def limit_differs(given: DiagnosisInput) -> Finding | None:
    """The LIMIT differs (or one query has none)."""
    if not _both_parsed(given):
        return None
    exp_limit, cand_limit = given.items("limit")
    if exp_limit != cand_limit:
        return "limit_differs", f"{_listed(exp_limit) or 'no LIMIT'} expected, got {_listed(cand_limit) or 'no LIMIT'}"
    return None


def missing_filter(given: DiagnosisInput) -> Finding | None:
    """A WHERE/HAVING condition of the gold is absent from the candidate."""
    if not _both_parsed(given):
        return None
    missing: set[str] = set()
    for clause in ("where", "having"):
        exp_items, cand_items = given.items(clause)
        missing |= exp_items - cand_items
    return ("missing_filter", f"missing condition {_listed(frozenset(missing))}") if missing else None


def extra_filter(given: DiagnosisInput) -> Finding | None:
    """The candidate adds a WHERE/HAVING condition the gold does not have."""
    if not _both_parsed(given):
        return None
    extra: set[str] = set()
    for clause in ("where", "having"):
        exp_items, cand_items = given.items(clause)
        extra |= cand_items - exp_items
    return ("extra_filter", f"extra condition {_listed(frozenset(extra))}") if extra else None


def wrong_aggregate(given: DiagnosisInput) -> Finding | None:
    """The aggregate functions differ (SUM for COUNT, AVG for MAX, ...)."""
    parsed = _parsed(given)
    if parsed is None or parsed[0].aggregates == parsed[1].aggregates:
        return None
    expected, candidate = parsed
    return "wrong_aggregate", (
        f"aggregates {_listed(expected.aggregates) or 'none'} expected, got {_listed(candidate.aggregates) or 'none'}"
    )


def wrong_join(given: DiagnosisInput) -> Finding | None:
    """The join kinds, joined tables or join keys differ."""
    parsed = _parsed(given)
    if parsed is None:
        return None
    expected, candidate = parsed
    exp_items, cand_items = given.items("from_join")
    if expected.join_kinds != candidate.join_kinds:
        return "wrong_join", (
            f"join kinds {_listed(expected.join_kinds) or 'none'} expected, got {_listed(candidate.join_kinds) or 'none'}"
        )
    if exp_items != cand_items:
        return "wrong_join", f"tables or join keys differ: {_listed(exp_items ^ cand_items)}"
    return None


def missing_distinct(given: DiagnosisInput) -> Finding | None:
    """DISTINCT on one side only (duplicates kept or dropped)."""
    parsed = _parsed(given)
    if parsed is None or parsed[0].distinct == parsed[1].distinct:
        return None
    return "missing_distinct", "DISTINCT expected" if parsed[0].distinct else "unexpected DISTINCT"


def wrong_grouping(given: DiagnosisInput) -> Finding | None:
    """The GROUP BY keys differ."""
    if not _both_parsed(given):
        return None
    exp_items, cand_items = given.items("group_by")
    if exp_items != cand_items:
        return (
            "wrong_grouping",
            f"GROUP BY {_listed(exp_items) or 'none'} expected, got {_listed(cand_items) or 'none'}",
        )
    return None


def only_type_or_format(given: DiagnosisInput) -> Finding | None:
    """Same row count, values differ in some column, but are equal apart from type or format.

    ``'01/02/2024'`` for ``DATE '2024-01-02'``, ``'TV'`` for ``'tv'``, 1 for TRUE (``Comparison.format_only``);
    values that differ (222 for 223) get no such finding.
    """
    comparison = given.comparison
    if comparison is None or comparison.match or comparison.rule != "multiset_mismatch":
        return None
    if not comparison.format_only:
        return None
    if comparison.row_precision == 0.0 and comparison.cell_f1 is not None and comparison.cell_f1 > 0.0:
        if "values differ in column" in comparison.reason:
            return "only_type_or_format", comparison.reason.split("values differ in ", 1)[1].split(";")[0]
    return None


DIAGNOSIS_RULES: tuple[DiagnosisRule, ...] = (
    extra_or_missing_column,
    wrong_order_or_direction,
    limit_differs,
    missing_filter,
    extra_filter,
    wrong_aggregate,
    wrong_join,
    missing_distinct,
    wrong_grouping,
    only_type_or_format,
)


def diagnose(
    comparison: Comparison | None, expected: ClauseItems | None, candidate: ClauseItems | None
) -> list[Finding]:
    """Every finding of ``DIAGNOSIS_RULES`` for a case that did not pass (``unexplained`` when none applies)."""
    given = DiagnosisInput(comparison, expected, candidate)
    findings = [finding for rule in DIAGNOSIS_RULES if (finding := rule(given)) is not None]
    return findings or [("unexplained", "no rule explains the difference")]
