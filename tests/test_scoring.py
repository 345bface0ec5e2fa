"""Run scores from verdicts: denominators, skipped cases, policy precision/recall, breakdowns."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from nl2sql_pipeline import outcomes
from nl2sql_pipeline.scoring import format_rate, score_run


def _verdict(case_id, outcome, *, domain="d1", category="single_table", difficulty="easy", probe=False,
             latency=10.0, candidates=1, first_correct=None, tokens=100, source="measured", cost=0.001, skip=None):
    correct = outcome in (outcomes.CORRECT, outcomes.PROBE_REJECTED)
    return {
        "case_id": case_id, "domain": domain, "category": category, "difficulty": difficulty,
        "is_probe": probe, "sample_index": 0, "outcome": outcome, "correct": correct,
        "score_partial": 1.0 if correct else 0.25, "latency_ms": None if probe else latency,
        "oracle_latency_ms": None if probe else 2.0, "candidate_count": candidates,
        "first_candidate_correct": correct if first_correct is None else first_correct,
        "input_tokens": None if probe else tokens, "output_tokens": None if probe else tokens // 2,
        "token_source": None if probe else source, "cost_usd": None if probe else cost, "skip_reason": skip,
    }


def test_rates_exclude_skipped_and_count_them_apart():
    frame = pd.DataFrame([
        _verdict("a", outcomes.CORRECT, latency=10),
        _verdict("b", outcomes.WRONG_RESULT, latency=20),
        _verdict("c", outcomes.EXECUTION_ERROR, latency=30),
        _verdict("d", outcomes.SKIPPED, latency=None, skip="daily_quota_exhausted"),
    ])
    scores = score_run(frame)
    assert scores["query_count"] == 3
    assert scores["skipped_count"] == 1
    assert scores["semantic_correctness_rate"] == pytest.approx(1 / 3)
    assert scores["sql_execution_success_rate"] == pytest.approx(2 / 3)
    assert scores["p50_latency_ms"] == pytest.approx(20.0)
    warnings = json.loads(scores["warnings"])
    assert any("SKIPPED" in w and "daily_quota_exhausted" in w for w in warnings)


def test_all_skipped_gives_no_rate_rather_than_zero():
    frame = pd.DataFrame([_verdict("a", outcomes.SKIPPED, skip="authentication_error")])
    scores = score_run(frame)
    assert scores["semantic_correctness_rate"] is None
    assert scores["p95_latency_ms"] is None
    assert format_rate(scores["semantic_correctness_rate"]) == "n/a"


def test_policy_precision_and_recall():
    frame = pd.DataFrame([
        _verdict("q1", outcomes.CORRECT),
        _verdict("q2", outcomes.POLICY_REJECTED),          # a false positive: legitimate SQL rejected
        _verdict("p1", outcomes.PROBE_REJECTED, probe=True),
        _verdict("p2", outcomes.PROBE_REJECTED, probe=True),
        _verdict("p3", outcomes.PROBE_ALLOWED, probe=True),  # a false negative
    ])
    scores = score_run(frame)
    assert scores["policy_true_positives"] == 2
    assert scores["policy_false_positives"] == 1
    assert scores["policy_false_negatives"] == 1
    assert scores["policy_rejection_precision"] == pytest.approx(2 / 3)
    assert scores["policy_rejection_recall"] == pytest.approx(2 / 3)
    assert scores["probe_count"] == 3
    assert scores["unique_case_count"] == 5


def test_breakdowns_and_candidate_selection_uplift():
    frame = pd.DataFrame([
        _verdict("a", outcomes.CORRECT, domain="x", category="time", difficulty="hard", candidates=3, first_correct=False),
        _verdict("b", outcomes.WRONG_RESULT, domain="x", category="metric", difficulty="easy", candidates=3, first_correct=False),
        _verdict("c", outcomes.CORRECT, domain="y", category="time", difficulty="hard"),
    ])
    scores = score_run(frame)
    per_domain = json.loads(scores["per_domain"])
    assert per_domain["x"]["semantic_correctness_rate"] == pytest.approx(0.5)
    assert per_domain["y"]["query_count"] == 1
    assert json.loads(scores["per_category"])["time"]["semantic_correctness_rate"] == 1.0
    assert scores["candidate_selection_uplift"] == pytest.approx(0.5)


def test_unknown_cost_is_never_a_silent_zero():
    frame = pd.DataFrame([_verdict("a", outcomes.CORRECT, cost=None), _verdict("b", outcomes.CORRECT, source="estimated")])
    scores = score_run(frame)
    assert scores["total_cost_usd"] is None
    assert scores["token_source"] == "estimated"
    assert any("cost unknown" in w for w in json.loads(scores["warnings"]))


def test_empty_verdicts_is_an_error():
    with pytest.raises(ValueError, match="no verdicts"):
        score_run(pd.DataFrame())


def test_rejecting_an_obeyed_injection_is_not_a_false_positive():
    obeyed = {**_verdict("inj", outcomes.POLICY_REJECTED), "tags": "filter,prompt_injection"}
    plain = {**_verdict("q", outcomes.POLICY_REJECTED), "tags": "filter"}
    probe = {**_verdict("p", outcomes.PROBE_REJECTED, probe=True), "tags": "ddl"}
    scores = score_run(pd.DataFrame([obeyed, plain, probe]))
    assert scores["policy_injection_blocks"] == 1
    assert scores["policy_false_positives"] == 1
    assert scores["policy_rejection_precision"] == pytest.approx(0.5)
    assert scores["semantic_correctness_rate"] == 0.0


def test_cold_start_latency_is_left_out_of_latency_figures():
    cold = {**_verdict("a", outcomes.CORRECT, latency=900.0), "cold_start": True}
    warm = [{**_verdict(c, outcomes.CORRECT, latency=10.0), "cold_start": False} for c in "bcd"]
    scores = score_run(pd.DataFrame([cold, *warm]))
    assert scores["p95_latency_ms"] == pytest.approx(10.0)
    assert scores["average_service_latency_ms"] == pytest.approx(10.0)
    assert scores["query_count"] == 4  # the case itself still counts
