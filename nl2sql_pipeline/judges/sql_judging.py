"""Judging a run's SQL: every requested judge, in each of its SQL roles, over the run's verdicts, N times.

    judgements = judge_sql(cases, verdicts, judges, schema_text=texts, ask=ask, repeat=2)

For each judge with role ``sql_equivalence``, every verdict with candidate SQL (``sql_equivalence.is_judged``)
gets a judgement; for each judge with role ``diagnosis``, every case that is not correct
(``diagnosis.is_diagnosed``). ``judge-oracle`` (an offline judge) decides deterministically
(``sql_equivalence.oracle_equivalence``, ``diagnosis.oracle_diagnosis``); an LLM judge is asked through
``ask`` (the judge client: structured output validated against the role's JSON schema, cache keyed by the
repeat index so repeats are fresh calls). A reply whose failure stops the judging (402, an exhausted quota)
stops that judge: its remaining items get ``judging_stopped`` without a call, and the SQL verdicts stand.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.judges import diagnosis, sql_equivalence
from nl2sql_pipeline.judges.sql_judgement import JUDGE_ERROR, ROLE_SQL_EQUIVALENCE, SQL_ROLES, SqlJudgement
from nl2sql_pipeline.stages.records import Verdict

logger = logging.getLogger(__name__)

JUDGING_STOPPED = "judging_stopped"
"""The error class of the items a judge did not judge after a failure that stops judging (402, quota)."""


class SqlJudge(Protocol):
    """What the SQL judging needs of a registered judge (``judges.registry.JudgeSpec``)."""

    @property
    def slug(self) -> str: ...

    @property
    def is_offline(self) -> bool: ...

    @property
    def roles(self) -> tuple[str, ...]: ...

    @property
    def version_label(self) -> str: ...


@dataclass(frozen=True)
class JudgeReply:
    """What one structured judge call gave: the validated payload, or the failure; with its accounting."""

    payload: dict[str, Any] | None
    error_class: str | None = None
    error_message: str | None = None
    stops_judging: bool = False  # a failure that ends this judge's work in the run (402, quota)
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cached: bool = False


AskJudge = Callable[[SqlJudge, str, list[dict[str, str]], dict[str, Any], int], JudgeReply]
"""``ask(judge, role, messages, json_schema, repeat_index)``: one structured call of an LLM judge."""


def sql_roles(judge: SqlJudge) -> tuple[str, ...]:
    """The SQL roles of ``judge`` (``sql_equivalence``, ``diagnosis``) in that order."""
    return tuple(role for role in SQL_ROLES if role in judge.roles)


def _base(verdict: Verdict, judge: SqlJudge, role: str, repeat_index: int) -> dict[str, Any]:
    return {
        "case_id": verdict.case_id,
        "sample_index": verdict.sample_index,
        "judge": judge.slug,
        "role": role,
        "repeat_index": repeat_index,
        "generated_sql": verdict.generated_sql,
        "outcome": verdict.outcome,
        "test_suite_correct": verdict.test_suite_correct,
        "rule_diagnosis": verdict.diagnosis,
        "judge_version": judge.version_label,
    }


def _oracle(verdict: Verdict, case: Case, judge: SqlJudge, role: str, repeat_index: int) -> SqlJudgement:
    base = _base(verdict, judge, role, repeat_index)
    if role == ROLE_SQL_EQUIVALENCE:
        equivalent, reason = sql_equivalence.oracle_equivalence(verdict, case)
        return SqlJudgement(**base, equivalent=equivalent, reason=reason, latency_ms=0.0, cost_usd=0.0)
    found = diagnosis.oracle_diagnosis(verdict)
    return SqlJudgement(
        **base,
        category=found.category,
        reason=found.explanation,
        recommendation_kind=found.recommendation_kind,
        recommendation=found.recommendation,
        latency_ms=0.0,
        cost_usd=0.0,
    )


def _messages(role: str, verdict: Verdict, case: Case, schema: str) -> tuple[list[dict[str, str]], dict[str, Any]]:
    expected = case.canonical_sql or ""
    if role == ROLE_SQL_EQUIVALENCE:
        messages = sql_equivalence.equivalence_messages(schema, case.question, expected, verdict.generated_sql or "")
        return messages, sql_equivalence.EQUIVALENCE_SCHEMA
    return diagnosis.diagnosis_messages(schema, case.question, expected, verdict), diagnosis.DIAGNOSIS_SCHEMA


def _from_reply(base: dict[str, Any], role: str, reply: JudgeReply) -> SqlJudgement:
    accounting: dict[str, Any] = {
        "latency_ms": reply.latency_ms,
        "input_tokens": reply.input_tokens,
        "output_tokens": reply.output_tokens,
        "cost_usd": reply.cost_usd,
        "cached": reply.cached,
    }
    if reply.error_class is not None or reply.payload is None:
        return SqlJudgement(
            **base,
            error_class=reply.error_class or JUDGE_ERROR,
            error_message=reply.error_message,
            **accounting,
        )
    try:
        if role == ROLE_SQL_EQUIVALENCE:
            equivalent, reason = sql_equivalence.parse_equivalence(reply.payload)
            return SqlJudgement(**base, equivalent=equivalent, reason=reason, **accounting)
        found = diagnosis.parse_diagnosis(reply.payload)
    except (KeyError, TypeError, ValueError) as exc:  # the client validated it: a schema mismatch of ours
        return SqlJudgement(**base, error_class=JUDGE_ERROR, error_message=f"reply not usable: {exc}", **accounting)
    return SqlJudgement(
        **base,
        category=found.category,
        reason=found.explanation,
        recommendation_kind=found.recommendation_kind,
        recommendation=found.recommendation,
        **accounting,
    )


def judged_items(role: str, verdicts: Iterable[Verdict]) -> list[Verdict]:
    """The verdicts a judge in ``role`` looks at, by case and sample."""
    keep = sql_equivalence.is_judged if role == ROLE_SQL_EQUIVALENCE else diagnosis.is_diagnosed
    return sorted((v for v in verdicts if keep(v)), key=lambda v: (v.case_id, v.sample_index))


def judge_sql(
    cases: Iterable[Case],
    verdicts: Iterable[Verdict],
    judges: Sequence[SqlJudge],
    *,
    schema_text: Callable[[Case], str],
    ask: AskJudge | None = None,
    repeat: int = 1,
) -> list[SqlJudgement]:
    """Every judgement of every judge in each of its SQL roles, ``repeat`` times (repeat indexes 0..N-1).

    ``schema_text(case)`` is the schema an LLM judge sees; ``ask`` is required when a judge is not offline.
    """
    if repeat < 1:
        raise ValueError(f"judge repeat must be at least 1, got {repeat}")
    by_id = {case.id: case for case in cases}
    verdicts = [v for v in verdicts if v.case_id in by_id]
    found: list[SqlJudgement] = []
    for judge in judges:
        stopped: str | None = None
        for role in sql_roles(judge):
            for verdict in judged_items(role, verdicts):
                case = by_id[verdict.case_id]
                for repeat_index in range(repeat):
                    base = _base(verdict, judge, role, repeat_index)
                    if judge.is_offline:
                        found.append(_oracle(verdict, case, judge, role, repeat_index))
                        continue
                    if stopped is not None:
                        found.append(SqlJudgement(**base, error_class=JUDGING_STOPPED, error_message=stopped))
                        continue
                    if ask is None:
                        raise ValueError(f"judge {judge.slug} is not offline: judging it needs a judge client")
                    messages, schema = _messages(role, verdict, case, schema_text(case))
                    reply = ask(judge, role, messages, schema, repeat_index)
                    found.append(_from_reply(base, role, reply))
                    if reply.stops_judging:
                        stopped = f"judging by {judge.slug} stopped: {reply.error_class}: {reply.error_message}"
                        logger.warning("%s; the SQL verdicts stand", stopped)
    return found
