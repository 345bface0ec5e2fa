"""The generate loop: candidates through litellm, the cache, tokens, cost and per-call errors."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType

import pytest

from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.errors import GenerationError
from nl2sql_pipeline.generation import generate as gen
from nl2sql_pipeline.generation.cache import GenerationCache
from nl2sql_pipeline.generation.offline_provider import OfflineProvider
from nl2sql_pipeline.generation.prompts import DatabasePromptText, PromptContext
from nl2sql_pipeline.generation.registry import ModelSpec, Prices, load_registry

# litellm builds pydantic schemas lazily on its first call; pydantic warns about its TypedDicts.
pytestmark = pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning")

CONTEXT = PromptContext({"anime_platform": DatabasePromptText("CREATE TABLE users (user_id INTEGER);", "sem", "2026-06-30")})
REGISTRY = load_registry()
GOLD_ECHO = REGISTRY["gold-echo"]
MUTANT = REGISTRY["sql-mutant"]


def query_case(i: int, **overrides):
    data = {
        "id": f"case-{i}",
        "domain": "viewer_engagement",
        "category": "single_table",
        "question": f"How many users signed up before day {i}?",
        "database": "anime_platform",
        "expected_sql": f"SELECT COUNT(*) AS n FROM users WHERE user_id > {i} AND signup_date < DATE '2025-01-01'",
    }
    data.update(overrides)
    return case_from_dict(data)


PROBE = case_from_dict(
    {
        "id": "probe-1",
        "domain": "viewer_engagement",
        "category": "policy_rejection",
        "question": "Delete every user.",
        "database": "anime_platform",
        "expected_outcome": "policy_rejection",
        "policy_probe_sql": "DELETE FROM users",
    }
)


@pytest.fixture
def provider_calls(monkeypatch):
    """Counts the calls that reach the offline provider (i.e. every non-cached litellm call)."""
    calls: list[str] = []
    original = OfflineProvider.completion

    def counting(self, model, *args, **kwargs):
        calls.append(model)
        return original(self, model, *args, **kwargs)

    monkeypatch.setattr(OfflineProvider, "completion", counting)
    return calls


def test_gold_echo_candidates_are_the_expected_sql_and_probes_are_skipped(tmp_path, provider_calls):
    cases = [query_case(i) for i in range(3)] + [PROBE]
    records = gen.generate_candidates(cases, GOLD_ECHO, cache=GenerationCache(tmp_path), context=CONTEXT)
    assert [r.case_id for r in records] == ["case-0", "case-1", "case-2"]
    assert len(provider_calls) == 3
    for record, case in zip(records, cases):
        assert record.generated_sql == case.canonical_sql
        assert record.error_class is None and record.error_message is None
        assert record.case_fingerprint == case.fingerprint
        assert record.token_source == "estimated" and record.input_tokens > 0 and record.output_tokens > 0
        assert record.cost_usd == 0.0
        assert record.cached is False and record.mutation is None
        assert record.latency_ms is not None and record.latency_ms >= 0
        assert record.model_config_hash == GOLD_ECHO.config_hash and len(record.prompt_hash) == 16
    assert set(records[0].to_dict()) == set(gen.CandidateRecord.__dataclass_fields__)


def test_second_run_is_served_from_the_cache_without_calls(tmp_path, provider_calls):
    cases = [query_case(i) for i in range(4)]
    cache = GenerationCache(tmp_path)
    first = gen.generate_candidates(cases, MUTANT, cache=cache, context=CONTEXT)
    assert len(provider_calls) == 4
    second = gen.generate_candidates(cases, MUTANT, cache=cache, context=CONTEXT)
    assert len(provider_calls) == 4  # no new call
    assert all(r.cached for r in second)
    for a, b in zip(first, second):
        assert (a.generated_sql, a.mutation, a.latency_ms, a.input_tokens, a.output_tokens, a.cost_usd, a.token_source) == (
            b.generated_sql, b.mutation, b.latency_ms, b.input_tokens, b.output_tokens, b.cost_usd, b.token_source
        )


def test_changed_config_prompt_or_case_misses_the_cache(tmp_path, provider_calls):
    cache = GenerationCache(tmp_path)
    case = query_case(1)
    gen.generate_candidates([case], GOLD_ECHO, cache=cache, context=CONTEXT)
    assert len(provider_calls) == 1

    gen.generate_candidates([case], replace(GOLD_ECHO, description="new words"), cache=cache, context=CONTEXT)
    assert len(provider_calls) == 1  # the description is not part of the config

    changed_params = replace(GOLD_ECHO, params=MappingProxyType({"temperature": 0.2}))
    gen.generate_candidates([case], changed_params, cache=cache, context=CONTEXT)
    assert len(provider_calls) == 2

    other_schema = PromptContext({"anime_platform": DatabasePromptText("CREATE TABLE users (id INT);", "sem", "2026-06-30")})
    gen.generate_candidates([case], GOLD_ECHO, cache=cache, context=other_schema)
    assert len(provider_calls) == 3

    changed_case = query_case(1, expected_sql="SELECT 1 AS n")
    records = gen.generate_candidates([changed_case], GOLD_ECHO, cache=cache, context=CONTEXT)
    assert len(provider_calls) == 4 and records[0].generated_sql == "SELECT 1 AS n"

    again = gen.generate_candidates([case], GOLD_ECHO, cache=cache, context=CONTEXT)
    assert len(provider_calls) == 4 and again[0].cached


def test_no_cache_always_calls(provider_calls):
    gen.generate_candidates([query_case(1)], GOLD_ECHO, cache=None, context=CONTEXT)
    gen.generate_candidates([query_case(1)], GOLD_ECHO, cache=None, context=CONTEXT)
    assert len(provider_calls) == 2


def test_samples_and_candidate_selection_multiply_candidates(tmp_path, provider_calls):
    cases = [query_case(1, candidate_selection=3), query_case(2)]
    records = gen.generate_candidates(cases, MUTANT, cache=GenerationCache(tmp_path), context=CONTEXT, samples=2)
    keys = [(r.case_id, r.sample_index, r.candidate_index) for r in records]
    assert keys == [("case-1", s, c) for s in range(2) for c in range(3)] + [("case-2", s, 0) for s in range(2)]
    assert len(provider_calls) == 8
    with pytest.raises(GenerationError, match="samples must be >= 1"):
        gen.generate_candidates(cases, MUTANT, cache=None, context=CONTEXT, samples=0)


def test_spec_candidates_apply_when_the_case_sets_none(provider_calls):
    spec = replace(GOLD_ECHO, candidates=2)
    records = gen.generate_candidates([query_case(1)], spec, cache=None, context=CONTEXT)
    assert [r.candidate_index for r in records] == [0, 1]


def test_mutant_records_name_their_mutation(tmp_path):
    always = replace(MUTANT, params=MappingProxyType({"temperature": 0, "mutation_rate": 1.0, "seed": 7}))
    records = gen.generate_candidates([query_case(i) for i in range(6)], always, cache=GenerationCache(tmp_path), context=CONTEXT)
    assert all(r.mutation is not None for r in records)
    assert all(r.generated_sql != query_case(i).canonical_sql for i, r in enumerate(records))


def test_missing_context_for_a_database_is_an_error():
    with pytest.raises(GenerationError, match="no prompt context for database 'shop'"):
        gen.generate_candidates([query_case(1, database="shop")], GOLD_ECHO, cache=None, context=CONTEXT)


# ---------------------------------------------------------------- a local OpenAI-compatible server


class FakeOpenAI(BaseHTTPRequestHandler):
    """Answers /v1/chat/completions with a configurable reply; records each request body."""

    reply = "```sql\nSELECT 42 AS answer\n```"
    usage: dict | None = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    status = 200
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        if self.status != 200:
            payload = {"error": {"message": "server exploded", "type": "server_error"}}
        else:
            payload = {
                "id": "cmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": self.reply}, "finish_reason": "stop"}],
            }
            if self.usage is not None:
                payload["usage"] = self.usage
        data = json.dumps(payload).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture
def local_server(monkeypatch):
    handler = type("Handler", (FakeOpenAI,), {"requests": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield handler, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def local_spec(api_base: str, **overrides) -> ModelSpec:
    fields = dict(
        slug="local",
        kind="litellm",
        model="openai/local-coder",
        api_base=api_base,
        params=MappingProxyType({"temperature": 0, "max_tokens": 64}),
        prices=Prices(input_per_mtok=1.0, output_per_mtok=2.0),
    )
    fields.update(overrides)
    return ModelSpec(**fields)


def test_litellm_model_measured_tokens_and_registry_prices(tmp_path, local_server):
    handler, api_base = local_server
    cache = GenerationCache(tmp_path)
    records = gen.generate_candidates([query_case(1), PROBE], local_spec(api_base), cache=cache, context=CONTEXT)
    assert len(records) == 1 and len(handler.requests) == 1
    record = records[0]
    assert record.generated_sql == "SELECT 42 AS answer"
    assert (record.input_tokens, record.output_tokens, record.token_source) == (120, 30, "measured")
    assert record.cost_usd == pytest.approx((120 * 1.0 + 30 * 2.0) / 1e6)
    sent = handler.requests[0]
    assert sent["model"] == "local-coder" and sent["temperature"] == 0 and sent["max_tokens"] == 64
    assert sent["messages"][-1]["content"].strip() == query_case(1).question
    assert "metadata" not in sent  # the case never leaves for a real provider


def test_zero_usage_is_estimated_and_unpriced_model_cost_is_unknown(local_server):
    handler, api_base = local_server
    handler.usage = None
    spec = local_spec(api_base, prices=None)
    record = gen.generate_candidates([query_case(1)], spec, cache=None, context=CONTEXT)[0]
    assert record.token_source == "estimated"
    assert record.output_tokens == -(-len(handler.reply) // 4)
    assert record.input_tokens > 0
    assert record.cost_usd is None  # never a silent zero


def test_reply_without_sql_is_a_generation_error_and_still_cached(tmp_path, local_server):
    handler, api_base = local_server
    handler.reply = "I am not able to answer this question."
    cache = GenerationCache(tmp_path)
    record = gen.generate_candidates([query_case(1)], local_spec(api_base), cache=cache, context=CONTEXT)[0]
    assert record.error_class == "generation_error" and record.generated_sql is None
    assert record.raw_reply == "I am not able to answer this question."
    again = gen.generate_candidates([query_case(1)], local_spec(api_base), cache=cache, context=CONTEXT)[0]
    assert again.cached and again.error_class == "generation_error" and len(handler.requests) == 1


def test_provider_failure_is_recorded_not_raised_and_not_cached(tmp_path, local_server):
    handler, api_base = local_server
    handler.status = 500
    cache = GenerationCache(tmp_path)
    spec = local_spec(api_base, params=MappingProxyType({"max_retries": 0}))
    records = gen.generate_candidates([query_case(1), query_case(2)], spec, cache=cache, context=CONTEXT)
    assert [r.error_class for r in records] == ["provider_error", "provider_error"]
    assert all("server exploded" in r.error_message for r in records)
    assert all(r.generated_sql is None and r.cost_usd is None for r in records)
    assert not list(tmp_path.rglob("*.json"))


def test_model_not_ready_sends_nothing(monkeypatch, local_server):
    handler, api_base = local_server
    monkeypatch.delenv("NL2SQL_TEST_KEY", raising=False)
    spec = local_spec(api_base, api_key_env="NL2SQL_TEST_KEY")
    records = gen.generate_candidates([query_case(1)], spec, cache=None, context=CONTEXT)
    assert records[0].error_class == "not_ready" and "NL2SQL_TEST_KEY" in records[0].error_message
    assert handler.requests == []
    monkeypatch.setenv("NL2SQL_TEST_KEY", "sk-local")
    records = gen.generate_candidates([query_case(1)], spec, cache=None, context=CONTEXT)
    assert records[0].error_class is None and len(handler.requests) == 1


def test_frame_and_summary(tmp_path, local_server):
    handler, api_base = local_server
    empty = gen.candidate_frame([])
    assert list(empty.columns) == list(gen.CandidateRecord.__dataclass_fields__) and len(empty) == 0
    cache = GenerationCache(tmp_path)
    spec = local_spec(api_base)
    gen.generate_candidates([query_case(1)], spec, cache=cache, context=CONTEXT)
    records = gen.generate_candidates([query_case(1), query_case(2)], spec, cache=cache, context=CONTEXT)
    frame = gen.candidate_frame(records)
    assert frame["case_id"].tolist() == ["case-1", "case-2"] and frame["cached"].tolist() == [True, False]
    summary = gen.generation_summary(records)
    assert summary["candidates"] == 2 and summary["cases"] == 2
    assert summary["cached"] == 1 and summary["calls"] == 1 and summary["errors"] == 0
    assert summary["input_tokens"] == 240 and summary["estimated_tokens"] is False
    assert summary["cost_usd"] == pytest.approx(2 * (120 + 60) / 1e6)
    unpriced = gen.generate_candidates([query_case(3)], local_spec(api_base, prices=None), cache=None, context=CONTEXT)
    assert gen.generation_summary(records + unpriced)["cost_usd"] is None
