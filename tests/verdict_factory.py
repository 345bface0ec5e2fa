"""Stage records for tests of the stages, scoring, reports and statistics (a plain module, no fixtures).

``make_candidate(case_id, sql, **overrides)`` is one candidate record with every field set (a cheap, measured,
uncached reply whose raw text is its SQL); ``make_verdict(**overrides)`` is one query verdict with every field
set (a generation error by default);
``fixture_verdicts()`` is a small run of nine verdicts (eight queries, one probe) whose tables the run
report tests check against hand-computed numbers.
"""

from __future__ import annotations

from nl2sql_pipeline.generation.candidate_record import CandidateRecord
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import Verdict


def make_candidate(case_id: str, sql: str | None, **overrides: object) -> CandidateRecord:
    """One candidate of ``case_id`` answering ``sql`` (first sample, first candidate, no error) unless
    ``overrides`` say otherwise; ``case_fingerprint`` defaults to ``fp-<case_id>``."""
    values: dict[str, object] = dict(
        case_id=case_id,
        case_fingerprint=f"fp-{case_id}",
        sample_index=0,
        candidate_index=0,
        generated_sql=sql,
        raw_reply=sql,
        error_class=None,
        error_message=None,
        latency_ms=1.0,
        input_tokens=1,
        output_tokens=1,
        token_source="measured",
        cost_usd=0.0,
        cached=False,
        mutation=None,
        model_config_hash="h",
        prompt_hash=None,
    )
    values.update(overrides)
    return CandidateRecord(**values)  # type: ignore[arg-type]  # the overrides are the record's own fields


def make_verdict(**overrides: object) -> Verdict:
    """One verdict: a generation error of case ``c1`` unless ``overrides`` say otherwise."""
    values = dict(
        case_id="c1",
        case_fingerprint="fp",
        domain="d",
        category="time",
        difficulty=None,
        tags=("filter", "prompt_injection"),
        is_probe=False,
        sample_index=0,
        generated_sql=None,
        outcome=outcomes.GENERATION_ERROR,
        correct=False,
        comparison_rule=None,
        reason="no_sql",
        score_exact=0.0,
        score_partial=0.0,
        policy_rule=None,
        policy_name="default",
        candidate_count=1,
        selected_candidate_index=0,
        first_candidate_correct=False,
        latency_ms=None,
        oracle_latency_ms=2.5,
        execution_ms=None,
        input_tokens=None,
        output_tokens=None,
        token_source=None,
        cost_usd=None,
        cached=None,
        cold_start=False,
        mutation=None,
        skip_reason=None,
    )
    return Verdict(**{**values, **overrides})


def run_verdict(
    case_id: str,
    outcome: str,
    *,
    category: str,
    domain: str,
    difficulty: str | None,
    tags: tuple[str, ...] = (),
    latency: float | None = None,
    cost: float | None = None,
    cached: bool | None = None,
    **extra: object,
) -> Verdict:
    """A measured verdict of ``case_id``: correct exactly when ``outcome`` is; ``extra`` sets any other field."""
    values = dict(
        case_id=case_id,
        outcome=outcome,
        correct=outcome == outcomes.CORRECT,
        category=category,
        domain=domain,
        difficulty=difficulty,
        tags=tuple(tags),
        latency_ms=latency,
        cost_usd=cost,
        cached=cached,
        token_source="measured",
        reason=None,
    )
    return make_verdict(**{**values, **extra})


def fixture_verdicts() -> list[Verdict]:
    """Nine verdicts of one run: queries c1-c8 (each outcome, two domains, three categories) and probe p1."""
    return [
        run_verdict(
            "c1",
            outcomes.CORRECT,
            category="joins",
            domain="sales",
            difficulty="easy",
            tags=("join",),
            latency=10.0,
            cost=0.01,
            cached=False,
        ),
        run_verdict(
            "c2",
            outcomes.WRONG_RESULT,
            category="joins",
            domain="sales",
            difficulty="hard",
            tags=("join", "aggregate"),
            latency=20.0,
            cost=0.02,
            cached=True,
        ),
        run_verdict(
            "c3",
            outcomes.GENERATION_ERROR,
            category="joins",
            domain="hr",
            difficulty="hard",
            reason="no_sql",
            latency=30.0,
            cost=0.01,
            cached=False,
            token_source="estimated",
        ),
        run_verdict(
            "c4",
            outcomes.EXECUTION_ERROR,
            category="filter",
            domain="hr",
            difficulty="easy",
            tags=("aggregate",),
            reason="binder: Referenced column x not found",
            latency=40.0,
            cost=0.0,
            cached=True,
        ),
        run_verdict(
            "c5",
            outcomes.CORRECT,
            category="filter",
            domain="sales",
            difficulty="easy",
            latency=50.0,
            cost=0.01,
            cached=False,
        ),
        run_verdict(
            "c6",
            outcomes.TIMEOUT,
            category="filter",
            domain="sales",
            difficulty="medium",
            reason="timeout: 5 s",
            latency=60.0,
            cold_start=True,
            cost=0.005,
            cached=False,
        ),
        run_verdict(
            "c7",
            outcomes.SKIPPED,
            category="filter",
            domain="hr",
            difficulty="easy",
            skip_reason="daily_quota_exhausted",
        ),
        run_verdict(
            "c8",
            outcomes.GENERATION_ERROR,
            category="filter",
            domain="hr",
            difficulty=None,
            tags=("join",),
            reason="rate_limited",
            cost=0.0,
            cached=False,
        ),
        run_verdict("p1", outcomes.PROBE_REJECTED, category="policy", domain="hr", difficulty=None, is_probe=True),
    ]
