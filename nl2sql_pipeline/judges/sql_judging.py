"""Judging a run's SQL: every requested judge, in each of its SQL roles, over the run's verdicts, N times.

    judgements = judge_sql(cases, verdicts, judges, schema_text=texts, repeat=2)

For each judge with role ``sql_equivalence``, every verdict with candidate SQL (``sql_equivalence.is_judged``)
gets a judgement; for each judge with role ``diagnosis``, every case that is not correct
(``diagnosis.is_diagnosed``). ``judge-oracle`` (the offline judge) decides deterministically
(``sql_equivalence.oracle_equivalence``, ``diagnosis.oracle_diagnosis``); an LLM judge is asked through its
``judges.client.JudgeClient`` (the generation stack's limiter, slots, retries and failure classes; the reply
validated against the role's JSON schema; cached by the judge's config hash, the messages, the case
fingerprint and the repeat index, so each repeat is a call of its own and a re-run pays nothing). A failure
that stops the judging (402, an exhausted quota, a bad key) stops that judge: what it had not sent yet is
recorded as ``judging_stopped`` with the reason, and the SQL verdicts stand.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.judges import diagnosis, sql_equivalence
from nl2sql_pipeline.judges.registry import ROLE_SQL_EQUIVALENCE, JudgeSpec
from nl2sql_pipeline.judges.sql_judgement import SQL_ROLES, SqlJudgement
from nl2sql_pipeline.stages.records import Verdict

if TYPE_CHECKING:  # the client loads the generation stack: imported where a call is made
    from nl2sql_pipeline.judges.client import JudgeClient, JudgeOutcome, JudgeRequest

logger = logging.getLogger(__name__)

JUDGING_STOPPED = "judging_stopped"
"""The error class of the items a judge did not send after a failure that stops judging (402, quota)."""

ClientFactory = Callable[[JudgeSpec], "JudgeClient"]


def sql_roles(judge: JudgeSpec) -> tuple[str, ...]:
    """The SQL roles of ``judge`` (``sql_equivalence``, ``diagnosis``) in that order."""
    return tuple(role for role in SQL_ROLES if role in judge.roles)


def judges_sql(judge: JudgeSpec) -> bool:
    """True when ``judge`` has a SQL role (its judgements go to the ``sql_judgements`` asset)."""
    return bool(sql_roles(judge))


def version_label(judge: JudgeSpec) -> str:
    """``judge-oracle`` or ``openai/gpt-4o-mini v1 <config hash>``: what made a judgement."""
    if judge.is_offline:
        return f"{judge.slug} {judge.config_hash}"
    return f"{judge.model} {judge.prompt_version} {judge.config_hash}"


def judged_items(role: str, verdicts: Iterable[Verdict]) -> list[Verdict]:
    """The verdicts a judge in ``role`` looks at, by case and sample."""
    keep = sql_equivalence.is_judged if role == ROLE_SQL_EQUIVALENCE else diagnosis.is_diagnosed
    return sorted((v for v in verdicts if keep(v)), key=lambda v: (v.case_id, v.sample_index))


def _base(verdict: Verdict, judge: JudgeSpec, role: str, repeat_index: int) -> dict[str, Any]:
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
        "judge_version": version_label(judge),
    }


def _oracle(verdict: Verdict, case: Case, judge: JudgeSpec, role: str, repeat_index: int) -> SqlJudgement:
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


def _request(judge: JudgeSpec, role: str, verdict: Verdict, case: Case, schema: str, repeat_index: int) -> JudgeRequest:
    from nl2sql_pipeline.judges.client import JudgeRequest
    from nl2sql_pipeline.judges.prompts import load_judge_prompt

    expected = case.canonical_sql or ""
    if role == ROLE_SQL_EQUIVALENCE:
        values = sql_equivalence.equivalence_values(schema, case.question, expected, verdict.generated_sql or "")
        json_schema = sql_equivalence.EQUIVALENCE_SCHEMA
    else:
        values = diagnosis.diagnosis_values(schema, case.question, expected, verdict)
        json_schema = diagnosis.DIAGNOSIS_SCHEMA
    messages = load_judge_prompt(judge, role).render(values)
    # the candidate SQL is part of the messages, so another candidate of the same case is another cache key
    return JudgeRequest(
        role=role,
        case_id=case.id,
        case_fingerprint=case.fingerprint,
        messages=tuple(messages),
        schema=json_schema,
        repeat_index=repeat_index,
        subject=f"sample {verdict.sample_index}",
    )


def _from_outcome(base: dict[str, Any], role: str, outcome: JudgeOutcome) -> SqlJudgement:
    accounting: dict[str, Any] = {
        "latency_ms": outcome.latency_ms,
        "input_tokens": outcome.input_tokens if outcome.calls or outcome.cached else None,
        "output_tokens": outcome.output_tokens if outcome.calls or outcome.cached else None,
        "cost_usd": outcome.cost_usd,
        "cached": outcome.cached,
    }
    if outcome.judgement is None:
        message = outcome.error_message or ""
        not_sent = outcome.attempts == 0 and message.startswith("not sent: the run stopped")
        return SqlJudgement(
            **base,
            error_class=JUDGING_STOPPED if not_sent else outcome.error_class,
            error_message=message,
            **accounting,
        )
    if role == ROLE_SQL_EQUIVALENCE:
        equivalent, reason = sql_equivalence.parse_equivalence(outcome.judgement)
        return SqlJudgement(**base, equivalent=equivalent, reason=reason, **accounting)
    found = diagnosis.parse_diagnosis(outcome.judgement)
    return SqlJudgement(
        **base,
        category=found.category,
        reason=found.explanation,
        recommendation_kind=found.recommendation_kind,
        recommendation=found.recommendation,
        **accounting,
    )


def default_client(judge: JudgeSpec) -> JudgeClient:
    """A judge client with the judge cache under the storage root."""
    from nl2sql_pipeline.judges.client import JudgeClient, judge_cache

    return JudgeClient(judge, cache=judge_cache())


def judge_sql(
    cases: Iterable[Case],
    verdicts: Iterable[Verdict],
    judges: Sequence[JudgeSpec],
    *,
    schema_text: Callable[[Case], str],
    repeat: int = 1,
    client_for: ClientFactory | None = None,
) -> list[SqlJudgement]:
    """Every judgement of every judge in each of its SQL roles, ``repeat`` times (repeat indexes 0..N-1).

    ``schema_text(case)`` is the schema an LLM judge sees; ``client_for(judge)`` makes an LLM judge's client
    (default ``default_client``: one per judge and call of this function, so a stop holds for the run).
    """
    if repeat < 1:
        raise ValueError(f"judge repeat must be at least 1, got {repeat}")
    by_id = {case.id: case for case in cases}
    verdicts = [v for v in verdicts if v.case_id in by_id]
    found: list[SqlJudgement] = []
    for judge in judges:
        work = [
            (verdict, role, repeat_index)
            for role in sql_roles(judge)
            for verdict in judged_items(role, verdicts)
            for repeat_index in range(repeat)
        ]
        if judge.is_offline:
            found += [_oracle(v, by_id[v.case_id], judge, role, r) for v, role, r in work]
            continue
        if not work:
            continue
        client = (client_for or default_client)(judge)
        requests = [_request(judge, role, v, by_id[v.case_id], schema_text(by_id[v.case_id]), r) for v, role, r in work]
        outcomes = client.judge_all(requests)
        found += [_from_outcome(_base(v, judge, role, r), role, o) for (v, role, r), o in zip(work, outcomes)]
        if client.stop_reason is not None:
            logger.warning("judge %s: %s; the SQL verdicts stand", judge.slug, client.stop_reason)
    return found


def requested_sql_judges(slugs: Sequence[str], registry: dict[str, JudgeSpec] | None = None) -> list[JudgeSpec]:
    """The registered judges among ``slugs`` that have a SQL role, in order (ConfigError for an unknown slug)."""
    from nl2sql_pipeline.judges.registry import get_judge, load_judges

    specs = registry if registry is not None else load_judges()
    judges = [get_judge(slug, specs) for slug in dict.fromkeys(slugs)]
    return [judge for judge in judges if judges_sql(judge)]


def schema_texts(cases: Iterable[Case], resolve_database: Callable[[str], Any]) -> Callable[[Case], str]:
    """``schema_text(case)``: the schema text the generation prompt gives for the case's database (its DDL
    annotated by the semantic model, or its introspection), built for the gold set at the first call (an
    offline judge never asks)."""
    from nl2sql_pipeline.generation.prompt_context import prompt_context_for_cases

    cases = list(cases)
    built: list[Any] = []

    def schema_text(case: Case) -> str:
        if not built:
            built.append(prompt_context_for_cases(cases, resolve_database=resolve_database))
        return str(built[0].for_case(case).schema_text)

    return schema_text
