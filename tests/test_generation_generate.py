"""The generate loop: offline models, the cache, and litellm's real HTTP path against a scripted server
(tokens, cost, every failure class, retries, the run stop, concurrency, follow-up replay, candidates)."""

from __future__ import annotations

import time
from dataclasses import replace
from types import MappingProxyType

import pytest
from fake_llm_server import FakeLLMServer, Reply, answer_by_question, last_user_message

from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.errors import GenerationError
from nl2sql_pipeline.generation import dispatch
from nl2sql_pipeline.generation import generate as gen
from nl2sql_pipeline.generation.cache import GenerationCache
from nl2sql_pipeline.generation.limiter import SharedRateLimiter
from nl2sql_pipeline.generation.model_spec import Limits, ModelSpec, Prices, RetryPolicy
from nl2sql_pipeline.generation.offline_provider import OfflineProvider
from nl2sql_pipeline.generation.prompts import DatabasePromptText, PromptContext
from nl2sql_pipeline.generation.registry import load_registry
from nl2sql_pipeline.results.frames import candidates_to_frame

# litellm builds pydantic schemas lazily on its first call; pydantic warns about its TypedDicts.
pytestmark = pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning")

CONTEXT = PromptContext(
    {"anime_platform": DatabasePromptText("CREATE TABLE users (user_id INTEGER);", "sem", "2026-06-30")}
)
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


def follow_up_case(i: int = 50):
    return query_case(
        i,
        category="follow_up",
        question="And only those in Japan?",
        follow_up_context=[
            {"question": "How many users are there?", "sql": "SELECT COUNT(*) FROM users"},
            {"question": "Only the 18-24 band?", "sql": "SELECT COUNT(*) FROM users WHERE age_band = '18-24'"},
        ],
        expected_sql="SELECT COUNT(*) FROM users WHERE age_band = '18-24' AND country = 'JP'",
    )


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


# ---------------------------------------------------------------- offline models


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
        assert (record.turns, record.calls, record.attempts) == (1, 1, 1)
    assert set(records[0].to_dict()) == set(gen.CandidateRecord.__dataclass_fields__)


def test_second_run_is_served_from_the_cache_without_calls(tmp_path, provider_calls):
    cases = [query_case(i) for i in range(4)]
    cache = GenerationCache(tmp_path)
    first = gen.generate_candidates(cases, MUTANT, cache=cache, context=CONTEXT)
    assert len(provider_calls) == 4
    second = gen.generate_candidates(cases, MUTANT, cache=cache, context=CONTEXT)
    assert len(provider_calls) == 4  # no new call
    assert all(r.cached and r.calls == 0 for r in second)
    for a, b in zip(first, second):
        assert (
            a.generated_sql,
            a.mutation,
            a.latency_ms,
            a.input_tokens,
            a.output_tokens,
            a.cost_usd,
            a.token_source,
        ) == (b.generated_sql, b.mutation, b.latency_ms, b.input_tokens, b.output_tokens, b.cost_usd, b.token_source)


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

    other_schema = PromptContext(
        {"anime_platform": DatabasePromptText("CREATE TABLE users (id INT);", "sem", "2026-06-30")}
    )
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


def test_mutant_records_name_their_mutation(tmp_path):
    always = replace(MUTANT, params=MappingProxyType({"temperature": 0, "mutation_rate": 1.0, "seed": 7}))
    records = gen.generate_candidates(
        [query_case(i) for i in range(6)], always, cache=GenerationCache(tmp_path), context=CONTEXT
    )
    assert all(r.mutation is not None for r in records)
    assert all(r.generated_sql != query_case(i).canonical_sql for i, r in enumerate(records))


def test_gold_echo_answers_a_follow_up_turn_by_turn_and_stays_exact(tmp_path, provider_calls):
    case = follow_up_case()
    cache = GenerationCache(tmp_path)
    record = gen.generate_candidates([case], GOLD_ECHO, cache=cache, context=CONTEXT)[0]
    assert len(provider_calls) == 3  # two earlier turns, then the scored one
    assert record.generated_sql == case.canonical_sql and record.error_class is None
    assert (record.turns, record.calls) == (3, 3)
    again = gen.generate_candidates([case], GOLD_ECHO, cache=cache, context=CONTEXT)[0]
    assert len(provider_calls) == 3 and again.cached and again.generated_sql == case.canonical_sql


def test_missing_context_for_a_database_is_an_error():
    with pytest.raises(GenerationError, match="no prompt context for database 'shop'"):
        gen.generate_candidates([query_case(1, database="shop")], GOLD_ECHO, cache=None, context=CONTEXT)


# ---------------------------------------------------------------- litellm's HTTP path, scripted server


@pytest.fixture
def server():
    with FakeLLMServer() as fake:
        yield fake


def local_spec(api_base: str, **overrides) -> ModelSpec:
    fields = dict(
        slug="local",
        kind="litellm",
        model="openai/local-coder",
        api_base=api_base,
        params=MappingProxyType({"temperature": 0, "max_tokens": 64}),
        prices=Prices(input_per_mtok=1.0, output_per_mtok=2.0),
        retry=RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=2.0),
        timeout_s=120.0,  # generous: a loaded machine must not turn a reply into a timeout (tests of it pass their own)
    )
    fields.update(overrides)
    return ModelSpec(**fields)


def test_measured_tokens_and_registry_prices(tmp_path, server):
    records = gen.generate_candidates(
        [query_case(1), PROBE], local_spec(server.api_base), cache=GenerationCache(tmp_path), context=CONTEXT
    )
    assert len(records) == 1 and server.hits == 1
    record = records[0]
    assert record.generated_sql == "SELECT 1 AS one"
    assert (record.input_tokens, record.output_tokens, record.token_source) == (111, 22, "measured")
    assert record.cost_usd == pytest.approx((111 * 1.0 + 22 * 2.0) / 1e6)
    sent = server.requests[0].body
    assert sent["model"] == "local-coder" and sent["temperature"] == 0 and sent["max_tokens"] == 64
    assert sent["messages"][-1]["content"].strip() == query_case(1).question
    assert "metadata" not in sent  # the case never leaves for a real provider
    assert not any("cost" in key for key in sent)  # prices are litellm's bookkeeping, never sent


def test_missing_usage_is_estimated_and_unpriced_cost_is_unknown_or_from_litellms_map(server):
    server.default = Reply.sql("SELECT 7", usage=False)
    record = gen.generate_candidates(
        [query_case(1)], local_spec(server.api_base, prices=None), cache=None, context=CONTEXT
    )[0]
    assert record.token_source == "estimated"
    assert record.output_tokens == -(-len("```sql\nSELECT 7\n```") // 4) and record.input_tokens > 0
    assert record.cost_usd is None  # an unmapped model: never a silent zero
    mapped = local_spec(server.api_base, prices=None, model="openai/gpt-4o-mini")
    record = gen.generate_candidates([query_case(1)], mapped, cache=None, context=CONTEXT)[0]
    assert record.cost_usd is not None and record.cost_usd > 0  # litellm's bundled price map


def test_negative_usage_from_a_server_is_estimated_never_a_negative_cost(server):
    """Through litellm's real HTTP path: a server reporting -10 / -5 tokens made a cost of $-0.0300 that passed
    a --max-cost-usd 0 budget; such counts are not trusted (the system contract already refuses them)."""
    server.default = Reply.sql("SELECT 7", usage={"prompt_tokens": -10, "completion_tokens": -5, "total_tokens": -15})
    record = gen.generate_candidates([query_case(1)], local_spec(server.api_base), cache=None, context=CONTEXT)[0]
    assert record.generated_sql == "SELECT 7" and record.token_source == "estimated"
    assert record.input_tokens > 0 and record.output_tokens > 0 and record.cost_usd > 0


@pytest.mark.parametrize(
    ("reply", "expected_class"),
    [
        (Reply.unauthorized(), "authentication_error"),
        (Reply.error(403, "Your organization does not have access to this model."), "authentication_error"),
        (Reply.payment_required(), "payment_required"),
        (Reply.low_credit_400(), "payment_required"),
        (Reply.daily_quota(), "daily_quota_exhausted"),
        (Reply.unknown_model(), "unknown_model"),
        (Reply.context_window(), "context_window_exceeded"),
        (Reply.content_filtered(), "content_filtered"),
        (Reply.error(400, "Invalid value for 'temperature'."), "bad_request"),
        (Reply.server_error(500), "provider_error"),
        (Reply.server_error(503), "provider_error"),
        (Reply.rate_limited(retry_after=None), "rate_limited"),
    ],
    ids=lambda value: value if isinstance(value, str) else f"http-{value.status}",
)
def test_each_failure_lands_in_its_class_and_is_never_cached(tmp_path, server, reply, expected_class):
    server.default = reply
    spec = local_spec(server.api_base, retry=RetryPolicy(max_retries=0))
    cache = GenerationCache(tmp_path)
    record = gen.generate_candidates([query_case(1)], spec, cache=cache, context=CONTEXT)[0]
    assert record.error_class == expected_class, record.error_message
    assert record.generated_sql is None and record.cost_usd is None and record.attempts == 1
    assert reply.error_message.split(".")[0] in record.error_message
    assert not list(tmp_path.rglob("*.json"))  # a later run retries it
    server.default = Reply.sql("SELECT 2")
    again = gen.generate_candidates([query_case(1)], spec, cache=cache, context=CONTEXT)[0]
    assert again.error_class is None and again.generated_sql == "SELECT 2" and not again.cached


def test_server_error_then_success_is_retried(server):
    server.enqueue(Reply.server_error(500), Reply.server_error(502))
    record = gen.generate_candidates([query_case(1)], local_spec(server.api_base), cache=None, context=CONTEXT)[0]
    assert record.error_class is None and record.generated_sql == "SELECT 1 AS one"
    assert (record.attempts, record.calls, server.hits) == (3, 1, 3)


@pytest.fixture
def retry_delays(monkeypatch):
    """The waits dispatch decided on before each retry (None: not retried, the wait exceeds the policy)."""
    delays: list[float | None] = []
    real = dispatch.retry_delay

    def recording(*args, **kwargs):
        delays.append(real(*args, **kwargs))
        return delays[-1]

    monkeypatch.setattr(dispatch, "retry_delay", recording)
    return delays


def test_rate_limit_honours_retry_after(server, retry_delays):
    server.enqueue(Reply.rate_limited(retry_after="1"))
    record = gen.generate_candidates([query_case(1)], local_spec(server.api_base), cache=None, context=CONTEXT)[0]
    assert record.error_class is None and record.attempts == 2
    [delay] = retry_delays
    assert 1.0 <= delay <= 1.0 + 0.1 * 1.0 + 0.01  # the Retry-After, plus at most 10 % jitter
    first, second = server.arrival_times()
    assert second - first >= 1.0  # and the retry was sent only after it


def test_retry_after_beyond_the_policy_is_not_waited_for(server, retry_delays):
    server.default = Reply.rate_limited(retry_after="30")
    record = gen.generate_candidates([query_case(1)], local_spec(server.api_base), cache=None, context=CONTEXT)[0]
    assert record.error_class == "rate_limited" and server.hits == 1
    assert retry_delays == [None]  # 30 s > max_delay_s: given up at once instead of waiting


def test_slow_reply_is_a_timeout_and_not_retried(server):
    server.default = Reply.sql("SELECT 1", delay_s=1.5)
    record = gen.generate_candidates(
        [query_case(1)], local_spec(server.api_base, timeout_s=0.3), cache=None, context=CONTEXT
    )[0]
    assert record.error_class == "timeout" and server.hits == 1, record.error_message


def test_server_dying_mid_run_leaves_the_rest_connection_refused(server):
    def respond(index, body):
        server.stop()  # the listening socket closes; this reply still goes out on its own connection
        return Reply.sql("SELECT 1")

    server.responder = respond
    records = gen.generate_candidates(
        [query_case(i) for i in range(3)], local_spec(server.api_base), cache=None, context=CONTEXT
    )
    assert [r.error_class for r in records] == [None, "connection_refused", "connection_refused"]
    assert "Connection refused" in records[1].error_message and records[1].attempts == 1  # not retried
    assert server.hits == 1


@pytest.mark.parametrize(
    ("reply", "sql", "error_class"),
    [
        (Reply.text("Here it is:\n```sql\nSELECT name FROM studios;\n```"), "SELECT name FROM studios", None),
        (
            Reply.text('{"sql": "SELECT COUNT(*) FROM anime", "explanation": "counts"}'),
            "SELECT COUNT(*) FROM anime",
            None,
        ),
        (Reply.text("Select the users who signed up in 2025."), None, "no_sql"),
        (Reply.text("I cannot answer that with this schema."), None, "no_sql"),
        (Reply(content="", finish_reason="content_filter"), None, "content_filtered"),
    ],
    ids=["fenced", "json", "prose", "refusal", "filtered-200"],
)
def test_replies_are_extracted_or_classified_and_cached(tmp_path, server, reply, sql, error_class):
    server.default = reply
    cache = GenerationCache(tmp_path)
    record = gen.generate_candidates([query_case(1)], local_spec(server.api_base), cache=cache, context=CONTEXT)[0]
    assert (record.generated_sql, record.error_class) == (sql, error_class)
    again = gen.generate_candidates([query_case(1)], local_spec(server.api_base), cache=cache, context=CONTEXT)[0]
    assert again.cached and (again.generated_sql, again.error_class) == (sql, error_class) and server.hits == 1


def test_daily_quota_stops_the_run_and_keeps_what_was_generated(tmp_path, server):
    server.enqueue(Reply.sql("SELECT 1"), Reply.sql("SELECT 2"), Reply.daily_quota())
    cases = [query_case(i) for i in range(6)]
    cache = GenerationCache(tmp_path)
    spec = local_spec(server.api_base)
    records = gen.generate_candidates(cases, spec, cache=cache, context=CONTEXT)
    assert server.hits == 3  # nothing sent after the first daily-quota reply
    assert [r.generated_sql for r in records[:2]] == ["SELECT 1", "SELECT 2"]
    assert [r.error_class for r in records[2:]] == ["daily_quota_exhausted"] * 4
    assert records[2].attempts == 1 and "requests per day" in records[2].error_message
    assert all(r.calls == 0 and r.error_message.startswith("not sent: the run stopped") for r in records[3:])
    summary = gen.generation_summary(records)
    assert summary["skipped"] == 4 and summary["calls"] == 3 and summary["errors_daily_quota_exhausted"] == 4
    # the next run (quota back) sends only what was not answered
    server.default = Reply.sql("SELECT 9")
    again = gen.generate_candidates(cases, spec, cache=cache, context=CONTEXT)
    assert server.hits == 3 + 4 and [r.cached for r in again] == [True, True, False, False, False, False]


def test_payment_error_stops_concurrent_workers_too(server):
    server.responder = lambda index, body: (
        Reply.payment_required() if index == 3 else Reply.sql("SELECT 1", delay_s=0.05)
    )
    spec = local_spec(server.api_base, limits=Limits(max_concurrency=4))
    records = gen.generate_candidates([query_case(i) for i in range(40)], spec, cache=None, context=CONTEXT)
    assert [r.case_id for r in records] == [f"case-{i}" for i in range(40)]  # plan order
    assert server.hits <= 3 + 1 + 4  # at most the calls already in flight finish
    unsent = [r for r in records if r.error_class == "payment_required" and r.calls == 0]
    assert len(unsent) >= 40 - server.hits


def wait_until(condition, timeout_s: float = 60.0) -> bool:
    """Poll ``condition`` until it holds or ``timeout_s`` passed; its last value."""
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()


def test_concurrency_runs_calls_in_parallel_and_keeps_plan_order(server):
    def respond(index, body):
        day = last_user_message(body).rstrip("?").rsplit(" ", 1)[-1]
        if index < 4:  # the first four are answered only once all four are in flight: sent in parallel
            wait_until(lambda: server.in_flight >= 4)
        # later requests answer faster, so completion order differs from plan order
        return Reply.sql(f"SELECT {day}", delay_s=0.25 - 0.02 * (index % 8))

    server.responder = respond
    spec = local_spec(server.api_base, limits=Limits(max_concurrency=4))
    cases = [query_case(i + 10) for i in range(8)]
    records = gen.generate_candidates(cases, spec, cache=None, context=CONTEXT)
    assert [r.case_id for r in records] == [c.id for c in cases]
    assert [r.generated_sql for r in records] == [f"SELECT {i + 10}" for i in range(8)]
    assert server.max_in_flight == 4  # four calls at a time, never more


def test_follow_up_replays_the_models_own_answers_and_times_the_last_turn(tmp_path, server):
    case = follow_up_case()
    turn_sql = {
        "How many users are there?": "SELECT 101",
        "Only the 18-24 band?": "SELECT 102",
        "And only those in Japan?": "SELECT 103",
    }
    server.responder = answer_by_question(turn_sql)
    server.enqueue(
        Reply.sql("SELECT 101", usage={"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}),
        Reply.sql("SELECT 102", usage={"prompt_tokens": 20, "completion_tokens": 2, "total_tokens": 22}),
        Reply.sql("SELECT 103", delay_s=0.2, usage={"prompt_tokens": 30, "completion_tokens": 3, "total_tokens": 33}),
    )
    cache = GenerationCache(tmp_path)
    record = gen.generate_candidates([case], local_spec(server.api_base), cache=cache, context=CONTEXT)[0]
    assert server.hits == 3 and record.generated_sql == "SELECT 103"
    final_messages = server.requests[2].body["messages"]
    assert [m["role"] for m in final_messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert final_messages[2]["content"] == "```sql\nSELECT 101\n```"  # the model's answer, not the gold SQL
    assert final_messages[4]["content"] == "```sql\nSELECT 102\n```"
    assert "age_band" not in str(final_messages)
    assert (record.input_tokens, record.output_tokens) == (60, 6)  # every turn is paid for
    assert record.cost_usd == pytest.approx((60 * 1.0 + 6 * 2.0) / 1e6)
    assert record.latency_ms >= 200 and (record.turns, record.calls, record.attempts) == (3, 3, 3)
    again = gen.generate_candidates([case], local_spec(server.api_base), cache=cache, context=CONTEXT)[0]
    assert again.cached and server.hits == 3 and again.generated_sql == "SELECT 103"


def test_a_failed_earlier_turn_fails_the_case_and_names_the_turn(server):
    server.enqueue(Reply.sql("SELECT 101"), Reply.context_window())
    record = gen.generate_candidates([follow_up_case()], local_spec(server.api_base), cache=None, context=CONTEXT)[0]
    assert record.error_class == "context_window_exceeded" and record.error_message.startswith("turn 2 of 3: ")
    assert server.hits == 2


def test_candidates_per_spec_are_separate_calls_with_their_index(tmp_path, server):
    server.responder = lambda index, body: Reply.sql(f"SELECT {index}")
    spec = local_spec(server.api_base, candidates=3)
    cache = GenerationCache(tmp_path)
    records = gen.generate_candidates([query_case(1)], spec, cache=cache, context=CONTEXT, samples=2)
    assert [(r.sample_index, r.candidate_index) for r in records] == [(s, c) for s in range(2) for c in range(3)]
    assert server.hits == 6 and len({r.generated_sql for r in records}) == 6
    again = gen.generate_candidates([query_case(1)], spec, cache=cache, context=CONTEXT, samples=2)
    assert server.hits == 6 and [r.generated_sql for r in again] == [r.generated_sql for r in records]


def test_model_not_ready_sends_nothing(monkeypatch, server):
    monkeypatch.delenv("NL2SQL_TEST_KEY", raising=False)
    spec = local_spec(server.api_base, api_key_env="NL2SQL_TEST_KEY")
    records = gen.generate_candidates([query_case(1)], spec, cache=None, context=CONTEXT)
    assert records[0].error_class == "not_ready" and "NL2SQL_TEST_KEY" in records[0].error_message
    assert server.hits == 0
    monkeypatch.setenv("NL2SQL_TEST_KEY", "sk-local")
    records = gen.generate_candidates([query_case(1)], spec, cache=None, context=CONTEXT)
    assert records[0].error_class is None and server.hits == 1
    assert server.requests[0].headers.get("authorization") == "Bearer sk-local"


def test_rate_limiter_paces_the_calls(tmp_path, server, monkeypatch):
    limiter = SharedRateLimiter(
        "openai@test", requests_per_window=3, tokens_per_window=None, window_s=0.5, margin_s=0.1, state_dir=tmp_path
    )
    admissions: list[float] = []
    real_acquire = limiter.acquire

    def recording_acquire(*args, **kwargs):
        reservation = real_acquire(*args, **kwargs)
        admissions.append(reservation.admitted_at)
        return reservation

    monkeypatch.setattr(limiter, "acquire", recording_acquire)
    spec = local_spec(server.api_base, limits=Limits(max_concurrency=4))
    records = gen.generate_candidates(
        [query_case(i) for i in range(7)], spec, cache=None, context=CONTEXT, limiter=limiter
    )
    assert all(r.error_class is None for r in records) and server.hits == len(admissions) == 7
    # The limiter's decisions on the times it decided by, whatever the machine's speed: a request is admitted
    # only once the one admitted three requests earlier has left the window + margin (7 at 3 per window: two
    # waits). Whether the margin covers the jitter to the server's arrival is benchmarks/bench_generation.py's.
    admissions.sort()
    gaps = [later - earlier for earlier, later in zip(admissions, admissions[3:])]
    assert min(gaps) >= 0.5 + 0.1 - 1e-6, gaps  # 1e-6: rounding of epoch seconds
    arrivals = sorted(server.arrival_times())
    assert all(arrived >= admitted for arrived, admitted in zip(arrivals, admissions))  # none sent before its slot


def test_frame_and_summary(tmp_path, server):
    empty = candidates_to_frame([])
    assert list(empty.columns) == list(gen.CandidateRecord.__dataclass_fields__) and len(empty) == 0
    cache = GenerationCache(tmp_path)
    spec = local_spec(server.api_base)
    gen.generate_candidates([query_case(1)], spec, cache=cache, context=CONTEXT)
    records = gen.generate_candidates([query_case(1), query_case(2)], spec, cache=cache, context=CONTEXT)
    frame = candidates_to_frame(records)
    assert frame["case_id"].tolist() == ["case-1", "case-2"] and frame["cached"].tolist() == [True, False]
    summary = gen.generation_summary(records)
    assert summary["candidates"] == 2 and summary["cases"] == 2
    assert summary["cached"] == 1 and summary["calls"] == 1 and summary["errors"] == 0
    assert summary["input_tokens"] == 222 and summary["estimated_tokens"] is False
    assert summary["cost_usd"] == pytest.approx(2 * (111 + 44) / 1e6)
    unpriced = gen.generate_candidates(
        [query_case(3)], local_spec(server.api_base, prices=None), cache=None, context=CONTEXT
    )
    assert gen.generation_summary(records + unpriced)["cost_usd"] is None
