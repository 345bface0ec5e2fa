"""Diagnosis with recommendations: for a case that is not correct, what went wrong and what a team can change.

An LLM judge sees the schema text, the question, both queries, the execution verdict and the rule-based
diagnosis (``compare.diagnosis``; the prompt is ``data/prompts/judges/<prompt_version>/diagnosis.txt``) and answers ``DIAGNOSIS_SCHEMA``: a ``category`` of ``CATEGORIES``, a
one-sentence ``explanation`` and one ``recommendation`` of a ``recommendation_kind`` a team can act on (a
semantic-model description, a synonym, a join hint, a prompt rule). The offline ``judge-oracle`` maps the
rule-based findings onto the same categories (``RULE_CATEGORIES``, the surest category first by
``CATEGORY_PRIORITY``) with a templated recommendation per finding (``RULE_RECOMMENDATIONS``).
``top_recommendations`` aggregates the recommendations of a run with the cases behind each.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from nl2sql_pipeline.judges.registry import ROLE_DIAGNOSIS
from nl2sql_pipeline.judges.sql_judgement import SqlJudgement
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import Verdict

SCHEMA_LINKING = "schema_linking"
JOIN_PATH = "join_path"
AGGREGATION = "aggregation"
FILTER_VALUE = "filter_value"
TIME = "time"
ORDERING_LIMIT = "ordering_limit"
OTHER = "other"
CATEGORIES: tuple[str, ...] = (SCHEMA_LINKING, JOIN_PATH, AGGREGATION, FILTER_VALUE, TIME, ORDERING_LIMIT, OTHER)

SEMANTIC_MODEL_DESCRIPTION = "semantic_model_description"
SYNONYM = "synonym"
JOIN_HINT = "join_hint"
PROMPT_RULE = "prompt_rule"
RECOMMENDATION_KINDS: tuple[str, ...] = (SEMANTIC_MODEL_DESCRIPTION, SYNONYM, JOIN_HINT, PROMPT_RULE)

DIAGNOSIS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": list(CATEGORIES)},
        "explanation": {"type": "string"},
        "recommendation_kind": {"type": "string", "enum": list(RECOMMENDATION_KINDS)},
        "recommendation": {"type": "string"},
    },
    "required": ["category", "explanation", "recommendation_kind", "recommendation"],
    "additionalProperties": False,
}
"""The structured output of a diagnosis."""

DIAGNOSED_OUTCOMES: frozenset[str] = frozenset(
    {outcomes.WRONG_RESULT, outcomes.EXECUTION_ERROR, outcomes.TIMEOUT, outcomes.POLICY_REJECTED}
)
"""Outcomes of the cases that get a diagnosis (not correct, and with candidate SQL to look at)."""


def is_diagnosed(verdict: Verdict) -> bool:
    """True for a query verdict that is not correct and has candidate SQL."""
    return not verdict.is_probe and verdict.outcome in DIAGNOSED_OUTCOMES and bool(verdict.generated_sql)


def diagnosis_values(schema_text: str, question: str, expected_sql: str, verdict: Verdict) -> dict[str, str]:
    """The placeholders of the ``diagnosis`` prompt (``data/prompts/judges/<version>/diagnosis.txt``)."""
    rules = "; ".join(f"{label}: {detail}" for label, detail in verdict.diagnosis_detail or ()) or "none"
    return {
        "schema": schema_text.strip(),
        "question": question.strip(),
        "expected_sql": expected_sql.strip(),
        "candidate_sql": (verdict.generated_sql or "").strip(),
        "outcome": verdict.outcome,
        "reason": verdict.reason or "no detail",
        "rule_diagnosis": rules,
        "categories": ", ".join(CATEGORIES),
        "recommendation_kinds": ", ".join(RECOMMENDATION_KINDS),
    }


@dataclass(frozen=True)
class Diagnosis:
    """One diagnosis: its category, explanation and recommendation."""

    category: str
    explanation: str
    recommendation_kind: str
    recommendation: str


def parse_diagnosis(payload: dict[str, Any]) -> Diagnosis:
    """The diagnosis of a reply already validated against ``DIAGNOSIS_SCHEMA``."""
    return Diagnosis(
        category=str(payload["category"]),
        explanation=str(payload["explanation"]).strip(),
        recommendation_kind=str(payload["recommendation_kind"]),
        recommendation=str(payload["recommendation"]).strip(),
    )


# ------------------------------------------------------------------------------------- judge-oracle

RULE_CATEGORIES: dict[str, str] = {
    "extra_or_missing_column": SCHEMA_LINKING,
    "wrong_order_or_direction": ORDERING_LIMIT,
    "limit_differs": ORDERING_LIMIT,
    "missing_filter": FILTER_VALUE,
    "extra_filter": FILTER_VALUE,
    "wrong_aggregate": AGGREGATION,
    "wrong_join": JOIN_PATH,
    "missing_distinct": AGGREGATION,
    "wrong_grouping": AGGREGATION,
    "only_type_or_format": OTHER,
    "unexplained": OTHER,
}
"""The category of each label of ``compare.diagnosis`` (a filter on a date or period becomes ``time``)."""

CATEGORY_PRIORITY: tuple[str, ...] = (TIME, JOIN_PATH, AGGREGATION, FILTER_VALUE, ORDERING_LIMIT, SCHEMA_LINKING, OTHER)
"""When several findings apply, the first category here names the case (a dropped GROUP BY key also
changes the columns: aggregation says more than schema linking)."""

RULE_RECOMMENDATIONS: dict[str, tuple[str, str]] = {
    SCHEMA_LINKING: (
        SEMANTIC_MODEL_DESCRIPTION,
        "Describe in the semantic model which columns answer this kind of question (what each output column means).",
    ),
    JOIN_PATH: (JOIN_HINT, "Add a join hint naming the join path and join type between the tables involved."),
    AGGREGATION: (
        SEMANTIC_MODEL_DESCRIPTION,
        "Define the measure in the semantic model with its aggregation, grain and distinctness.",
    ),
    FILTER_VALUE: (SYNONYM, "Add synonyms mapping the question's wording to the filtered column and its values."),
    TIME: (
        PROMPT_RULE,
        "Add a prompt rule for periods: how a relative period maps to date bounds and whether ends are inclusive.",
    ),
    ORDERING_LIMIT: (
        PROMPT_RULE,
        "Add a prompt rule to keep the ordering, direction, tie-breaker and row limit the question asks for.",
    ),
    OTHER: (PROMPT_RULE, "Add a prompt rule stating the expected output shape and value formats."),
}
"""The templated recommendation of each category (judge-oracle)."""

ERROR_CLASS_CATEGORIES: dict[str, tuple[str, str, str]] = {
    "binder": (
        SCHEMA_LINKING,
        SEMANTIC_MODEL_DESCRIPTION,
        "Describe the tables and columns in the semantic model (the candidate named one that does not exist).",
    ),
    "catalog": (
        SCHEMA_LINKING,
        SEMANTIC_MODEL_DESCRIPTION,
        "Describe the tables and columns in the semantic model (the candidate named one that does not exist).",
    ),
    "syntax": (OTHER, PROMPT_RULE, "Add a prompt rule: answer in DuckDB's SQL dialect, one SELECT statement."),
}
"""Diagnosis of a candidate that failed to run, by its error class (others: ``other`` with a prompt rule)."""

_TIME_WORDS = re.compile(
    r"\d{4}-\d{2}-\d{2}|\b(?:date|time|timestamp|interval|year|month|week|day|current_date|now)\b|_(?:at|date|day)\b",
    re.IGNORECASE,
)


def _finding_category(label: str, detail: str) -> str:
    category = RULE_CATEGORIES.get(label, OTHER)
    if category == FILTER_VALUE and _TIME_WORDS.search(detail):
        return TIME
    return category


def oracle_diagnosis(verdict: Verdict) -> Diagnosis:
    """judge-oracle's diagnosis of a case that is not correct, from its rule-based findings or its failure."""
    if verdict.outcome != outcomes.WRONG_RESULT:
        error_class = (verdict.reason or "").split(":", 1)[0].strip()
        category, kind, text = ERROR_CLASS_CATEGORIES.get(
            error_class, (OTHER, PROMPT_RULE, "Add a prompt rule stating the SQL policy and the query limits.")
        )
        return Diagnosis(
            category, f"the candidate did not run: {verdict.outcome} ({verdict.reason or 'no detail'})", kind, text
        )
    findings = list(verdict.diagnosis_detail or ()) or [("unexplained", "no rule explains the difference")]
    categorized = [(_finding_category(label, detail), label, detail) for label, detail in findings]
    category, label, detail = min(categorized, key=lambda item: CATEGORY_PRIORITY.index(item[0]))
    kind, text = RULE_RECOMMENDATIONS[category]
    return Diagnosis(category, f"{label}: {detail}", kind, text)


# ------------------------------------------------------------------------------------- aggregation


@dataclass(frozen=True)
class RecommendationGroup:
    """One recommendation of a run, with its kind, category and the cases behind it."""

    judge: str
    kind: str
    category: str
    text: str
    cases: tuple[str, ...]


def _normalized(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".")


def top_recommendations(judgements: Iterable[SqlJudgement], limit: int | None = None) -> list[RecommendationGroup]:
    """The diagnoses' recommendations grouped by judge, kind and wording (case and spacing aside), the most
    cases first; a case counts once per group (the first repeat of each case and sample is used)."""
    groups: dict[tuple[str, str, str], tuple[str, str, list[str]]] = {}
    for judgement in judgements:
        if judgement.role != ROLE_DIAGNOSIS or not judgement.decided or judgement.repeat_index != 0:
            continue
        kind, text = judgement.recommendation_kind or PROMPT_RULE, judgement.recommendation or ""
        key = (judgement.judge, kind, _normalized(text))
        label = judgement.case_id if judgement.sample_index == 0 else f"{judgement.case_id}#{judgement.sample_index}"
        _, _, cases = groups.setdefault(key, (judgement.category or OTHER, text, []))
        if label not in cases:
            cases.append(label)
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1][2]), item[0]))
    found = [RecommendationGroup(key[0], key[1], cat, text, tuple(cases)) for key, (cat, text, cases) in ranked]
    return found if limit is None else found[:limit]


def categories_count(judgements: Sequence[SqlJudgement]) -> dict[str, dict[str, int]]:
    """{judge: {category: cases}} over the first repeat of each diagnosis."""
    counts: dict[str, dict[str, int]] = {}
    for judgement in judgements:
        if judgement.role == ROLE_DIAGNOSIS and judgement.decided and judgement.repeat_index == 0:
            per_judge = counts.setdefault(judgement.judge, {})
            category = judgement.category or OTHER
            per_judge[category] = per_judge.get(category, 0) + 1
    return counts
