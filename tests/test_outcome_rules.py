"""The outcome of an attempt: each named rule decides its own case (and only it), in the declared order."""

from __future__ import annotations

from dataclasses import replace

import pytest
from verdict_factory import make_candidate

from nl2sql_pipeline.compare import CompareConfig
from nl2sql_pipeline.execution import QueryResult
from nl2sql_pipeline.stages import outcome_rules as r
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import SOURCE_PROBE, Attempt

ORACLE = QueryResult(ok=True, columns=["n"], column_types=["BIGINT"], rows=[(3,)])
CONFIG = CompareConfig()


def _attempt(sql: str | None = "SELECT 3", error_class: str | None = None, **fields) -> Attempt:
    generation = make_candidate("c", sql, case_fingerprint="fp", error_class=error_class)
    return replace(Attempt.from_candidate(generation), **fields)


def _ran(result: QueryResult, **fields) -> Attempt:
    return _attempt(policy_allowed=True, executed=True, result=result, **fields)


def _given(attempt: Attempt, oracle=(ORACLE,)) -> r.OutcomeInput:
    return r.OutcomeInput(attempt, oracle, CONFIG)


def test_the_rules_are_a_visible_ordered_list_ending_with_the_comparison():
    assert [rule.__name__ for rule in r.OUTCOME_RULES] == [
        "generation_skipped",
        "generation_failed",
        "no_sql",
        "policy_rejected",
        "oracle_failed",
        "not_executed",
        "execution_failed",
        "compare_with_oracle",
    ]
    assert [rule.__name__ for rule in r.PROBE_RULES] == ["probe_engine_failed", "probe_allowed", "probe_rejected"]


def test_generation_skipped_decides_an_environment_failure():
    decision = r.generation_skipped(_given(_attempt(None, "daily_quota_exhausted")))
    assert decision == r.Decision(outcomes.SKIPPED, None, "daily_quota_exhausted")
    assert r.generation_skipped(_given(_attempt(None, "no_sql"))) is None


def test_generation_failed_decides_the_models_own_failure():
    assert r.generation_failed(_given(_attempt(None, "no_sql"))) == r.Decision(
        outcomes.GENERATION_ERROR, None, "no_sql"
    )
    assert r.generation_failed(_given(_attempt())) is None


def test_no_sql_decides_a_candidate_without_sql():
    assert r.no_sql(_given(_attempt(None))) == r.Decision(outcomes.GENERATION_ERROR, None, "no SQL generated")
    assert r.no_sql(_given(_attempt())) is None


def test_policy_rejected_decides_refused_sql():
    refused = _attempt(policy_allowed=False, policy_rule="read_only", policy_reason="writes")
    assert r.policy_rejected(_given(refused)) == r.Decision(outcomes.POLICY_REJECTED, None, "read_only: writes")
    assert r.policy_rejected(_given(_ran(ORACLE))) is None


def test_oracle_failed_decides_a_broken_or_missing_expected_result():
    broken = QueryResult.failure("catalog", "no such table")
    decision = r.oracle_failed(_given(_ran(ORACLE), oracle=(ORACLE, broken)))
    assert decision.outcome == outcomes.ENVIRONMENT_ERROR and "catalog: no such table" in decision.reason
    assert r.oracle_failed(_given(_ran(ORACLE), oracle=())).reason == "oracle failed (no oracle result)"
    assert r.oracle_failed(_given(_ran(ORACLE))) is None


def test_not_executed_decides_sql_that_never_ran():
    assert r.not_executed(_given(_attempt())).outcome == outcomes.ENVIRONMENT_ERROR
    assert r.not_executed(_given(_ran(ORACLE))) is None


@pytest.mark.parametrize(
    ("error_class", "outcome"), [("timeout", outcomes.TIMEOUT), ("catalog", outcomes.EXECUTION_ERROR)]
)
def test_execution_failed_decides_timeouts_and_errors(error_class, outcome):
    decision = r.execution_failed(_given(_ran(QueryResult.failure(error_class, "boom"))))
    assert decision == r.Decision(outcome, None, f"{error_class}: boom")
    assert r.execution_failed(_given(_ran(ORACLE))) is None


def test_compare_with_oracle_decides_correct_or_wrong_against_any_alternative():
    right = r.compare_with_oracle(_given(_ran(ORACLE)))
    assert right.outcome == outcomes.CORRECT and right.comparison.match and right.comparison.rule
    other = QueryResult(ok=True, columns=["n"], column_types=["BIGINT"], rows=[(4,)])
    wrong = r.compare_with_oracle(_given(_ran(other)))
    assert wrong.outcome == outcomes.WRONG_RESULT and not wrong.comparison.match
    assert r.compare_with_oracle(_given(_ran(other), oracle=(ORACLE, other))).outcome == outcomes.CORRECT


def test_the_order_decides_when_several_rules_would_apply():
    # a skipped generation with a failed oracle: the environment's fault, reported as the skip it is
    both = _attempt(None, "daily_quota_exhausted")
    assert r.decide(_given(both, oracle=())).outcome == outcomes.SKIPPED
    # refused SQL against a broken oracle: the policy answer comes first
    refused = _attempt(policy_allowed=False, policy_rule="read_only", policy_reason="writes")
    assert r.decide(_given(refused, oracle=(QueryResult.failure("catalog", "x"),))).outcome == outcomes.POLICY_REJECTED
    # a timed-out candidate against a broken oracle: not the model's miss
    timed_out = _ran(QueryResult.failure("timeout", "slow"))
    assert (
        r.decide(_given(timed_out, oracle=(QueryResult.failure("catalog", "x"),))).outcome == outcomes.ENVIRONMENT_ERROR
    )


def test_probe_rules():
    probe = Attempt(
        case_id="p", case_fingerprint="fp", source=SOURCE_PROBE, sample_index=0, candidate_index=0, sql="DROP TABLE t"
    )
    assert r.decide(_given(probe), r.PROBE_RULES).outcome == outcomes.PROBE_ERROR
    assert r.decide(_given(replace(probe, policy_allowed=True)), r.PROBE_RULES).outcome == outcomes.PROBE_ALLOWED
    assert r.decide(_given(replace(probe, policy_allowed=False)), r.PROBE_RULES).outcome == outcomes.PROBE_REJECTED


def test_a_rule_list_that_never_decides_is_an_error():
    with pytest.raises(r.UndecidedOutcomeError, match="no outcome rule decided"):
        r.decide(_given(_attempt()), (r.no_sql,))
