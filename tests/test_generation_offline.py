"""The nl2sql-offline litellm provider: gold-echo and sql-mutant through ``litellm.completion``."""

from __future__ import annotations

import random

import litellm
import pytest
import sqlglot

from nl2sql_pipeline.cases import case_from_dict  # first: sets LITELLM_LOCAL_MODEL_COST_MAP before litellm loads
from nl2sql_pipeline.generation.extract import extract_sql
from nl2sql_pipeline.generation.mutations import MUTATION_NAMES
from nl2sql_pipeline.generation.offline_provider import (
    FIELD_MUTATION,
    FIELD_TOKEN_SOURCE,
    OfflineRequest,
    answer,
    offline_request_metadata,
    register_offline_provider,
)

# litellm builds pydantic schemas lazily on its first call; pydantic warns about its TypedDicts.
pytestmark = pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning")

MESSAGES = [{"role": "system", "content": "You write SQL."}, {"role": "user", "content": "How many users?"}]
EXPECTED = (
    "SELECT u.country, COUNT(*) AS users\nFROM users AS u\nWHERE u.signup_date >= DATE '2025-01-01' AND u.age_band = '18-24'\n"
    "GROUP BY u.country\nORDER BY users DESC, u.country\nLIMIT 5"
)


def make_case(case_id: str = "c1", sql: str = EXPECTED):
    return case_from_dict(
        {
            "id": case_id,
            "domain": "d",
            "category": "single_table",
            "question": "q?",
            "database": "anime_platform",
            "expected_sql": sql,
        }
    )


def complete(model: str, case, sample_index: int = 0, candidate_index: int = 0, **params):
    register_offline_provider()
    return litellm.completion(
        model=f"nl2sql-offline/{model}",
        messages=MESSAGES,
        metadata=offline_request_metadata(case, sample_index, candidate_index),
        **params,
    )


def test_registration_is_idempotent():
    register_offline_provider()
    register_offline_provider()
    entries = [e for e in litellm.custom_provider_map if e["provider"] == "nl2sql-offline"]
    assert len(entries) == 1


def test_gold_echo_returns_exactly_the_expected_sql_through_litellm():
    response = complete("gold-echo", make_case(), temperature=0)
    content = response.choices[0].message.content
    assert content == f"```sql\n{EXPECTED}\n```"
    assert extract_sql(content) == EXPECTED
    fields = response.choices[0].message.provider_specific_fields
    assert fields[FIELD_MUTATION] is None and fields[FIELD_TOKEN_SOURCE] == "estimated"
    chars = sum(len(m["content"]) for m in MESSAGES) + 1  # contents joined by one newline
    assert response.usage.prompt_tokens == -(-chars // 4)
    assert response.usage.completion_tokens == -(-len(content) // 4)
    assert response.usage.total_tokens == response.usage.prompt_tokens + response.usage.completion_tokens


def test_gold_echo_answers_with_the_first_alternative():
    case = case_from_dict(
        {
            "id": "c",
            "domain": "d",
            "category": "single_table",
            "question": "q",
            "database": "db",
            "expected_sql": ["SELECT 1 AS a", "SELECT 1 AS b"],
        }
    )
    assert extract_sql(complete("gold-echo", case).choices[0].message.content) == "SELECT 1 AS a"


def test_offline_call_without_the_case_is_a_clear_bad_request():
    register_offline_provider()
    with pytest.raises(litellm.BadRequestError, match="offline models answer from the case"):
        litellm.completion(model="nl2sql-offline/gold-echo", messages=MESSAGES)


def test_unknown_offline_model_is_refused():
    with pytest.raises(litellm.NotFoundError) as info:
        complete("oracle", make_case())
    assert "unknown offline model 'oracle'" in str(info.value)


def mutant(
    case_id: str, sample_index: int = 0, candidate_index: int = 0, rate: float = 0.5, seed: int = 7, sql: str = EXPECTED
):
    return answer(
        "sql-mutant", OfflineRequest(case_id, sql, sample_index, candidate_index), {"mutation_rate": rate, "seed": seed}
    )


def test_sql_mutant_through_litellm_reports_its_mutation():
    mutated = [complete("sql-mutant", make_case(f"c{i}"), mutation_rate=1.0, seed=7) for i in range(5)]
    for response in mutated:
        content = response.choices[0].message.content
        mutation = response.choices[0].message.provider_specific_fields[FIELD_MUTATION]
        assert mutation in MUTATION_NAMES
        assert extract_sql(content) != EXPECTED
    kept = complete("sql-mutant", make_case(), mutation_rate=0.0, seed=7)
    assert extract_sql(kept.choices[0].message.content) == EXPECTED
    assert kept.choices[0].message.provider_specific_fields[FIELD_MUTATION] is None


def test_sql_mutant_is_deterministic_whatever_the_call_order():
    keys = [(f"case-{i}", s, c) for i in range(30) for s in range(2) for c in range(2)]
    forward = {key: mutant(*key) for key in keys}
    shuffled = list(keys)
    random.Random(99).shuffle(shuffled)
    backward = {key: mutant(*key) for key in shuffled}
    assert forward == backward
    # pinned: the same (seed, case, sample, candidate) gives the same answer in every process and release
    assert mutant("case-0", rate=1.0) == mutant("case-0", rate=1.0)
    assert [mutant(f"case-{i}", rate=1.0)[1] for i in range(4)] == [
        "shift_date_bound",
        "drop_where_predicate",
        "alter_limit",
        "shift_date_bound",
    ]


def test_sql_mutant_answers_depend_on_seed_case_and_sample():
    answers = {mutant("case-1", sample_index=s, rate=1.0, seed=seed) for s in range(4) for seed in range(4)}
    assert len(answers) > 3
    assert mutant("case-1", rate=1.0, seed=1) != mutant("case-1", rate=1.0, seed=2) or mutant(
        "case-2", rate=1.0, seed=1
    ) != mutant("case-2", rate=1.0, seed=2)


@pytest.mark.parametrize("rate", [0.0, 0.25, 0.5, 1.0])
def test_sql_mutant_mutates_at_about_the_configured_rate(rate):
    n = 200
    mutated = sum(mutant(f"case-{i}", rate=rate)[1] is not None for i in range(n))
    assert abs(mutated / n - rate) <= 0.08


def test_every_mutant_answer_parses_and_differs_when_mutated():
    original = sqlglot.parse_one(EXPECTED, dialect="duckdb").sql(dialect="duckdb")
    for i in range(100):
        sql, mutation = mutant(f"case-{i}")
        if mutation is None:
            assert sql == EXPECTED
            continue
        assert sql != original
        sqlglot.parse_one(sql, dialect="duckdb")


def test_case_without_expected_sql_cannot_be_sent_offline():
    from nl2sql_pipeline.errors import GenerationError

    probe = case_from_dict(
        {
            "id": "p",
            "domain": "d",
            "category": "policy_rejection",
            "question": "q",
            "database": "db",
            "expected_outcome": "policy_rejection",
            "policy_probe_sql": "DROP TABLE users",
        }
    )
    with pytest.raises(GenerationError, match="no expected SQL"):
        offline_request_metadata(probe, 0, 0)


def test_only_the_first_call_to_a_provider_is_flagged_cold_start(monkeypatch):
    from nl2sql_pipeline.generation import client
    from nl2sql_pipeline.generation.offline_provider import offline_request_metadata
    from nl2sql_pipeline.generation.registry import get_model

    monkeypatch.setattr(client, "_called", set())
    spec = get_model("gold-echo")
    case = case_from_dict(
        {
            "id": "c1",
            "domain": "d",
            "category": "single_table",
            "question": "q",
            "database": "anime_platform",
            "expected_sql": "SELECT 1 AS one",
        }
    )
    messages = [{"role": "user", "content": "q"}]
    flags = [
        client.call_model(spec, messages, metadata=offline_request_metadata(case, sample, 0)).cold_start
        for sample in range(3)
    ]
    assert flags == [True, False, False]
