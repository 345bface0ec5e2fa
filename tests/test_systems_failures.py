"""A scripted HTTP system on loopback: each failure maps onto the same class, stop and warning as the
litellm path (401/403, 402, 429 with Retry-After, 5xx retried, timeouts, refused connections, malformed
JSON, no SQL), and the accounting (latency, tokens, cost, cache, limiter) is a model's."""

from __future__ import annotations

import dataclasses
import json
import time

import pandas as pd
import pytest
from fake_llm_server import FakeLLMServer, Reply
from fake_system_server import FakeSystem, SystemReply

from nl2sql_pipeline.generation import GenerationCache, generate_candidates
from nl2sql_pipeline.generation import failures as f
from nl2sql_pipeline.generation.limiter import SharedRateLimiter
from nl2sql_pipeline.generation.model_spec import Limits, ModelSpec, Prices, RetryPolicy
from nl2sql_pipeline.generation.system_spec import SystemConfig
from nl2sql_pipeline.gold.registry import load_gold_set
from nl2sql_pipeline.policy.gate import PolicyGate
from nl2sql_pipeline.report import console_report
from nl2sql_pipeline.report.console import console_run_report
from nl2sql_pipeline.report.html import run_html
from nl2sql_pipeline.report.markdown import markdown_summary
from nl2sql_pipeline.report.tables import build_run_report
from nl2sql_pipeline.results import frames
from nl2sql_pipeline.results.exports import export_results
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import execute_attempts, judge, outcomes, run_oracle
from nl2sql_pipeline.stages.records import Attempt, attempts_from_candidates
from nl2sql_pipeline.storage import layout

pytestmark = pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning")

FAST_RETRY = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=5)
REPLY_TIMEOUT_S = 120.0
"""Generous: a loaded machine must not turn a reply into a timeout (the timeout test passes its own)."""


@pytest.fixture(scope="module")
def cases():
    gold = load_gold_set("multidomain-v1")
    return [c for c in gold if not c.is_probe and not c.follow_up_context][:3]


def system_spec(url: str, **changes) -> ModelSpec:
    config = {"kind": "http", "url": url, "send_schema": False, **changes.pop("system", {})}
    values = {
        "slug": "scripted-system",
        "kind": "http",
        "model": "system:scripted-system",
        "retry": FAST_RETRY,
        "timeout_s": REPLY_TIMEOUT_S,
        "system": SystemConfig(**config),
        **changes,
    }
    return ModelSpec(**values)


def litellm_spec(api_base: str, **changes) -> ModelSpec:
    values = {
        "slug": "scripted",
        "kind": "litellm",
        "model": "openai/scripted",
        "api_base": api_base,
        "retry": FAST_RETRY,
        "timeout_s": REPLY_TIMEOUT_S,
        **changes,
    }
    return ModelSpec(**values)


def run_system(cases, *replies: SystemReply, default: SystemReply | None = None, **changes):
    with FakeSystem(replies, default=default) as system:
        records = generate_candidates(cases, system_spec(system.url, **changes), cache=None, context=None)
        return records, system.hits


def run_litellm(cases, *replies: Reply, default: Reply | None = None, **changes):
    from nl2sql_pipeline.generation import prompts

    context = prompts.PromptContext(
        {c.database: prompts.DatabasePromptText("t(x int)", "", "2026-06-30") for c in cases}
    )
    with FakeLLMServer(replies, default=default) as server:
        records = generate_candidates(cases, litellm_spec(server.api_base, **changes), cache=None, context=context)
        return records, server.hits


def verdicts_of(cases, records):
    return judge(cases, [], [Attempt.from_candidate(r) for r in records])


def executed_verdicts(cases, records, database):
    """Verdicts with the candidates executed on ``database`` and compared with the oracle's rows."""
    resolve = lambda _name: database  # noqa: E731 - every case of the slice is on the sample database
    attempts = execute_attempts(cases, attempts_from_candidates(records), PolicyGate(resolve))
    return judge(cases, run_oracle(cases, resolve), attempts, resolve_database=resolve)


@pytest.mark.parametrize(
    ("system_reply", "model_reply", "error_class", "hits"),
    [
        (SystemReply.error(401, "Invalid API key"), Reply.unauthorized(), f.AUTHENTICATION_ERROR, 1),
        (
            SystemReply.error(403, "Forbidden: this key has no access"),
            Reply.error(403, "Forbidden: access denied"),
            f.AUTHENTICATION_ERROR,
            1,
        ),
        (SystemReply.error(402, "Payment required: add credits"), Reply.payment_required(), f.PAYMENT_REQUIRED, 1),
        (
            SystemReply.error(429, "Rate limit reached for requests per day (RPD)", {"Retry-After": "432"}),
            Reply.daily_quota(),
            f.DAILY_QUOTA_EXHAUSTED,
            1,
        ),
    ],
    ids=["401", "403", "402", "429-daily"],
)
def test_run_stopping_failures_match_the_litellm_path(cases, system_reply, model_reply, error_class, hits):
    system_records, system_hits = run_system(cases, default=system_reply)
    model_records, model_hits = run_litellm(cases, default=model_reply)
    assert [r.error_class for r in system_records] == [r.error_class for r in model_records] == [error_class] * 3
    assert system_hits == model_hits == hits  # the first failure stopped the run: nothing more was sent
    assert "not sent: the run stopped" in system_records[1].error_message
    system_verdicts, model_verdicts = verdicts_of(cases, system_records), verdicts_of(cases, model_records)
    assert {v.outcome for v in system_verdicts} == {v.outcome for v in model_verdicts} == {outcomes.SKIPPED}
    system_warnings = score_run(system_verdicts).warnings
    assert system_warnings == score_run(model_verdicts).warnings
    assert any(f"3 of 3 query cases were SKIPPED ({error_class}: 3)" in w for w in system_warnings)


def test_429_with_retry_after_is_waited_for_then_retried(cases):
    started = time.monotonic()
    records, hits = run_system(
        cases[:1],
        SystemReply.error(429, "Rate limit reached for requests per min", {"Retry-After": "0.4"}),
        default=SystemReply.sql(cases[0].canonical_sql),
    )
    assert time.monotonic() - started >= 0.4
    assert (records[0].error_class, records[0].attempts, records[0].calls, hits) == (None, 2, 1, 2)
    assert records[0].generated_sql == cases[0].canonical_sql


def test_500_once_is_retried_and_a_lasting_500_is_a_provider_error(cases):
    records, hits = run_system(cases[:1], SystemReply.error(500, "boom"), default=SystemReply.sql("SELECT 1"))
    assert (records[0].error_class, records[0].attempts, hits) == (None, 2, 2)
    records, hits = run_system(cases[:1], default=SystemReply.error(503, "down for maintenance"))
    assert (records[0].error_class, hits) == (f.PROVIDER_ERROR, 3)  # 1 + max_retries
    assert "HTTP 503: down for maintenance" in records[0].error_message
    assert verdicts_of(cases[:1], records)[0].outcome == outcomes.GENERATION_ERROR


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_cut_once_is_a_dropped_connection_retried_and_correct(cases, chunked, sample_database):
    case = cases[0]
    cut = dataclasses.replace(SystemReply.sql(case.canonical_sql), cut_at=12, chunked=chunked)
    records, hits = run_system(cases[:1], cut, default=dataclasses.replace(cut, cut_at=None))
    assert (records[0].error_class, records[0].attempts, records[0].calls, hits) == (None, 2, 1, 2)
    assert records[0].generated_sql == case.canonical_sql
    assert executed_verdicts(cases[:1], records, sample_database)[0].outcome == outcomes.CORRECT


def test_a_body_cut_every_time_is_a_provider_error_naming_the_drop(cases):
    records, hits = run_system(cases[:1], default=dataclasses.replace(SystemReply.sql("SELECT 1"), cut_at=5))
    assert (records[0].error_class, hits) == (f.PROVIDER_ERROR, 3)  # 1 + max_retries, as a dropped connection
    assert "TruncatedReplyError" in records[0].error_message and "ended after 5 of" in records[0].error_message


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_reply_over_the_cap_is_a_provider_error_with_the_reason_never_cut(cases, chunked, monkeypatch):
    from nl2sql_pipeline.generation.systems import http

    monkeypatch.setattr(http, "MAX_RESPONSE_BYTES", 1024 * 1024)
    big = dataclasses.replace(SystemReply.sql("SELECT 1", answer="x" * (1024 * 1024 + 10)), chunked=chunked)
    records, hits = run_system(cases[:1], default=big)
    assert (records[0].error_class, hits) == (f.PROVIDER_ERROR, 1)  # not retried: it would be as large again
    assert "reply over 1 MiB" in records[0].error_message and records[0].generated_sql is None
    verdict = verdicts_of(cases[:1], records)[0]
    assert (verdict.outcome, verdict.reason) == (outcomes.GENERATION_ERROR, f.PROVIDER_ERROR)


def test_a_reply_slower_than_the_timeout_is_a_timeout(cases):
    records, hits = run_system(cases[:1], default=SystemReply(body={"sql": "SELECT 1"}, delay_s=1.5), timeout_s=0.3)
    assert (records[0].error_class, hits) == (f.TIMEOUT, 1)  # timeouts are not retried, as for models
    model_records, _ = run_litellm(cases[:1], default=Reply.sql("SELECT 1", delay_s=1.5), timeout_s=0.3)
    assert model_records[0].error_class == f.TIMEOUT
    assert verdicts_of(cases[:1], records)[0].outcome == outcomes.GENERATION_ERROR


def test_connection_refused_is_skipped_not_counted_wrong(cases):
    system = FakeSystem().start()
    url = system.url
    system.stop()
    spec = system_spec(url)
    records = generate_candidates(cases[:1], spec, cache=None, context=None)
    assert records[0].error_class == f.NOT_READY  # readiness probed the loopback port: nothing was sent
    from nl2sql_pipeline.generation.systems.contract import SystemRequest
    from nl2sql_pipeline.generation.systems.transport import call_system

    with pytest.raises(Exception) as info:
        call_system(spec, SystemRequest("r", "c", "q", "db"))
    assert f.classify_exception(info.value).error_class == f.CONNECTION_REFUSED
    assert verdicts_of(cases[:1], records)[0].outcome == outcomes.SKIPPED


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (SystemReply(body=b"{not json"), "the response is not JSON"),
        (SystemReply(body=["SELECT 1"]), "the response must be a JSON object"),
        (SystemReply.sql(42), '"sql" must be a string or null'),
        (SystemReply.sql("SELECT 1", rows=[[1], [2, 3]]), '"rows" are ragged'),
        (SystemReply.sql("SELECT 1", usage={"input_tokens": -1, "output_tokens": 2}), '"usage.input_tokens"'),
        (SystemReply(body={"contract": "nl2sql-system/2", "sql": "SELECT 1"}), "is not supported"),
    ],
    ids=["not-json", "not-object", "sql-type", "ragged-rows", "bad-usage", "contract-2"],
)
def test_a_malformed_response_is_an_outcome_with_its_reason_never_a_crash(cases, reply, reason):
    records, hits = run_system(cases[:1], default=reply)
    assert (records[0].error_class, hits) == (f.PROVIDER_ERROR, 1)  # not retried: it would break again
    assert reason in records[0].error_message
    verdict = verdicts_of(cases[:1], records)[0]
    assert (verdict.outcome, verdict.reason) == (outcomes.GENERATION_ERROR, f.PROVIDER_ERROR)


def store_run(root, verdicts, gold="g", model="m"):
    """``verdicts`` and their scores stored as the latest run of ``model`` on ``gold`` under ``root``."""
    for asset, frame in (
        (layout.CASE_VERDICTS, frames.verdicts_to_frame(verdicts, gold_set=gold, model=model)),
        (layout.RUN_SCORES, frames.run_scores_to_frame(score_run(verdicts), gold_set=gold, model=model, run_id="r1")),
    ):
        path = layout.partition_path(asset, gold, model, root)
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(path, index=False)


def test_the_error_detail_reaches_case_verdicts_exports_and_reports(cases, tmp_path):
    records, _ = run_system(
        cases[:2],
        SystemReply.sql("SELECT 1", rows=[[1], [2, 3]]),
        default=SystemReply.error(503, "down for maintenance"),
    )
    verdicts = verdicts_of(cases[:2], records)
    assert [(v.outcome, v.reason) for v in verdicts] == [(outcomes.GENERATION_ERROR, f.PROVIDER_ERROR)] * 2
    assert '"rows" are ragged' in verdicts[0].error_message
    assert verdicts[1].error_message == "HTTP 503: down for maintenance"
    store_run(tmp_path / "assets", verdicts)
    read_back = frames.verdicts_from_frame(
        pd.read_parquet(layout.partition_path(layout.CASE_VERDICTS, "g", "m", tmp_path / "assets"))
    )
    assert [v.error_message for v in read_back] == [v.error_message for v in verdicts]
    export_results(tmp_path / "out", "json", tmp_path / "assets")
    exported = json.loads((tmp_path / "out" / "verdicts.json").read_text())
    assert [row["error_message"] for row in exported] == [v.error_message for v in verdicts]
    report = build_run_report(read_back, model="m", gold_set="g")
    console = console_run_report(report)
    assert "failed calls            2 cases" in console and '"rows" are ragged' in console
    assert "provider_error: HTTP 503: down for maintenance" in console
    assert "HTTP 503: down for maintenance" in markdown_summary(report)
    assert "provider_error: HTTP 503: down for maintenance" in run_html([report])


def test_the_answer_count_leaves_out_probes_never_asked():
    from verdict_factory import make_verdict

    verdicts = [
        make_verdict(case_id="q1", outcome=outcomes.CORRECT, correct=True, answer="There are 42."),
        make_verdict(case_id="q2", outcome=outcomes.CORRECT, correct=True),
        make_verdict(case_id="p1", is_probe=True, outcome=outcomes.PROBE_REJECTED, correct=True, reason=None),
    ]
    console = console_run_report(build_run_report(verdicts, model="m", gold_set="g"))
    assert "1 of 2 cases answered in prose" in console


def test_no_sql_is_a_no_sql_generation_error_and_keeps_the_answer(cases):
    records, _ = run_system(cases[:1], default=SystemReply.sql(None, answer="I cannot answer that."))
    assert records[0].error_class == f.NO_SQL and "I cannot answer that." in records[0].error_message
    assert records[0].answer == "I cannot answer that."
    verdict = verdicts_of(cases[:1], records)[0]
    assert (verdict.outcome, verdict.reason, verdict.answer) == (
        outcomes.GENERATION_ERROR,
        f.NO_SQL,
        "I cannot answer that.",
    )


def test_a_failure_the_system_reports_itself_maps_by_its_status(cases):
    records, _ = run_system(
        cases, default=SystemReply(body={"error": {"message": "quota: add credits", "status": 402}})
    )
    assert [r.error_class for r in records] == [f.PAYMENT_REQUIRED] * 3


def test_latency_tokens_and_cost_with_their_sources(cases):
    reply = SystemReply.sql("SELECT 1", usage={"input_tokens": 100, "output_tokens": 20}, timings_ms={"total": 12.5})
    records, _ = run_system(cases[:1], default=reply, prices=Prices(1.0, 2.0))
    record = records[0]
    assert record.latency_ms is not None and record.latency_ms > 0 and record.system_latency_ms == 12.5
    assert (record.input_tokens, record.output_tokens, record.token_source) == (100, 20, "measured")
    assert (record.cost_usd, record.cost_source) == (pytest.approx(140 / 1e6), "prices")
    records, _ = run_system(cases[:1], default=SystemReply.sql("SELECT 1", cost_usd=0.25))
    assert (records[0].cost_usd, records[0].cost_source, records[0].token_source) == (0.25, "reported", None)
    assert records[0].input_tokens is None  # not reported: unknown, never a silent zero


def test_a_partly_unknown_cost_is_summed_and_counted_in_scores_exports_and_baselines(cases, tmp_path):
    from nl2sql_pipeline.runs import RunVersions, list_runs, record_run

    records, _ = run_system(
        cases,
        SystemReply.sql("SELECT 1", cost_usd=0.25),
        SystemReply.sql("SELECT 1"),  # no cost reported, no prices: unknown
        SystemReply.sql("SELECT 1", cost_usd=0.5),
    )
    assert [r.cost_usd for r in records] == [0.25, None, 0.5]
    verdicts = [dataclasses.replace(v, outcome=outcomes.WRONG_RESULT) for v in verdicts_of(cases, records)]
    scores = score_run(verdicts)
    assert (scores["total_cost_usd"], scores["unknown_cost_count"]) == (0.75, 1)
    store_run(tmp_path / "assets", verdicts)
    export_results(tmp_path / "out", "json", tmp_path / "assets")
    for name in ("run_scores", "leaderboard"):
        row = json.loads((tmp_path / "out" / f"{name}.json").read_text())[0]
        assert (row["total_cost_usd"], row["unknown_cost_count"]) == (0.75, 1), name
    db = tmp_path / "baselines.duckdb"
    versions = RunVersions("m1", "g1", "s1", "p1", "c1", "h1")
    record_run(db, run_id="r1", gold_set="g", model="m", versions=versions, scores=scores.as_dict())
    (row,) = list_runs(db, "g", "m")
    assert (row["total_cost_usd"], row["unknown_cost_count"]) == (0.75, 1)
    side_by_side = console_report([{"model": "m", "gold_set": "g", "scores": scores.as_dict()}])
    assert any(line.split() == ["unknown_cost_count", "1"] for line in side_by_side.splitlines())


def test_candidates_that_partly_failed_are_judged_on_the_one_that_ran_and_keep_every_calls_cost(cases, sample_database):
    case = cases[0]

    def by_candidate(_index, body):
        if body["candidate_index"] < 2:  # candidates 0 and 1: the call is lost (a lasting 500)
            return SystemReply.error(500, "lost")
        return SystemReply.sql(case.canonical_sql, usage={"input_tokens": 10, "output_tokens": 2}, cost_usd=0.25)

    with FakeSystem(responder=by_candidate) as system:
        spec = system_spec(system.url, candidates=3)
        records = generate_candidates(cases[:1], spec, cache=None, context=None)
        assert system.hits == 3 + 3 + 1  # two calls retried to the end, one answered
    assert [r.error_class for r in sorted(records, key=lambda r: r.candidate_index)] == [
        f.PROVIDER_ERROR,
        f.PROVIDER_ERROR,
        None,
    ]
    (verdict,) = executed_verdicts(cases[:1], records, sample_database)
    assert (verdict.outcome, verdict.candidate_count, verdict.selected_candidate_index) == (outcomes.CORRECT, 3, 2)
    assert verdict.first_candidate_correct is False  # counted by candidate_selection_uplift
    assert (verdict.input_tokens, verdict.output_tokens, verdict.cost_usd) == (10, 2, 0.25)  # not dropped
    scores = score_run([verdict])
    assert (scores["total_cost_usd"], scores["unknown_cost_count"]) == (0.25, 0)


def test_a_conversation_that_fails_on_a_later_turn_keeps_the_earlier_turns_cost():
    follow_up = next(c for c in load_gold_set("multidomain-v1") if c.follow_up_context)

    def by_turn(_index, body):
        if body["history"]:
            return SystemReply.error(500, "lost")
        return SystemReply.sql("SELECT 1", usage={"input_tokens": 10, "output_tokens": 2}, cost_usd=0.25)

    with FakeSystem(responder=by_turn) as system:
        (record,) = generate_candidates([follow_up], system_spec(system.url), cache=None, context=None)
    assert record.error_class == f.PROVIDER_ERROR and record.turns == len(follow_up.follow_up_context) + 1
    assert (record.input_tokens, record.output_tokens, record.cost_usd) == (10, 2, 0.25)


def test_cache_is_keyed_by_version_and_cache_false_always_calls(cases, tmp_path):
    cache = GenerationCache(tmp_path / "cache")
    with FakeSystem(default=SystemReply.sql("SELECT 1")) as system:
        spec = system_spec(system.url)
        generate_candidates(cases, spec, cache=cache, context=None)
        again = generate_candidates(cases, spec, cache=cache, context=None)
        assert system.hits == 3 and all(r.cached for r in again)
        bumped = dataclasses.replace(spec, version="2")
        assert bumped.config_hash != spec.config_hash
        generate_candidates(cases, bumped, cache=cache, context=None)
        assert system.hits == 6
        uncached = system_spec(system.url, system={"cache": False})
        generate_candidates(cases, uncached, cache=cache, context=None)
        generate_candidates(cases, uncached, cache=cache, context=None)
        assert system.hits == 12


def test_headers_come_from_the_environment(cases, monkeypatch):
    monkeypatch.setenv("SCRIPTED_SYSTEM_TOKEN", "s3cret")
    with FakeSystem(default=SystemReply.sql("SELECT 1")) as system:
        spec = system_spec(system.url, system={"headers": {"Authorization": "Bearer ${SCRIPTED_SYSTEM_TOKEN}"}})
        generate_candidates(cases[:1], spec, cache=None, context=None)
        assert system.headers[0]["authorization"] == "Bearer s3cret"
        monkeypatch.delenv("SCRIPTED_SYSTEM_TOKEN")
        records = generate_candidates(cases[:1], spec, cache=None, context=None)
        assert records[0].error_class == f.NOT_READY and "SCRIPTED_SYSTEM_TOKEN" in records[0].error_message
        assert system.hits == 1


def test_the_shared_limiter_paces_a_system(cases, tmp_path):
    limiter = SharedRateLimiter(
        "system@test", requests_per_window=2, tokens_per_window=None, window_s=0.6, margin_s=0.0, state_dir=tmp_path
    )
    with FakeSystem(default=SystemReply.sql("SELECT 1")) as system:
        started = time.monotonic()
        generate_candidates(cases, system_spec(system.url), cache=None, context=None, limiter=limiter)
        assert system.hits == 3 and time.monotonic() - started >= 0.55  # the third waited for the window


def test_limits_declared_in_the_registry_build_a_shared_limiter_per_system():
    from nl2sql_pipeline.generation.dispatch import limiter_for

    spec = system_spec("http://127.0.0.1:9/nl2sql", limits=Limits(requests_per_minute=5))
    limiter = limiter_for(spec)
    assert isinstance(limiter, SharedRateLimiter) and limiter.key == "system@POST http://127.0.0.1:9/nl2sql"
