"""Generation bookkeeping done once: the opening per database, its hash, the prompt texts per file."""

from __future__ import annotations

import os

import pytest

from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.generation import prompt_context
from nl2sql_pipeline.generation.conversation import plan_calls
from nl2sql_pipeline.generation.model_spec import ModelSpec
from nl2sql_pipeline.generation.prompts import (
    DatabasePromptText,
    PromptContext,
    PromptHasher,
    assistant_message,
    messages_chars,
    messages_text,
    prompt_hash,
)

SPEC = ModelSpec(slug="gold-echo", kind="offline", model="nl2sql-offline/gold-echo")
OPENING = [
    {"role": "system", "content": 'Schema:\nCREATE TABLE users (user_id INTEGER); -- ünïcode "quoted" \\ back\n'},
    {"role": "user", "content": "Q: few-shot question"},
    {"role": "assistant", "content": "```sql\nSELECT 1\n```"},
]


def make_case(case_id: str, database: str = "anime_platform", **extra):
    return case_from_dict(
        {
            "id": case_id,
            "domain": "viewer_engagement",
            "category": "single_table",
            "question": f"How many users ({case_id})?",
            "database": database,
            "expected_sql": "SELECT COUNT(*) FROM users",
            **extra,
        }
    )


@pytest.mark.parametrize(
    "tail",
    [
        [],
        [{"role": "user", "content": "Q: how many?"}],
        [
            {"role": "user", "content": "Q: first"},
            assistant_message("SELECT 2"),
            {"role": "user", "content": "Q: 東京"},
        ],
    ],
)
def test_prompt_hasher_gives_prompt_hash(tail):
    hasher = PromptHasher(OPENING)
    messages = list(OPENING) + tail
    assert hasher.hash(messages) == prompt_hash(messages)
    assert hasher.hash(messages) == hasher.hash(messages)  # the opening's state is copied, never consumed


def test_prompt_hasher_writes_the_json_that_json_dumps_writes():
    odd = 'tab\t nul\x00 \x1f del\x7f line\u2028sep é € 😀 "q" \\ /'
    for tail in (
        [{"role": "user", "content": odd}],
        [{"role": odd, "content": "x"}],
        [{"role": "user", "content": "Q"}, {"role": "assistant", "content": None}],
    ):  # json.dumps fallback
        messages = list(OPENING) + tail
        assert PromptHasher(OPENING).hash(messages) == prompt_hash(messages)


def test_messages_chars_is_the_length_of_messages_text():
    tails = ([], [{"role": "user", "content": "é"}], [assistant_message(None), {"role": "user", "content": ""}])
    for messages in ([], *(list(OPENING) + tail for tail in tails)):
        assert messages_chars(messages) == len(messages_text(messages))


def test_prompt_hasher_falls_back_for_messages_with_another_opening():
    hasher = PromptHasher(OPENING)
    other = [{"role": "system", "content": "another schema"}, {"role": "user", "content": "Q"}]
    assert hasher.hash(other) == prompt_hash(other)
    shorter = OPENING[:1]
    assert hasher.hash(shorter) == prompt_hash(shorter)
    equal_copies = [dict(m) for m in OPENING] + [{"role": "user", "content": "Q"}]
    assert hasher.hash(equal_copies) == prompt_hash(equal_copies)


def test_plan_calls_renders_one_opening_per_database_and_keys_match_prompt_hash():
    context = PromptContext(
        {
            "anime_platform": DatabasePromptText("CREATE TABLE users (user_id INTEGER);", "sem", "2026-06-30"),
            "shop": DatabasePromptText("CREATE TABLE orders (order_id INTEGER);", "sem2", "2026-06-30"),
        }
    )
    cases = [make_case("a"), make_case("b"), make_case("c", database="shop")]
    requests = plan_calls(cases, SPEC, context, samples=2)
    assert len(requests) == 6
    anime = [r for r in requests if r.case.database == "anime_platform"]
    assert all(r.opening is anime[0].opening for r in anime)
    shop = [r for r in requests if r.case.database == "shop"][0]
    assert shop.opening is not anime[0].opening and "orders" in shop.opening[0]["content"]
    for request in requests:
        messages = list(request.opening) + list(request.user_turns)
        assert request.cache_key(SPEC, messages).prompt_hash == prompt_hash(messages)
        # the first turn's hash is computed while planning, once per case
        assert request.cache_key(SPEC, messages, turn=0).prompt_hash == prompt_hash(messages)
    assert requests[0].first_turn_hash is requests[1].first_turn_hash  # a and its second sample


def test_prompt_texts_are_read_once_per_file_identity(tmp_path, monkeypatch):
    from nl2sql_pipeline import semantic_model
    from nl2sql_pipeline.sample_db import build_database

    prompt_context.clear_prompt_context_memo()
    db = tmp_path / "anime_platform.duckdb"
    build_database(db, scale=0.01)
    loads = []
    real_load = semantic_model.load_semantic_model

    def counting_load(*args, **kwargs):
        loads.append(1)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(semantic_model, "load_semantic_model", counting_load)
    first = prompt_context.prompt_context_for_cases([make_case("a")], resolve_database=lambda name: db)
    again = prompt_context.prompt_context_for_cases([make_case("a")], resolve_database=lambda name: db)
    assert len(loads) == 1
    assert again.databases["anime_platform"] == first.databases["anime_platform"]
    stat = db.stat()
    os.utime(db, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # the database file changed
    prompt_context.prompt_context_for_cases([make_case("a")], resolve_database=lambda name: db)
    assert len(loads) == 2
    given = semantic_model.load_semantic_model()
    prompt_context.build_prompt_context(["anime_platform"], resolve_database=lambda name: db, semantic_model=given)
    assert len(loads) == 3  # the one call above; a model passed in is used as given, never memoized
    prompt_context.clear_prompt_context_memo()


def test_a_new_process_reads_the_stored_prompt_texts_until_a_file_changes(tmp_path, monkeypatch):
    from nl2sql_pipeline import semantic_model
    from nl2sql_pipeline.sample_db import build_database

    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path / "home"))
    prompt_context.clear_prompt_context_memo()
    db = tmp_path / "anime_platform.duckdb"
    build_database(db, scale=0.01)
    loads = []
    real_load = semantic_model.load_semantic_model

    def counting_load(*args, **kwargs):
        loads.append(1)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(semantic_model, "load_semantic_model", counting_load)
    first = prompt_context.prompt_context_for_cases([make_case("a")], resolve_database=lambda name: db)
    assert len(loads) == 1 and list((tmp_path / "home" / "cache" / "prompt_texts").glob("*.json"))
    prompt_context.clear_prompt_context_memo()  # as a new process: only the stored texts remain
    again = prompt_context.prompt_context_for_cases([make_case("a")], resolve_database=lambda name: db)
    assert len(loads) == 1
    assert again.databases["anime_platform"] == first.databases["anime_platform"]
    stat = db.stat()
    os.utime(db, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # the database file changed
    prompt_context.clear_prompt_context_memo()
    prompt_context.prompt_context_for_cases([make_case("a")], resolve_database=lambda name: db)
    assert len(loads) == 2
    prompt_context.clear_prompt_context_memo(stored=True)  # a cold start: nothing stored either
    assert not list((tmp_path / "home" / "cache" / "prompt_texts").glob("*.json"))
    prompt_context.prompt_context_for_cases([make_case("a")], resolve_database=lambda name: db)
    assert len(loads) == 3
    prompt_context.clear_prompt_context_memo()
