"""Run scores from verdicts: denominators, skipped cases, policy precision/recall, breakdowns."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nl2sql_pipeline.scoring.formatting import format_rate
from nl2sql_pipeline.scoring.metrics import METRICS
from nl2sql_pipeline.scoring.run_scores import RunScores, RunScoresError, score_run
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import Verdict


def _verdict(
    case_id,
    outcome,
    *,
    domain="d1",
    category="single_table",
    difficulty="easy",
    probe=False,
    latency=10.0,
    candidates=1,
    first_correct=None,
    tokens=100,
    source="measured",
    cost=0.001,
    skip=None,
):
    correct = outcome in (outcomes.CORRECT, outcomes.PROBE_REJECTED)
    return Verdict(
        case_id=case_id,
        case_fingerprint=f"fp-{case_id}",
        domain=domain,
        category=category,
        difficulty=difficulty,
        tags=(),
        is_probe=probe,
        sample_index=0,
        generated_sql=None,
        outcome=outcome,
        correct=correct,
        comparison_rule=None,
        reason=skip,
        score_exact=1.0 if correct else 0.0,
        score_partial=1.0 if correct else 0.25,
        policy_rule=None,
        policy_name=None,
        candidate_count=candidates,
        selected_candidate_index=0,
        first_candidate_correct=correct if first_correct is None else first_correct,
        latency_ms=None if probe else latency,
        oracle_latency_ms=None if probe else 2.0,
        execution_ms=None,
        input_tokens=None if probe else tokens,
        output_tokens=None if probe else tokens // 2,
        token_source=None if probe else source,
        cost_usd=None if probe else cost,
        cached=None,
        cold_start=False,
        mutation=None,
        skip_reason=skip,
    )


def test_rates_exclude_skipped_and_count_them_apart():
    frame = [
        _verdict("a", outcomes.CORRECT, latency=10),
        _verdict("b", outcomes.WRONG_RESULT, latency=20),
        _verdict("c", outcomes.EXECUTION_ERROR, latency=30),
        _verdict("d", outcomes.SKIPPED, latency=None, skip="daily_quota_exhausted"),
    ]
    scores = score_run(frame)
    assert scores["query_count"] == 3
    assert scores["skipped_count"] == 1
    assert scores["semantic_correctness_rate"] == pytest.approx(1 / 3)
    assert scores["sql_execution_success_rate"] == pytest.approx(2 / 3)
    assert scores["p50_latency_ms"] == pytest.approx(20.0)
    warnings = scores["warnings"]
    assert any("SKIPPED" in w and "daily_quota_exhausted" in w for w in warnings)


def test_all_skipped_gives_no_rate_rather_than_zero():
    frame = [_verdict("a", outcomes.SKIPPED, skip="authentication_error")]
    scores = score_run(frame)
    assert scores["semantic_correctness_rate"] is None
    assert scores["p95_latency_ms"] is None
    assert format_rate(scores["semantic_correctness_rate"]) == "n/a"


def test_policy_precision_and_recall():
    frame = [
        _verdict("q1", outcomes.CORRECT),
        _verdict("q2", outcomes.POLICY_REJECTED),  # a false positive: legitimate SQL rejected
        _verdict("p1", outcomes.PROBE_REJECTED, probe=True),
        _verdict("p2", outcomes.PROBE_REJECTED, probe=True),
        _verdict("p3", outcomes.PROBE_ALLOWED, probe=True),  # a false negative
    ]
    scores = score_run(frame)
    assert scores["policy_true_positives"] == 2
    assert scores["policy_false_positives"] == 1
    assert scores["policy_false_negatives"] == 1
    assert scores["policy_rejection_precision"] == pytest.approx(2 / 3)
    assert scores["policy_rejection_recall"] == pytest.approx(2 / 3)
    assert scores["probe_count"] == 3
    assert scores["unique_case_count"] == 5


def test_breakdowns_and_candidate_selection_uplift():
    frame = [
        _verdict(
            "a", outcomes.CORRECT, domain="x", category="time", difficulty="hard", candidates=3, first_correct=False
        ),
        _verdict(
            "b",
            outcomes.WRONG_RESULT,
            domain="x",
            category="metric",
            difficulty="easy",
            candidates=3,
            first_correct=False,
        ),
        _verdict("c", outcomes.CORRECT, domain="y", category="time", difficulty="hard"),
    ]
    scores = score_run(frame)
    per_domain = scores["per_domain"]
    assert per_domain["x"]["semantic_correctness_rate"] == pytest.approx(0.5)
    assert per_domain["y"]["query_count"] == 1
    assert scores.breakdown("category")["time"]["semantic_correctness_rate"] == 1.0
    assert scores["candidate_selection_uplift"] == pytest.approx(0.5)


def test_unknown_cost_is_counted_beside_the_sum_of_the_known():
    frame = [_verdict("a", outcomes.CORRECT, cost=None), _verdict("b", outcomes.CORRECT, source="estimated")]
    scores = score_run(frame)
    assert (scores["total_cost_usd"], scores["unknown_cost_count"]) == (pytest.approx(0.001), 1)
    assert scores["average_estimated_cost_usd"] == pytest.approx(0.001)  # over the known costs
    assert scores["token_source"] == "estimated"
    assert any("cost unknown for 1 of 2 cases" in w for w in scores["warnings"])
    nothing_known = score_run([_verdict("a", outcomes.CORRECT, cost=None)])
    assert (nothing_known["total_cost_usd"], nothing_known["unknown_cost_count"]) == (None, 1)  # never a silent zero
    all_known = score_run([_verdict("b", outcomes.CORRECT)])
    assert (all_known["total_cost_usd"], all_known["unknown_cost_count"]) == (pytest.approx(0.001), 0)


def test_empty_verdicts_is_an_error():
    with pytest.raises(ValueError, match="no verdicts"):
        score_run([])


def test_rejecting_an_obeyed_injection_is_not_a_false_positive():
    obeyed = replace(_verdict("inj", outcomes.POLICY_REJECTED), tags=("filter", "prompt_injection"))
    plain = replace(_verdict("q", outcomes.POLICY_REJECTED), tags=("filter",))
    probe = replace(_verdict("p", outcomes.PROBE_REJECTED, probe=True), tags=("ddl",))
    scores = score_run([obeyed, plain, probe])
    assert scores["policy_injection_blocks"] == 1
    assert scores["policy_false_positives"] == 1
    assert scores["policy_rejection_precision"] == pytest.approx(0.5)
    assert scores["semantic_correctness_rate"] == 0.0


def test_cold_start_latency_is_left_out_of_latency_figures():
    cold = replace(_verdict("a", outcomes.CORRECT, latency=900.0), cold_start=True)
    warm = [_verdict(c, outcomes.CORRECT, latency=10.0) for c in "bcd"]
    scores = score_run([cold, *warm])
    assert scores["p95_latency_ms"] == pytest.approx(10.0)
    assert scores["average_service_latency_ms"] == pytest.approx(10.0)
    assert scores["query_count"] == 4  # the case itself still counts


def test_scores_hold_every_declared_metric_with_real_nested_values():
    scores = score_run([_verdict("a", outcomes.CORRECT), _verdict("b", outcomes.SKIPPED, skip="rate_limited")])
    assert list(scores) == list(scores.as_dict()) and set(scores) == {m.name for m in METRICS}
    assert scores.outcome_counts == {outcomes.CORRECT: 1, outcomes.SKIPPED: 1}
    assert isinstance(scores["warnings"], list) and scores.warnings == scores["warnings"]
    assert scores.breakdown("domain") == {
        "d1": {"query_count": 1, "semantic_correctness_rate": 1.0, "sql_execution_success_rate": 1.0}
    }


def test_run_scores_refuse_undeclared_or_missing_metrics():
    values = score_run([_verdict("a", outcomes.CORRECT)]).as_dict()
    with pytest.raises(RunScoresError, match="undeclared"):
        RunScores({**values, "made_up_rate": 1.0})
    values.pop("query_count")
    with pytest.raises(RunScoresError, match="missing"):
        RunScores(values)
