"""The SQL equivalence judge: is the candidate query equivalent to the expected one, given the schema?

An LLM judge sees the schema text, the question, the expected SQL and the candidate SQL (never any rows;
the prompt is ``data/prompts/judges/<prompt_version>/sql_equivalence.txt``) and answers ``{"equivalent": true|false, "reason": "..."}`` (``EQUIVALENCE_SCHEMA``, validated by the judge
client). The offline ``judge-oracle`` decides deterministically from what execution already established,
by the ordered rules of ``ORACLE_RULES``: the candidate is equivalent when it is the expected SQL after
normalization (AST identity), not equivalent when it failed where the gold ran, when its rows differ, or
when its rows match on the database but differ on a test-suite variant (a lucky match), and equivalent when
its rows match on the database and on every variant measured.

    oracle_equivalence(verdict, case)    # (False, "rows match on the database but differ on variant 2: ...")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import Verdict

EQUIVALENCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "equivalent": {"type": "boolean"},
        "reason": {"type": "string"},
    },
    "required": ["equivalent", "reason"],
    "additionalProperties": False,
}
"""The structured output of an equivalence judgement."""

JUDGED_OUTCOMES: frozenset[str] = frozenset(
    {
        outcomes.CORRECT,
        outcomes.WRONG_RESULT,
        outcomes.EXECUTION_ERROR,
        outcomes.TIMEOUT,
        outcomes.POLICY_REJECTED,
    }
)
"""Outcomes whose candidate SQL is judged (a generation error or a skipped case has no SQL to judge)."""


def is_judged(verdict: Verdict) -> bool:
    """True for a scored query verdict with candidate SQL (what the equivalence judge looks at)."""
    return not verdict.is_probe and verdict.outcome in JUDGED_OUTCOMES and bool(verdict.generated_sql)


def equivalence_values(schema_text: str, question: str, expected_sql: str, candidate_sql: str) -> dict[str, str]:
    """The placeholders of the ``sql_equivalence`` prompt (``data/prompts/judges/<version>/sql_equivalence.txt``)."""
    return {
        "schema": schema_text.strip(),
        "question": question.strip(),
        "expected_sql": expected_sql.strip(),
        "candidate_sql": candidate_sql.strip(),
    }


def parse_equivalence(payload: dict[str, Any]) -> tuple[bool, str]:
    """(equivalent, reason) of a reply already validated against ``EQUIVALENCE_SCHEMA``."""
    return bool(payload["equivalent"]), str(payload["reason"]).strip()


# ------------------------------------------------------------------------------------- judge-oracle


@dataclass(frozen=True)
class OracleInput:
    """What an oracle rule reads: the execution verdict and the case's expected SQL alternatives."""

    verdict: Verdict
    expected_sql: tuple[str, ...]


Decision = tuple[bool, str]
OracleRule = Callable[[OracleInput], "Decision | None"]


def normalized_sql(sql: str) -> str | None:
    """The SQL re-rendered from its parsed tree with identifiers case-folded (None: does not parse)."""
    from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

    from nl2sql_pipeline.sql.parse import DIALECT, SqlParseError, parse

    try:
        tree = parse(sql).copy()
    except (SqlParseError, ValueError):
        return None
    return normalize_identifiers(tree, dialect=DIALECT).sql(dialect=DIALECT, normalize=True)


def ast_identical(given: OracleInput) -> Decision | None:
    """The candidate is one of the expected queries after normalization: equivalent whatever the rows say."""
    candidate = normalized_sql(given.verdict.generated_sql or "")
    if candidate is None:
        return None
    for index, expected in enumerate(given.expected_sql):
        if normalized_sql(expected) == candidate:
            which = "the expected SQL" if index == 0 else f"expected alternative {index}"
            return True, f"identical to {which} after normalization"
    return None


def did_not_run(given: OracleInput) -> Decision | None:
    """The candidate failed (error, timeout, policy) where the expected SQL ran: not equivalent."""
    verdict = given.verdict
    if verdict.outcome in outcomes.EXECUTED:
        return None
    detail = f": {verdict.reason}" if verdict.reason else ""
    return False, f"the candidate did not run ({verdict.outcome}{detail})"


def rows_differ(given: OracleInput) -> Decision | None:
    """Execution found other rows than the gold's: not equivalent."""
    verdict = given.verdict
    if verdict.outcome != outcomes.WRONG_RESULT:
        return None
    return False, f"rows differ on the database ({verdict.comparison_rule}: {verdict.reason or 'no detail'})"


def differs_on_variant(given: OracleInput) -> Decision | None:
    """Rows match on the database but not on a test-suite variant: a lucky match, not equivalent."""
    verdict = given.verdict
    if verdict.correct and verdict.test_suite_correct is False:
        return False, f"rows match on the database but not on a variant ({verdict.test_suite_reason or 'a variant'})"
    return None


def rows_match(given: OracleInput) -> Decision | None:
    """Rows match on the database (and on every variant measured): equivalent."""
    verdict = given.verdict
    if not verdict.correct:
        return None
    if verdict.test_suite_variants:
        return True, f"rows match on the database and on {verdict.test_suite_variants} variants"
    return True, f"rows match on the database ({verdict.comparison_rule})"


ORACLE_RULES: tuple[OracleRule, ...] = (ast_identical, did_not_run, rows_differ, differs_on_variant, rows_match)


def oracle_equivalence(verdict: Verdict, case: Case) -> Decision:
    """judge-oracle's decision on one judged verdict: the first rule of ``ORACLE_RULES`` that decides."""
    given = OracleInput(verdict, tuple(case.expected_sql))
    for rule in ORACLE_RULES:
        decision = rule(given)
        if decision is not None:
            return decision
    return False, f"no rule decides outcome {verdict.outcome!r}: not shown equivalent"
