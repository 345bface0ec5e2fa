"""The judge registry and one judge call through litellm's real HTTP path against the scripted server."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_llm_server import FakeLLMServer, Reply

from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.failures import PAYMENT_REQUIRED, TIMEOUT
from nl2sql_pipeline.generation.model_spec import Limits, RetryPolicy
from nl2sql_pipeline.judges.client import JUDGE_ERROR, JudgeClient, JudgeRequest, judge_cache, parse_judgement
from nl2sql_pipeline.judges.registry import ORACLE_SLUG, JudgeSpec, load_judges

pytestmark = pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning")

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}, "reason": {"type": "string"}},
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
GOOD = {"verdict": "yes", "reason": "Both queries count the same rows."}


def judge_spec(api_base: str, **kwargs) -> JudgeSpec:
    return JudgeSpec(
        slug="fake-judge", kind="litellm", roles=("answer",), model="openai/fake-judge", api_base=api_base, **kwargs
    )


def request(case_id: str = "c1", text: str = "judge this") -> JudgeRequest:
    return JudgeRequest("answer", case_id, "0123456789abcdef", ({"role": "user", "content": text},), SCHEMA)


def test_the_shipped_registry_loads_with_the_oracle():
    judges = load_judges()
    oracle = judges[ORACLE_SLUG]
    assert oracle.is_offline and set(oracle.roles) == {"answer", "sql_equivalence", "diagnosis"}
    llm = judges["answer-judge"]
    assert llm.model == "openai/gpt-4o-mini" and llm.temperature == 0 and llm.limits.max_concurrency == 2
    assert llm.timeout_s == 60 and llm.retry.max_retries == 3 and set(llm.prompt_hashes) == {"answer", "rubric"}


def test_registry_problems_name_file_line_and_fix(tmp_path: Path):
    path = tmp_path / "judges.yml"
    path.write_text(
        "judges:\n"
        "  bad-judge:\n"
        "    kind: litellm\n"
        "    roles: [answer, vibes]\n"
        "    prompt_version: nope\n"
        "  other:\n"
        "    kind: offline\n"
        "    roles: [answer]\n"
        "    model: openai/x\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_judges(path)
    text = str(info.value)
    assert f"{path}:4: judge 'bad-judge', key 'roles[1]': unknown value 'vibes'" in text
    assert "judge 'bad-judge', key 'model': missing required key" in text
    assert f"{path}:9: judge 'other', key 'model': not used by an offline judge" in text
    assert "judge 'other', key 'kind': the only offline judge is 'judge-oracle'" in text


def test_versions_change_the_config_hash():
    a = judge_spec("http://127.0.0.1:1/v1")
    assert a.config_hash != judge_spec("http://127.0.0.1:1/v1", rubric_version="rubric-v2").config_hash
    assert a.config_hash != judge_spec("http://127.0.0.1:1/v1", prompt_version="v2").config_hash
    assert a.config_hash == judge_spec("http://127.0.0.1:1/v1", description="other words").config_hash


def test_parse_judgement_reads_fences_and_reports_schema_problems():
    assert parse_judgement('```json\n{"verdict": "no", "reason": "r"}\n```', SCHEMA) == (
        {"verdict": "no", "reason": "r"},
        None,
    )
    value, problem = parse_judgement('{"verdict": "maybe", "reason": "r"}', SCHEMA)
    assert value is None and "verdict" in problem and "maybe" in problem
    assert parse_judgement("I think they are equivalent.", SCHEMA) == (None, "the reply is not a JSON object")


def test_valid_judgements_are_structured_accounted_and_cached(isolated_home: Path):
    with FakeLLMServer(default=Reply.json(GOOD)) as server:
        client = JudgeClient(judge_spec(server.api_base, prices=None), cache=judge_cache())
        first = client.judge(request())
        assert first.ok and first.judgement == GOOD and first.error_class is None
        assert (first.calls, first.attempts, first.input_tokens, first.output_tokens) == (1, 1, 111, 22)
        assert first.token_source == "measured" and first.latency_ms > 0
        body = server.requests[0].body
        assert body["temperature"] == 0 and body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["schema"] == SCHEMA
        again = JudgeClient(judge_spec(server.api_base), cache=judge_cache()).judge(request())
        assert again.cached and again.judgement == GOOD and again.calls == 0 and server.hits == 1


def test_a_malformed_judgement_is_retried_once_then_a_judge_error(isolated_home: Path):
    bad = Reply.json({"verdict": "perhaps"})
    with FakeLLMServer(script=[bad, Reply.json(GOOD)], default=bad) as server:
        client = JudgeClient(judge_spec(server.api_base), cache=judge_cache())
        healed = client.judge(request("c1"))
        assert healed.ok and healed.calls == 2 and healed.input_tokens == 222
        retry_messages = server.requests[1].body["messages"]
        assert retry_messages[-1]["role"] == "user" and "not valid" in retry_messages[-1]["content"]
        failed = client.judge(request("c2"))
        assert server.hits == 4  # exactly one retry
        assert not failed.ok and failed.error_class == JUDGE_ERROR and failed.calls == 2
        assert "after one retry" in failed.error_message and failed.raw_reply is not None
        assert client.judge(request("c2")).calls == 2  # a judge error is never cached


def test_429_honours_retry_after(isolated_home: Path):
    with FakeLLMServer(script=[Reply.rate_limited("1")], default=Reply.json(GOOD)) as server:
        client = JudgeClient(judge_spec(server.api_base))
        outcome = client.judge(request())
        assert outcome.ok and outcome.attempts == 2 and outcome.calls == 1
        first, second = server.arrival_times()
        assert second - first >= 1.0


def test_402_stops_the_judging_with_a_reason(isolated_home: Path):
    with FakeLLMServer(script=[Reply.payment_required()], default=Reply.json(GOOD)) as server:
        client = JudgeClient(judge_spec(server.api_base))
        outcomes = client.judge_all([request(f"c{i}") for i in range(3)], workers=1)
        assert server.hits == 1
        assert [o.error_class for o in outcomes] == [PAYMENT_REQUIRED] * 3
        assert all(o.calls == 0 for o in outcomes[1:]) and "not sent" in outcomes[2].error_message
        assert client.stop_reason is not None and "payment_required on case c0" in client.stop_reason


def test_a_slow_judge_is_a_timeout(isolated_home: Path):
    with FakeLLMServer(default=Reply(content='{"verdict": "yes", "reason": "r"}', delay_s=3.0)) as server:
        client = JudgeClient(
            judge_spec(server.api_base, timeout_s=0.5, retry=RetryPolicy(max_retries=0), limits=Limits())
        )
        outcome = client.judge(request())
        assert not outcome.ok and outcome.error_class == TIMEOUT and outcome.attempts == 1


def test_an_unset_key_sends_nothing(isolated_home: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("NL2SQL_TEST_JUDGE_KEY", raising=False)
    with FakeLLMServer(default=Reply.json(GOOD)) as server:
        client = JudgeClient(judge_spec(server.api_base, api_key_env="NL2SQL_TEST_JUDGE_KEY"))
        outcome = client.judge(request())
        assert outcome.error_class == "not_ready" and server.hits == 0
        assert client.judge(request("c2")).error_class == "not_ready" and server.hits == 0
