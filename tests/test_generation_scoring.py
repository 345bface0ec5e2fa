"""Generation outcomes through judging and scoring: environment failures are skipped and stay out of
every denominator; the model's own failures count against it."""

from __future__ import annotations

import pytest
from fake_llm_server import FakeLLMServer, Reply, last_user_message

from nl2sql_pipeline import paths
from nl2sql_pipeline.generation import CandidateRecord, generate_candidates, prompt_context_for_cases
from nl2sql_pipeline.generation.failures import ENVIRONMENT_ERROR_CLASSES, ERROR_CLASSES
from nl2sql_pipeline.generation.model_spec import Limits, ModelSpec, Prices, RetryPolicy
from nl2sql_pipeline.gold.registry import load_gold_set
from nl2sql_pipeline.policy.gate import PolicyGate
from nl2sql_pipeline.results.frames import verdicts_to_frame
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import execute_attempts, judge, outcomes, run_oracle
from nl2sql_pipeline.stages.records import Attempt, attempts_from_candidates

# one xdist worker runs the module (its module-scoped fixtures are built once)
pytestmark = [
    pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning"),
    pytest.mark.xdist_group("generation_scoring"),
]


@pytest.mark.parametrize("error_class", ERROR_CLASSES)
def test_each_error_class_maps_to_skipped_or_generation_error(error_class):
    case = load_gold_set("multidomain-v1")[0]
    candidate = CandidateRecord(
        case_id=case.id,
        case_fingerprint=case.fingerprint,
        sample_index=0,
        candidate_index=0,
        generated_sql=None,
        raw_reply=None,
        error_class=error_class,
        error_message=None,
        latency_ms=None,
        input_tokens=None,
        output_tokens=None,
        token_source=None,
        cost_usd=None,
        cached=False,
        mutation=None,
        model_config_hash="h",
        prompt_hash=None,
    )
    verdict = judge([case], [], [Attempt.from_candidate(candidate)])[0]
    if error_class in ENVIRONMENT_ERROR_CLASSES:
        assert (verdict.outcome, verdict.skip_reason) == (outcomes.SKIPPED, error_class)
    else:
        assert (verdict.outcome, verdict.reason) == (outcomes.GENERATION_ERROR, error_class)


@pytest.fixture(scope="module")
def scored_run(tmp_path_factory):
    """Ten real query cases and a probe, generated over HTTP by a scripted model, judged and scored."""
    from nl2sql_pipeline.sample_db import build_database

    home = tmp_path_factory.mktemp("scoring-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NL2SQL_HOME", str(home))
        build_database(paths.database_path("anime_platform"), scale=0.01)
        gold = load_gold_set("multidomain-v1")
        queries = [c for c in gold if not c.is_probe and not c.follow_up_context][:10]
        cases = queries + [next(c for c in gold if c.is_probe)]
        script = {
            **{c.question: Reply.sql(c.canonical_sql) for c in queries[:4]},  # right
            queries[4].question: Reply.sql("SELECT 1 AS x"),  # wrong result
            queries[5].question: Reply.text("Select the rows you need from the right table."),  # no SQL
            queries[6].question: Reply.server_error(500),  # provider error (no retries)
            queries[7].question: Reply.daily_quota(),  # skipped, and stops the run
        }
        with FakeLLMServer(responder=lambda index, body: script[last_user_message(body)]) as server:
            spec = ModelSpec(
                slug="scripted",
                kind="litellm",
                model="openai/scripted",
                api_base=server.api_base,
                prices=Prices(0.5, 1.5),
                retry=RetryPolicy(max_retries=0),
                limits=Limits(max_concurrency=1),
            )
            records = generate_candidates(cases, spec, cache=None, context=prompt_context_for_cases(cases))
            hits = server.hits
        attempts = execute_attempts(cases, attempts_from_candidates(records), PolicyGate(paths.database_path))
        oracle = run_oracle(cases, paths.database_path)
        verdicts = judge(cases, oracle, attempts)
        yield {
            "cases": queries,
            "verdicts": verdicts_to_frame(verdicts).set_index("case_id"),
            "scores": score_run(verdicts),
            "hits": hits,
        }


def test_outcomes_per_case(scored_run):
    verdicts, queries = scored_run["verdicts"], scored_run["cases"]
    outcome = [verdicts.loc[c.id, "outcome"] for c in queries]
    assert (
        outcome
        == [outcomes.CORRECT] * 4 + [outcomes.WRONG_RESULT] + [outcomes.GENERATION_ERROR] * 2 + [outcomes.SKIPPED] * 3
    )
    assert [verdicts.loc[c.id, "reason"] for c in queries[5:7]] == ["no_sql", "provider_error"]
    assert set(verdicts.loc[[c.id for c in queries[7:]], "skip_reason"]) == {"daily_quota_exhausted"}
    assert scored_run["hits"] == 8  # the two cases after the daily-quota reply were never sent


def test_skipped_cases_stay_out_of_every_denominator(scored_run):
    scores = scored_run["scores"]
    assert scores["query_count"] == 7 and scores["skipped_count"] == 3
    assert scores["semantic_correctness_rate"] == pytest.approx(4 / 7)
    assert scores["sql_execution_success_rate"] == pytest.approx(5 / 7)
    assert scores["outcome_counts"][outcomes.SKIPPED] == 3
    warnings = scores["warnings"]
    assert any("3 of 10 query cases were SKIPPED (daily_quota_exhausted: 3)" in w for w in warnings)
    # latency percentiles come from the answered calls only, the cold-start call left out
    verdicts = scored_run["verdicts"]
    answered = verdicts[
        verdicts["outcome"].isin([outcomes.CORRECT, outcomes.WRONG_RESULT, outcomes.GENERATION_ERROR])
        & ~verdicts["cold_start"]
    ]
    assert scores["p50_latency_ms"] == pytest.approx(answered["latency_ms"].dropna().median())
    assert scores["probe_count"] == 1 and scores["policy_rejection_recall"] == 1.0


def test_tokens_and_cost_are_measured_for_answered_cases(scored_run):
    verdicts, queries = scored_run["verdicts"], scored_run["cases"]
    first = verdicts.loc[queries[0].id]
    assert (first["input_tokens"], first["output_tokens"], first["token_source"]) == (111, 22, "measured")
    assert first["cost_usd"] == pytest.approx((111 * 0.5 + 22 * 1.5) / 1e6)
