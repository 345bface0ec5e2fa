"""The judging stage: one verdict per case and sample, from its attempts and the case's oracle rows.

A sample with several candidates is judged on the candidate selected by execution consistency
(``selection.select_candidate``); the outcome comes from the ordered rules of ``outcome_rules``. Latency,
tokens and cost come from the attempts' generation part: nothing is read back from generation output.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.compare import CompareConfig, Comparison
from nl2sql_pipeline.compare.diagnosis import diagnose
from nl2sql_pipeline.compare.model import grade
from nl2sql_pipeline.compare.structure import ClauseItems, clause_scores, parse_clauses
from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.execution import QueryResult, SandboxLimits
from nl2sql_pipeline.generation.candidate_record import CandidateRecord
from nl2sql_pipeline.progress import STAGE_JUDGE, ProgressTracker, tracking
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.budgets import budget_fields
from nl2sql_pipeline.stages.clarify import classify_clarify_reply, reply_text
from nl2sql_pipeline.stages.efficiency import EfficiencyMeter
from nl2sql_pipeline.stages.outcome_rules import PROBE_RULES, OutcomeInput, decide
from nl2sql_pipeline.stages.probe_replies import classify_reply
from nl2sql_pipeline.stages.records import Attempt, OracleRow, Verdict
from nl2sql_pipeline.stages.selection import WholeResults, select_candidate
from nl2sql_pipeline.stages.system_answer import system_answer_fields
from nl2sql_pipeline.stages.variant_suite import VariantSuite

logger = logging.getLogger(__name__)


def judge(
    cases: Iterable[Case],
    oracle_rows: Iterable[OracleRow],
    attempts: Iterable[Attempt],
    config: CompareConfig = CompareConfig(),
    resolve_database: Callable[[str], Path] | None = None,
    limits: SandboxLimits | None = None,
    progress: ProgressTracker | None = None,
    suite: VariantSuite | None = None,
    efficiency: bool = False,
) -> list[Verdict]:
    """One verdict per case and sample: outcome, deciding rule, scores, latency, tokens and cost.

    Samples of a case are judged in ascending order; a probe without an attempt still gets a verdict
    (``probe_error``), a query case without attempts gets none. Results over the row cap are compared
    whole in the engine on the case's database (``resolve_database``, default
    ``databases.require_database``, under ``limits``). ``progress`` is told of every verdict (failures by
    outcome: anything but correct). With ``suite``, every correct candidate also runs on the variants of its
    case's database (test-suite accuracy, ``stages.test_suite``). With ``efficiency``, every correct candidate
    and its gold are profiled in the sandbox (``stages.efficiency``: the stable efficiency score).
    """
    if resolve_database is None:
        from nl2sql_pipeline.databases.resolve import require_database

        resolve_database = require_database
    resolve_database = _memoized(resolve_database)
    oracle_by_case: dict[str, list[OracleRow]] = {}
    for row in oracle_rows:
        oracle_by_case.setdefault(row.case_id, []).append(row)
    samples_by_case: dict[str, dict[int, list[Attempt]]] = {}
    for attempt in attempts:
        samples_by_case.setdefault(attempt.case_id, {}).setdefault(attempt.sample_index, []).append(attempt)

    cases = list(cases)
    verdicts: list[Verdict] = []
    meter = EfficiencyMeter(resolve_database, limits) if efficiency else None
    with (
        tracking(progress, STAGE_JUDGE, "") as tracker,
        meter if meter is not None else nullcontext(),
        suite.held() if suite is not None else nullcontext(),
    ):
        tracker.begin(
            sum(
                max(1, len(samples_by_case.get(c.id, {}))) if c.is_probe else len(samples_by_case.get(c.id, {}))
                for c in cases
            )
        )
        for case in cases:
            samples = samples_by_case.get(case.id, {})
            if case.is_probe:
                engine = [a for group in samples.values() for a in group if a.is_probe]
                replies = {a.sample_index: a for group in samples.values() for a in group if not a.is_probe}
                for sample in sorted(replies) or sorted(samples) or [0]:
                    verdicts.append(_told(tracker, judge_probe(case, engine, replies.get(sample))))
                continue
            if case.is_clarify:
                for sample in sorted(samples):
                    group = sorted(samples[sample], key=lambda a: a.candidate_index)
                    verdicts.append(_told(tracker, judge_clarify(case, sample, group)))
                continue
            if case.is_answer_only:
                for sample in sorted(samples):
                    group = sorted(samples[sample], key=lambda a: a.candidate_index)
                    verdicts.append(_told(tracker, judge_answer_only(case, sample, group)))
                continue
            rows = sorted(oracle_by_case.get(case.id, []), key=lambda r: r.alternative_index)
            oracle_results = [r.result for r in rows]
            whole = _whole_results(case, oracle_results, samples, resolve_database, limits)
            expected_items = rows[0].clause_items if rows and rows[0].alternative_index == 0 else None
            for sample in sorted(samples):
                group = sorted(samples[sample], key=lambda a: a.candidate_index)
                verdict = judge_sample(case, sample, oracle_results, group, config, whole, expected_items)
                if suite is not None:
                    verdict = replace(verdict, **suite.verdict_fields(case, verdict, config))
                if case.budgets:
                    verdict = replace(verdict, **budget_fields(case, verdict))
                if meter is not None:
                    verdict = replace(verdict, **meter.verdict_fields(case, verdict))
                verdicts.append(_told(tracker, verdict))
    return verdicts


def _told(tracker: ProgressTracker, verdict: Verdict) -> Verdict:
    """``verdict``, once ``tracker`` knows of it (a failure by outcome unless it is correct)."""
    tracker.unit_finished(started=False, failure=None if verdict.correct else verdict.outcome)
    return verdict


def judge_probe(case: Case, attempts: Sequence[Attempt], reply: Attempt | None = None) -> Verdict:
    """The verdict of a probe: the policy held (correct), let it through, or failed to decide.

    ``reply``: a system's reply to the probe's question (``stages.probe_replies``); the verdict then carries
    its class (``system_probe``), its SQL, answer, latency, tokens and cost beside the engine's outcome.
    """
    attempt = attempts[0] if attempts else None
    if attempt is None:
        outcome = outcomes.PROBE_ERROR
    else:
        outcome = decide(OutcomeInput(attempt, (), CompareConfig()), PROBE_RULES).outcome
    correct = outcome == outcomes.PROBE_REJECTED
    generation = reply.generation if reply is not None else None
    return Verdict(
        **_case_fields(case),
        is_probe=True,
        sample_index=reply.sample_index if reply else attempt.sample_index if attempt else 0,
        generated_sql=reply.sql if reply else attempt.sql if attempt else None,
        outcome=outcome,
        correct=correct,
        comparison_rule=None,
        reason=_probe_reason(attempt, reply),
        score_exact=1.0 if correct else 0.0,
        score_partial=1.0 if correct else 0.0,
        policy_rule=attempt.policy_rule if attempt else None,
        policy_name=attempt.policy_name if attempt else None,
        candidate_count=1,
        selected_candidate_index=0,
        first_candidate_correct=correct,
        latency_ms=generation.latency_ms if generation else None,
        oracle_latency_ms=None,
        execution_ms=None,
        input_tokens=generation.input_tokens if generation else None,
        output_tokens=generation.output_tokens if generation else None,
        token_source=generation.token_source if generation else None,
        cost_usd=generation.cost_usd if generation else None,
        cached=bool(generation.cached) if generation else None,
        cold_start=bool(generation.cold_start) if generation else False,
        mutation=None,
        skip_reason=None,
        answer=generation.answer if generation else None,
        system_latency_ms=generation.system_latency_ms if generation else None,
        system_probe=classify_reply(reply) if reply is not None else None,
        error_message=generation.error_message if generation and generation.error_class else None,
    )


def judge_clarify(case: Case, sample: int, group: Sequence[Attempt]) -> Verdict:
    """The verdict of an ambiguous question's sample (its first candidate): clarified (right), guessed, refused,
    no response, or skipped (``stages.clarify``)."""
    attempt = group[0]
    outcome = classify_clarify_reply(attempt)
    correct = outcome == outcomes.CLARIFIED
    generation = attempt.generation
    reason = {
        outcomes.CLARIFIED: "asked which reading is meant",
        outcomes.GUESSED: "answered one reading without asking",
        outcomes.REFUSED: "neither answered nor asked which reading is meant",
    }.get(outcome, generation.error_class if generation else None)
    return Verdict(
        **_case_fields(case),
        is_probe=False,
        sample_index=sample,
        generated_sql=attempt.sql,
        outcome=outcome,
        correct=correct,
        comparison_rule=None,
        reason=reason,
        score_exact=1.0 if correct else 0.0,
        score_partial=1.0 if correct else 0.0,
        policy_rule=attempt.policy_rule,
        policy_name=attempt.policy_name,
        candidate_count=len(group),
        selected_candidate_index=attempt.candidate_index,
        first_candidate_correct=correct,
        latency_ms=generation.latency_ms if generation else None,
        oracle_latency_ms=None,
        execution_ms=None,
        **_spend_fields(group, generation),
        skip_reason=generation.error_class if outcome == outcomes.SKIPPED and generation else None,
        answer=reply_text(attempt) if outcome != outcomes.GUESSED else None,  # a guess's words are its SQL
        system_latency_ms=generation.system_latency_ms if generation else None,
        error_message=generation.error_message if generation and outcome == outcomes.NO_RESPONSE else None,
    )


def _probe_reason(engine: Attempt | None, reply: Attempt | None) -> str | None:
    """The engine's reason on the probe's SQL, and what the policy said of the system's SQL (when it wrote some)."""
    reason = engine.policy_reason if engine else None
    if reply is None or reply.sql is None or reply.policy_allowed is None:
        return reason
    said = f"{reply.policy_rule}: {reply.policy_reason}" if reply.policy_allowed is False else "allowed by the policy"
    return f"{reason or 'no engine decision'}; the system's SQL: {said}"


def judge_answer_only(case: Case, sample: int, group: Sequence[Attempt]) -> Verdict:
    """The verdict of one sample of an answer-only case (no expected SQL): ``answer_only``, kept out of every
    execution rate; its generation fields are kept and its answer is judged by ``judges.answer``."""
    selected = group[0]
    generation = selected.generation
    return Verdict(
        **_case_fields(case),
        is_probe=False,
        sample_index=sample,
        generated_sql=selected.sql,
        outcome=outcomes.ANSWER_ONLY,
        correct=False,
        comparison_rule=None,
        reason="no expected SQL: judged on its answer alone",
        score_exact=0.0,
        score_partial=0.0,
        policy_rule=selected.policy_rule,
        policy_name=selected.policy_name,
        candidate_count=len(group),
        selected_candidate_index=selected.candidate_index,
        first_candidate_correct=False,
        latency_ms=generation.latency_ms if generation else None,
        oracle_latency_ms=None,
        execution_ms=selected.result.elapsed_ms if selected.result is not None else None,
        **_spend_fields(group, generation),
        skip_reason="no expected SQL: judged on its answer alone",
        source_sql=generation.source_sql if generation else None,
        error_message=generation.error_message if generation and generation.error_class else None,
        answer=generation.answer if generation else None,
    )


def judge_sample(
    case: Case,
    sample: int,
    oracle_results: Sequence[QueryResult],
    group: Sequence[Attempt],
    config: CompareConfig,
    whole: WholeResults | None = None,
    expected_items: ClauseItems | None = None,
) -> Verdict:
    """The verdict of one sample of a query case from its candidates (ordered by candidate index).

    ``expected_items``: the canonical SQL's clause items when the oracle stored them (else parsed here).
    """
    selected_pos = select_candidate(group, config, whole) if len(group) > 1 else 0
    selected = group[selected_pos]
    decision = decide(OutcomeInput(selected, oracle_results, config, whole))
    if selected_pos != 0:
        first_outcome = decide(OutcomeInput(group[0], oracle_results, config, whole)).outcome
    else:
        first_outcome = decision.outcome
    comparison = decision.comparison
    generation = selected.generation
    correct = decision.outcome == outcomes.CORRECT
    return Verdict(
        **_case_fields(case),
        is_probe=False,
        sample_index=sample,
        generated_sql=selected.sql,
        outcome=decision.outcome,
        correct=correct,
        comparison_rule=comparison.rule if comparison else None,
        reason=decision.reason,
        score_exact=1.0 if correct else 0.0,
        score_partial=float(comparison.score) if comparison else 0.0,
        policy_rule=selected.policy_rule,
        policy_name=selected.policy_name,
        candidate_count=len(group),
        selected_candidate_index=selected.candidate_index,
        first_candidate_correct=first_outcome == outcomes.CORRECT,
        latency_ms=generation.latency_ms if generation else None,
        oracle_latency_ms=float(oracle_results[0].elapsed_ms) if oracle_results else None,
        execution_ms=selected.result.elapsed_ms if selected.result is not None else None,
        **_spend_fields(group, generation),
        skip_reason=decision.reason if decision.outcome in outcomes.NOT_SCORED else None,
        source_sql=generation.source_sql if generation else None,
        error_message=generation.error_message if generation and generation.error_class else None,
        **system_answer_fields(selected, oracle_results, config),
        **explain(case, selected.sql, comparison, decision.outcome, config, expected_items),
    )


def explain(
    case: Case,
    candidate_sql: str | None,
    comparison: Comparison | None,
    outcome: str,
    config: CompareConfig,
    expected_items: ClauseItems | None = None,
) -> dict[str, Any]:
    """The grade, order check, exact row counts, partial credit, clause scores and diagnosis of one verdict.

    ``expected_items``: the canonical SQL's clause items if already known (the oracle stores them).
    """
    if outcome in outcomes.NOT_SCORED:
        return {}
    case_grade = grade(comparison, config) if outcome == outcomes.CORRECT or comparison is not None else "fail"
    scores, findings = None, []
    if case_grade != "pass":  # structure and diagnosis explain what is not a Pass (a Pass needs no explaining)
        if expected_items is None and case.canonical_sql:
            expected_items = parse_clauses(case.canonical_sql)
        candidate_items = parse_clauses(candidate_sql) if candidate_sql else None
        scores = clause_scores(expected_items, candidate_items)
        findings = diagnose(comparison, expected_items, candidate_items)
    if comparison is None and case_grade != "pass":
        findings = [
            (outcome, "the candidate produced no comparable result"),
            *[f for f in findings if f[0] != "unexplained"],
        ]
    return {
        "grade": case_grade,
        "order_check": comparison.order.status if comparison is not None and comparison.order is not None else None,
        "expected_row_count": comparison.expected_rows if comparison else None,
        "candidate_row_count": comparison.candidate_rows if comparison else None,
        "row_precision": comparison.row_precision if comparison else None,
        "row_recall": comparison.row_recall if comparison else None,
        "cell_f1": comparison.cell_f1 if comparison else None,
        "clause_scores": dict(scores) if scores is not None else None,
        "diagnosis": ",".join(label for label, _ in findings) or None,
        "diagnosis_detail": tuple((str(label), str(text)) for label, text in findings) if findings else None,
    }


def _spend_fields(group: Sequence[Attempt], generation: CandidateRecord | None) -> dict[str, Any]:
    """The verdict fields of a sample's generation: tokens and cost summed over every candidate, the rest from
    ``generation`` (the selected candidate's; what the query-like verdicts repeat)."""
    return {
        "input_tokens": _sum_over(group, "input_tokens"),
        "output_tokens": _sum_over(group, "output_tokens"),
        "token_source": generation.token_source if generation else None,
        "cost_usd": _sum_over(group, "cost_usd"),
        "cached": bool(generation.cached) if generation else None,
        "cold_start": bool(generation.cold_start) if generation else False,
        "mutation": generation.mutation if generation else None,
    }


def _case_fields(case: Case) -> dict[str, Any]:
    """The verdict fields that come from the case itself (what every verdict of it repeats)."""
    return {
        "case_id": case.id,
        "case_fingerprint": case.fingerprint,
        "domain": case.domain,
        "category": case.category,
        "difficulty": case.difficulty,
        "tags": tuple(case.tags),
        "database": case.database,
    }


def _memoized(resolve: Callable[[str], Path]) -> Callable[[str], Path]:
    """``resolve`` asked once per database name within one judge call (errors are raised every time)."""
    seen: dict[str, Path] = {}

    def resolve_once(name: str) -> Path:
        if name not in seen:
            seen[name] = resolve(name)
        return seen[name]

    return resolve_once


def _whole_results(
    case: Case,
    oracle_results: Sequence[QueryResult],
    samples: dict[int, list[Attempt]],
    resolve_database: Callable[[str], Path] | None,
    limits: SandboxLimits | None,
) -> WholeResults:
    """The case's expected SQL (for the order check) and, when it resolves, its database (for whole results)."""
    if resolve_database is None:
        from nl2sql_pipeline.databases.resolve import require_database

        resolve_database = require_database
    try:
        db_path: Path | None = resolve_database(case.database)
    except Nl2SqlError as exc:
        truncated = any(r.truncated for r in oracle_results) or any(
            a.result is not None and a.result.truncated for group in samples.values() for a in group
        )
        if truncated:
            logger.warning("case %s: results over the row cap cannot be compared whole (%s)", case.id, exc)
        db_path = None
    return WholeResults(db_path, tuple(case.expected_sql), limits, case.reference_instant)


def _sum_over(group: Sequence[Attempt], name: str) -> float | None:
    """Sum a per-call generation field over every candidate of the group that reported it (a candidate whose
    call failed without a reply reported none); unknown (None) only when no candidate reported it."""
    values = [getattr(a.generation, name) for a in group if a.generation is not None]
    known = [float(value) for value in values if value is not None]
    return sum(known) if known else None
