"""Prompt templates, messages (follow-up turns), prompt hashes and the prompt context."""

from __future__ import annotations

import re

import pytest

from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.errors import ConfigError, GenerationError
from nl2sql_pipeline.generation.few_shot import FewShotExample, FewShotSet
from nl2sql_pipeline.generation.model_spec import ModelSpec
from nl2sql_pipeline.generation.prompts import (
    DatabasePromptText,
    PromptContext,
    build_messages,
    load_template,
    parse_template,
    prompt_hash,
    turn_questions,
)

SPEC = ModelSpec(slug="gold-echo", kind="offline", model="nl2sql-offline/gold-echo")
TEXTS = {
    "schema_text": "CREATE TABLE users (user_id INTEGER);",
    "semantic_text": "metric: users",
    "reference_date": "2026-06-30",
}


def make_case(**overrides):
    data = {
        "id": "c1",
        "domain": "viewer_engagement",
        "category": "single_table",
        "question": "How many users are there?",
        "database": "anime_platform",
        "expected_sql": "SELECT COUNT(*) FROM users",
    }
    data.update(overrides)
    return case_from_dict(data)


def test_messages_carry_schema_semantics_reference_date_and_question():
    messages = build_messages(make_case(), SPEC, **TEXTS)
    assert [m["role"] for m in messages] == ["system", "user"]
    system = messages[0]["content"]
    assert "CREATE TABLE users (user_id INTEGER);" in system
    assert "metric: users" in system
    assert "2026-06-30" in system
    assert "${" not in system and "$schema_text" not in system
    assert messages[1]["content"].strip() == "How many users are there?"


FOLLOW_UP = dict(
    category="follow_up",
    question="And how many of them are in Japan?",
    follow_up_context=[
        {
            "question": "How many users signed up in 2025?",
            "sql": "SELECT COUNT(*) FROM users WHERE year(signup_date) = 2025",
        },
        {"question": "Only the 18-24 band?", "sql": "SELECT COUNT(*) FROM users WHERE age_band = '18-24';"},
    ],
)


def test_follow_up_cases_replay_earlier_turns_with_the_models_own_replies():
    case = make_case(**FOLLOW_UP)
    replies = ["```sql\nSELECT 1\n```", "I think: SELECT 2"]
    messages = build_messages(case, SPEC, **TEXTS, earlier_replies=replies)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "How many users signed up in 2025?" in messages[1]["content"]
    assert messages[2]["content"] == replies[0] and messages[4]["content"] == replies[1]
    assert "Only the 18-24 band?" in messages[3]["content"]
    assert "Japan" in messages[-1]["content"]
    assert "Japan" not in "".join(m["content"] for m in messages[:-1])
    # the gold SQL of the earlier turns never reaches the model
    assert "year(signup_date)" not in "".join(m["content"] for m in messages)
    assert turn_questions(case) == ["How many users signed up in 2025?", "Only the 18-24 band?", case.question]


def test_follow_up_without_the_models_replies_is_an_error():
    with pytest.raises(GenerationError, match="2 earlier turn\\(s\\) but 0 reply"):
        build_messages(make_case(**FOLLOW_UP), SPEC, **TEXTS)


def test_few_shot_examples_come_after_the_system_message_for_their_database():
    shots = FewShotSet(
        "s",
        (
            FewShotExample("How many studios?", "SELECT COUNT(*) FROM studios"),
            FewShotExample("Other db?", "SELECT 1", database="shop"),
            FewShotExample("How many genres?", "SELECT COUNT(*) FROM genres;", database="anime_platform"),
        ),
        "0" * 16,
    )
    spec = ModelSpec(slug="m", kind="litellm", model="openai/x", few_shot=shots)
    messages = build_messages(make_case(), spec, **TEXTS)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"] == "How many studios?"
    assert messages[2]["content"] == "```sql\nSELECT COUNT(*) FROM studios\n```"
    assert messages[3]["content"] == "How many genres?" and "Other db?" not in str(messages)
    assert messages[-1]["content"] == "How many users are there?"
    assert prompt_hash(messages) != prompt_hash(build_messages(make_case(), SPEC, **TEXTS))


def test_shipped_few_shot_set_runs_on_the_sample_database(tmp_path):
    import duckdb

    from nl2sql_pipeline.generation.few_shot import load_few_shot
    from nl2sql_pipeline.sample_db import build_database

    shots = load_few_shot("anime-basics")
    assert len(shots.examples) >= 2 and len(shots.content_hash) == 16
    db = tmp_path / "anime_platform.duckdb"
    build_database(db, scale=0.01)
    con = duckdb.connect(str(db), read_only=True)
    for example in shots.examples:
        assert example.database == "anime_platform"
        con.execute(example.sql).fetchall()  # raises on a broken example


def test_prompt_hash_is_stable_and_sensitive():
    first = build_messages(make_case(), SPEC, **TEXTS)
    again = build_messages(make_case(), SPEC, **TEXTS)
    assert re.fullmatch(r"[0-9a-f]{16}", prompt_hash(first))
    assert prompt_hash(first) == prompt_hash(again)
    changed_schema = build_messages(make_case(), SPEC, **{**TEXTS, "schema_text": "CREATE TABLE u (x INT);"})
    changed_question = build_messages(make_case(question="How many studios?"), SPEC, **TEXTS)
    changed_date = build_messages(make_case(), SPEC, **{**TEXTS, "reference_date": "2026-07-01"})
    hashes = {prompt_hash(m) for m in (first, changed_schema, changed_question, changed_date)}
    assert len(hashes) == 4
    swapped_roles = [dict(first[0]), {"role": "assistant", "content": first[1]["content"]}]
    assert prompt_hash(swapped_roles) != prompt_hash(first)


def test_shipped_template_parses():
    template = load_template("nl2sql-v1")
    assert set(template.system.get_identifiers()) == {"schema_text", "semantic_text", "reference_date"}
    assert template.user.get_identifiers() == ["question"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("=== user ===\n${question}\n", "expected exactly one '=== system ==='"),
        ("=== system ===\nhi\n", "expected exactly one '=== system ==='"),
        ("=== system ===\n${schema}\n=== user ===\n${question}\n", "unknown placeholder(s) ['schema']"),
        ("=== system ===\nhi\n=== user ===\nno question here\n", "must contain ${question}"),
        ("stray text\n=== system ===\nhi\n=== user ===\n${question}\n", "text before the first"),
        ("=== system ===\ncosts $5\n=== user ===\n${question}\n", "write $$ for a literal dollar sign"),
    ],
)
def test_bad_templates_are_config_errors(text, message):
    with pytest.raises(ConfigError) as info:
        parse_template("t", text, source="data/prompts/t.txt")
    assert message in str(info.value) and "data/prompts/t.txt" in str(info.value)


def test_comment_preamble_is_allowed_and_templates_load_from_a_folder(tmp_path):
    (tmp_path / "mine.txt").write_text(
        "# a comment\n=== system ===\nS ${reference_date}\n=== user ===\nQ: ${question}\n"
    )
    template = load_template("mine", tmp_path)
    messages = build_messages(make_case(), SPEC, **TEXTS, template=template)
    assert messages == [
        {"role": "system", "content": "S 2026-06-30"},
        {"role": "user", "content": "Q: How many users are there?"},
    ]
    with pytest.raises(ConfigError, match="prompt template 'other' not found"):
        load_template("other", tmp_path)


def test_prompt_context_names_a_missing_database():
    context = PromptContext({"anime_platform": DatabasePromptText("ddl", "sem", "2026-06-30")})
    assert context.for_case(make_case()).schema_text == "ddl"
    with pytest.raises(GenerationError, match=r"no prompt context for database 'shop'.*anime_platform"):
        context.for_case(make_case(database="shop"))


def test_prompt_context_from_the_semantic_model_and_a_built_database(tmp_path):
    from nl2sql_pipeline.generation.prompt_context import build_prompt_context, prompt_context_for_cases
    from nl2sql_pipeline.sample_db import build_database

    db = tmp_path / "anime_platform.duckdb"
    build_database(db, scale=0.01)
    context = prompt_context_for_cases([make_case()], resolve_database=lambda name: db)
    texts = context.for_case(make_case())
    assert "CREATE TABLE users" in texts.schema_text and "CREATE TABLE watch_sessions" in texts.schema_text
    assert texts.reference_date == "2026-06-30"
    assert texts.semantic_text.strip()
    # a database the semantic model does not describe is introspected (not refused)
    shop = build_prompt_context(["shop"], resolve_database=lambda name: db).databases["shop"]
    assert "CREATE TABLE main.users (" in shop.schema_text and "no semantic model" in shop.semantic_text


def test_a_registry_entry_whose_semantic_model_describes_another_database_says_how_to_fix_it(tmp_path):
    from nl2sql_pipeline.databases.registry import DatabaseEntry
    from nl2sql_pipeline.databases.resolve import CaseDatabases
    from nl2sql_pipeline.generation.prompt_context import build_prompt_context
    from nl2sql_pipeline.semantic_model import default_semantic_model_path

    db = tmp_path / "shop.duckdb"
    import duckdb

    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    entry = DatabaseEntry("shop", db, semantic_model=default_semantic_model_path(), source="databases.yml:3")
    with pytest.raises(
        ConfigError, match=r"describes database 'anime_platform', not 'shop'.*databases.yml:3.*introspection"
    ):
        build_prompt_context(["shop"], resolve_database=CaseDatabases({"shop": entry}))
