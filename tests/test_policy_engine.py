"""The SQL policy engine's parts: policy loading and validation, schema reading, rule options."""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import pytest

from nl2sql_pipeline.errors import ConfigError, DatabaseNotFoundError
from nl2sql_pipeline.policy import (
    RULE_NAMES,
    RULES,
    DatabaseSchema,
    DatabaseSchemaError,
    Policy,
    PolicyDecision,
    SQLPolicyEngine,
    load_policy,
    policies_hash,
    policy_from_mapping,
    read_database_schema,
)
from nl2sql_pipeline.policy import engine as engine_module

ROOT = Path(__file__).resolve().parent.parent

TINY_DDL = """
CREATE TABLE studios (studio_id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, country VARCHAR);
CREATE TABLE anime (anime_id INTEGER PRIMARY KEY, title VARCHAR NOT NULL, studio_id INTEGER, season_year INTEGER);
CREATE TABLE users (user_id INTEGER PRIMARY KEY, username VARCHAR NOT NULL, email VARCHAR NOT NULL, country VARCHAR);
CREATE TABLE ratings (rating_id INTEGER PRIMARY KEY, user_id INTEGER, anime_id INTEGER, score INTEGER, review VARCHAR);
CREATE VIEW jp_users AS SELECT user_id, country FROM users WHERE country = 'JP';
"""

BASE_POLICY = {
    "name": "strict",
    "allowed_tables": "*",
    "denied_columns": ["users.email"],
    "max_limit": 100,
    "max_joins": 2,
    "forbid_cartesian": True,
    "denied_functions": [],
    "allowed_table_functions": ["range", "unnest"],
}


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(TINY_DDL)
    return path


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private data folder with a policies/ sub-folder, used for policy names."""
    folder = tmp_path / "data"
    (folder / "policies").mkdir(parents=True)
    monkeypatch.setenv("NL2SQL_DATA", str(folder))
    return folder


def make_policy(**overrides: object) -> Policy:
    return policy_from_mapping({**BASE_POLICY, **overrides}, source="test")


def write_policy(folder: Path, name: str, text: str) -> Path:
    path = folder / "policies" / f"{name}.yml"
    path.write_text(text, encoding="utf-8")
    return path


def engine_for(db_path: Path, **overrides: object) -> SQLPolicyEngine:
    return SQLPolicyEngine(make_policy(**overrides), read_database_schema(db_path))


# ---- the checked-in default policy ---------------------------------------------------------------


def test_default_policy_matches_the_issue() -> None:
    policy = load_policy()
    assert policy.name == "default"
    assert policy.allowed_tables == "*"
    assert policy.denied_columns == ("users.email",)
    assert (policy.max_limit, policy.max_joins, policy.forbid_cartesian) == (1000, 6, True)
    assert policy.denied_functions == ()
    assert set(policy.allowed_table_functions) == {"range", "generate_series", "unnest"}
    assert policy.source is not None and policy.source.name == "default.yml"


# ---- loading and validation ----------------------------------------------------------------------


def test_load_by_name_and_by_path(data_dir: Path) -> None:
    path = write_policy(data_dir, "strict", "\n".join(f"{k}: {v!r}".replace("'", '"') for k, v in BASE_POLICY.items()))
    by_name = load_policy("strict")
    by_path = load_policy(path)
    assert by_name == by_path
    assert by_name.max_limit == 100 and by_name.allowed_table_functions == ("range", "unnest")


def test_unknown_policy_names_the_file_and_the_available_ones(data_dir: Path) -> None:
    write_policy(data_dir, "other", "name: other\n")
    with pytest.raises(ConfigError, match=r"unknown policy 'nope'.*nope\.yml.*available: other"):
        load_policy("nope")


def test_missing_policy_path_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_policy(tmp_path / "absent.yml")


def test_invalid_name_is_rejected(data_dir: Path) -> None:
    with pytest.raises(ConfigError, match="invalid policy name"):
        load_policy("bad name!")


def test_invalid_yaml_reports_file_and_line(data_dir: Path) -> None:
    path = write_policy(data_dir, "broken", "name: broken\nallowed_tables: [users\nmax_limit: 3\n")
    with pytest.raises(ConfigError, match=rf"{path.name}:\d+: invalid YAML"):
        load_policy("broken")


def test_name_must_match_the_file_it_was_loaded_by(data_dir: Path) -> None:
    text = "\n".join(f"{k}: {v!r}".replace("'", '"') for k, v in BASE_POLICY.items())
    write_policy(data_dir, "relaxed", text)  # says name: strict
    with pytest.raises(ConfigError, match="key 'name' is 'strict' but the file is policy 'relaxed'"):
        load_policy("relaxed")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"max_limit": "many"}, "key 'max_limit': must be an integer, got 'many' \\(write an integer >= 1"),
        ({"max_limit": True}, "key 'max_limit': must be an integer, got True"),
        ({"max_limit": 0}, "key 'max_limit': must be >= 1, got 0"),
        ({"max_joins": -1}, "key 'max_joins': must be >= 0, got -1"),
        ({"forbid_cartesian": "yes"}, "key 'forbid_cartesian': must be true or false"),
        ({"allowed_tables": []}, "key 'allowed_tables': must be \"\\*\" or a non-empty list"),
        ({"allowed_tables": "all"}, "key 'allowed_tables': must be"),
        ({"allowed_tables": ["users; drop"]}, "is not a table name"),
        ({"denied_columns": "users.email"}, "key 'denied_columns': must be a list"),
        ({"denied_columns": ["email"]}, "'email' is not of the form table.column"),
        ({"denied_columns": ["main.users.email"]}, "is not of the form table.column"),
        ({"denied_functions": [3]}, "key 'denied_functions': 3 is not a function name"),
        ({"allowed_table_functions": ["read_csv"]}, "'read_csv', which is a denied function \\(matches 'read_\\*'\\)"),
        ({"allowed_table_functions": ["range*"]}, "must be a plain name"),
        ({"name": ""}, "key 'name': must be a non-empty string"),
    ],
)
def test_each_bad_value_names_the_key(override: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        make_policy(**override)
    assert str(info.value).startswith("test: ")


def test_missing_and_unknown_keys_are_listed() -> None:
    incomplete = {k: v for k, v in BASE_POLICY.items() if k not in ("max_limit", "max_joins")}
    with pytest.raises(
        ConfigError, match="key 'max_limit': missing required key(.|\\n)*key 'max_joins': missing required key"
    ):
        policy_from_mapping(incomplete, source="p.yml")
    with pytest.raises(ConfigError, match="key 'max_rows': unknown key"):
        policy_from_mapping({**BASE_POLICY, "max_rows": 5}, source="p.yml")
    with pytest.raises(ConfigError, match="must be a mapping"):
        policy_from_mapping(["name"], source="p.yml")


def test_content_hash_ignores_formatting_but_not_content(data_dir: Path) -> None:
    compact = "\n".join(f"{k}: {v!r}".replace("'", '"') for k, v in BASE_POLICY.items())
    reordered = "# a comment\n" + "\n".join(
        f"{k}: {v!r}".replace("'", '"') for k, v in reversed(list(BASE_POLICY.items()))
    )
    first = load_policy(write_policy(data_dir, "strict", compact))
    second = load_policy(write_policy(data_dir, "strict2", reordered.replace('name: "strict"', "name: strict2")))
    assert first.content_hash != second.content_hash  # the names differ
    same = load_policy(write_policy(data_dir, "strict3", reordered.replace('name: "strict"', "name: strict")))
    assert same.content_hash == first.content_hash
    assert make_policy(max_limit=101).content_hash != first.content_hash


def test_policies_hash_is_order_free_and_tracks_changes(data_dir: Path) -> None:
    text = "\n".join(f"{k}: {v!r}".replace("'", '"') for k, v in BASE_POLICY.items())
    write_policy(data_dir, "strict", text)
    write_policy(data_dir, "loose", text.replace('name: "strict"', "name: loose"))
    combined = policies_hash(["strict", "loose"])
    assert combined == policies_hash(["loose", "strict", "strict"])
    assert combined != policies_hash(["strict"])
    write_policy(
        data_dir, "loose", text.replace('name: "strict"', "name: loose").replace("max_limit: 100", "max_limit: 5")
    )
    assert policies_hash(["strict", "loose"]) != combined


# ---- schema ------------------------------------------------------------------------------------


def test_schema_lists_tables_and_views_in_column_order(db_path: Path) -> None:
    schema = read_database_schema(db_path)
    assert schema.catalog == "tiny"
    assert set(schema.relations) == {"studios", "anime", "users", "ratings", "jp_users"}
    assert schema.columns("USERS") == ("user_id", "username", "email", "country")
    assert schema.views == frozenset({"jp_users"})
    assert schema.columns("jp_users") == ("user_id", "country")


def test_schema_is_cached_until_the_file_changes(db_path: Path) -> None:
    first = read_database_schema(db_path)
    assert read_database_schema(db_path) is first
    with duckdb.connect(str(db_path)) as con:
        con.execute("CREATE TABLE genres (genre_id INTEGER, name VARCHAR)")
    stat = db_path.stat()
    os.utime(db_path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    second = read_database_schema(db_path)
    assert second is not first and second.has_relation("genres")


def test_schema_read_does_not_modify_the_database(db_path: Path) -> None:
    before = db_path.stat().st_mtime_ns
    read_database_schema(db_path)
    assert db_path.stat().st_mtime_ns == before
    assert not db_path.with_suffix(".duckdb.wal").exists()


def test_missing_and_unreadable_databases(tmp_path: Path) -> None:
    with pytest.raises(DatabaseNotFoundError, match="does not exist"):
        read_database_schema(tmp_path / "absent.duckdb")
    garbage = tmp_path / "garbage.duckdb"
    garbage.write_bytes(b"not a duckdb file at all" * 100)
    with pytest.raises(DatabaseSchemaError, match="cannot open database"):
        read_database_schema(garbage)


# ---- engine behaviour under policy options -----------------------------------------------------


def test_allowed_tables_list(db_path: Path) -> None:
    engine = engine_for(db_path, allowed_tables=["anime", "studios"])
    assert engine.check("SELECT title FROM anime").allowed
    decision = engine.check("SELECT score FROM ratings")
    assert (decision.allowed, decision.rule) == (False, "table_scope")
    assert "ratings is not in the policy's allowed_tables" in decision.reason


def test_star_policy_allows_views_and_catalog_qualified_tables(db_path: Path) -> None:
    engine = engine_for(db_path)
    assert engine.check("SELECT country, count(*) FROM jp_users GROUP BY country").allowed
    assert engine.check("SELECT title FROM tiny.main.anime").allowed
    assert engine.check("SELECT title FROM tiny.anime").allowed
    assert engine.check("SELECT title FROM elsewhere.main.anime").rule == "table_scope"


def test_policy_denied_functions_add_to_the_builtin_list(db_path: Path) -> None:
    engine = engine_for(db_path, denied_functions=["md5", "regexp_*"])
    assert engine.check("SELECT md5(title) FROM anime").rule == "denied_function"
    assert engine.check("SELECT regexp_replace(title, 'a', 'b') FROM anime").rule == "denied_function"
    assert engine.check("SELECT getenv('HOME')").rule == "denied_function"  # built-in still denied
    assert engine.check("SELECT upper(title) FROM anime").allowed


def test_table_functions_outside_the_allowlist(db_path: Path) -> None:
    engine = engine_for(db_path, allowed_table_functions=["unnest"])
    decision = engine.check("SELECT * FROM range(3)")
    assert decision.rule == "table_scope" and "range()" in decision.reason
    assert engine.check("SELECT * FROM unnest([1, 2]) AS t(x)").allowed


def test_budgets_can_be_switched_off(db_path: Path) -> None:
    strict = engine_for(db_path, max_joins=0)
    join = "SELECT a.title FROM anime a JOIN studios s ON s.studio_id = a.studio_id"
    assert strict.check(join).rule == "max_joins"
    loose = engine_for(db_path, max_limit=None, max_joins=None, forbid_cartesian=False)
    assert loose.check("SELECT title FROM anime LIMIT 1000000").allowed
    assert loose.check("SELECT a.title, s.name FROM anime a CROSS JOIN studios s").allowed
    assert engine_for(db_path).check("SELECT title FROM anime LIMIT 100").allowed
    assert engine_for(db_path).check("SELECT title FROM anime LIMIT 101").rule == "max_limit"


def test_denied_columns_of_several_tables(db_path: Path) -> None:
    engine = engine_for(db_path, denied_columns=["users.email", "ratings.review"])
    assert engine.check("SELECT r.review FROM ratings r").rule == "column_scope"
    assert engine.check("SELECT avg(score) FROM ratings").allowed
    assert engine.check("SELECT * FROM ratings").rule == "column_scope"


def test_denied_column_of_an_absent_table_is_harmless(db_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="nl2sql_pipeline.policy.engine"):
        engine = engine_for(db_path, denied_columns=["payments.card_number"])
    assert "payments" in caplog.text
    assert engine.check("SELECT * FROM users").allowed


def test_safe_spellings_near_denied_columns_are_allowed(db_path: Path) -> None:
    engine = engine_for(db_path)
    for sql in (
        "SELECT * EXCLUDE (email) FROM users",
        "SELECT * REPLACE ('hidden' AS email) FROM users",
        'SELECT u.* EXCLUDE ("EMAIL") FROM users u',
        "WITH users AS (SELECT 1 AS email) SELECT email FROM users",
        "SELECT country AS email FROM users ORDER BY email",
        "SELECT COLUMNS('user_.*') FROM users",
        "SELECT r.*, u.country FROM ratings r JOIN users u ON u.user_id = r.user_id",
    ):
        decision = engine.check(sql)
        assert decision.allowed, f"{sql}: {decision.reason}"


def test_first_failing_rule_names_the_decision(db_path: Path) -> None:
    engine = engine_for(db_path)
    assert engine.check("SELECT email FROM users LIMIT 5000").rule == "column_scope"
    three_joins = (
        "SELECT a.title FROM anime a JOIN studios s ON s.studio_id = a.studio_id "
        "JOIN ratings r ON r.anime_id = a.anime_id JOIN users u ON u.user_id = r.user_id LIMIT 5000"
    )
    assert engine.check(three_joins).rule == "max_limit"
    assert engine.check(three_joins.replace("LIMIT 5000", "")).rule == "max_joins"
    assert engine.check("SELECT email FROM users; SELECT 1").rule == "single_statement"


def test_rules_are_a_visible_ordered_list() -> None:
    assert [rule.name for rule in RULES] == list(RULE_NAMES)
    assert RULE_NAMES[:3] == ("parse", "single_statement", "read_only")
    assert all(callable(rule.check) and rule.check.__doc__ for rule in RULES)


def test_engine_fails_closed_when_a_rule_crashes(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def exploding(ctx: object) -> str | None:
        raise RuntimeError("boom")

    crashing = tuple(rule._replace(check=exploding) if rule.name == "column_scope" else rule for rule in RULES)
    monkeypatch.setattr(engine_module, "RULES", crashing)
    decision = engine_for(db_path).check("SELECT title FROM anime")
    assert (decision.allowed, decision.rule) == (False, "column_scope")
    assert "boom" in decision.reason


def test_decision_shape_and_non_text_input(db_path: Path) -> None:
    engine = engine_for(db_path)
    allowed = engine.check("SELECT title FROM anime")
    assert allowed == PolicyDecision(allowed=True, rule=None, policy_name="strict", reason=allowed.reason)
    assert allowed.to_dict() == {"allowed": True, "rule": None, "policy_name": "strict", "reason": allowed.reason}
    rejected = engine.check(None)  # type: ignore[arg-type]
    assert (rejected.allowed, rejected.rule) == (False, "parse")


def _watch_contexts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """From now on, each SQL text the engine runs its rules on (one ``QueryContext`` each), with the number of
    texts ``sql.parse``'s cache holds as the rules start."""
    from nl2sql_pipeline.sql import parse as sql_ast

    made: list[tuple[str, int]] = []
    real = engine_module.QueryContext

    def watched(sql: str, *args: Any) -> Any:
        made.append((sql, sql_ast.statements.cache_info().currsize))
        return real(sql, *args)

    monkeypatch.setattr(engine_module, "QueryContext", watched)
    return made


def test_check_remembers_decisions_and_decide_makes_them_afresh(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = engine_for(db_path)
    made = _watch_contexts(monkeypatch)
    sql = "SELECT email FROM users"
    first = engine.check(sql)
    assert engine.check(sql) is first and [text for text, _ in made] == [sql]  # remembered by text
    fresh = engine.decide(sql)
    assert fresh == first and fresh is not first and [text for text, _ in made] == [sql, sql]  # the rules ran again
    assert engine.check(sql) is first  # decide leaves the memo as it was
    assert (engine.decide(None).allowed, engine.decide(None).rule) == (False, "parse")  # type: ignore[arg-type]


def test_policy_benchmark_times_every_check_from_scratch(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``benchmarks/bench_policy.py`` (in ``make bench``) times what a text never seen costs: the rules run and
    the parses are made for every check of a repeated text, neither the engine's memo nor the parse caches
    answer it (they did from issue 7 to issue 21: the benchmark timed dictionary lookups, 0.000 s a pass)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_policy", ROOT / "benchmarks" / "bench_policy.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    engine = engine_for(db_path)
    workload = ["SELECT title FROM anime", "SELECT email FROM users"] * 3
    engine.check(workload[0])  # a remembered decision and a cached parse, which the benchmark must not use
    made = _watch_contexts(monkeypatch)
    cpu, wall, timings, allowed = bench._timed_pass(engine, workload)
    assert made == [(sql, 0) for sql in workload]  # the rules ran on every check, each with no parse cached
    assert (allowed, len(timings)) == (3, len(workload))
    assert cpu > 0 and wall == sum(timings) > 0


def test_for_database_and_plain_schema(db_path: Path) -> None:
    engine = SQLPolicyEngine.for_database(db_path)
    assert engine.policy.name == "default"
    assert engine.check("SELECT email FROM users").rule == "column_scope"
    plain = SQLPolicyEngine(make_policy(), DatabaseSchema.from_columns({"Users": ["User_Id", "Email"]}))
    assert plain.check("SELECT user_id FROM users").allowed
    assert plain.check('SELECT "EMAIL" FROM "USERS"').rule == "column_scope"


def test_engine_is_safe_to_share_between_threads(db_path: Path) -> None:
    engine = engine_for(db_path)
    queries = [
        "SELECT title FROM anime LIMIT 10",
        "SELECT email FROM users",
        "SELECT a.title FROM anime a, studios s",
        "SELECT 1; DROP TABLE users",
        "SELECT country, count(*) FROM users GROUP BY country",
    ] * 20
    serial = [engine.check(sql) for sql in queries]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(engine.check, queries))
    assert threaded == serial
    assert {d.rule for d in serial} == {None, "column_scope", "cartesian_join", "single_statement"}


def test_a_key_given_twice_in_a_policy_is_an_error_not_a_silent_override(tmp_path):
    from nl2sql_pipeline.policy import load_policy

    path = tmp_path / "dup.yml"
    path.write_text(
        "name: dup\nallowed_tables: '*'\ndenied_columns: [users.email]\nmax_limit: 1000\nmax_joins: 6\n"
        "forbid_cartesian: true\ndenied_functions: []\nallowed_table_functions: []\ndenied_columns: []\n"
    )
    with pytest.raises(
        ConfigError, match=r"dup.yml:9: invalid YAML: duplicate key 'denied_columns' \(first defined on line 3\)"
    ):
        load_policy(path)


def test_gates_share_engines_and_decisions_until_the_file_changes(db_path: Path) -> None:
    """Each stage builds its own gate; the engines (and the decisions they remember by SQL text) are
    shared, and a changed database file is a new schema, hence a new engine."""
    from nl2sql_pipeline.cases import case_from_dict
    from nl2sql_pipeline.policy.gate import PolicyGate, clear_shared_engines

    clear_shared_engines()
    case = case_from_dict(
        {
            "id": "c",
            "domain": "d",
            "category": "lookup",
            "question": "q",
            "database": "tiny",
            "expected_sql": "SELECT title FROM anime",
        }
    )
    first, second = PolicyGate(lambda name: db_path), PolicyGate(lambda name: db_path)
    decision = first.check(case, "SELECT title FROM anime")
    assert decision.allowed and first.engine(case) is second.engine(case)
    assert second.check(case, "SELECT title FROM anime") is decision  # remembered, not recomputed
    assert not second.check(case, "DELETE FROM anime").allowed
    with duckdb.connect(str(db_path)) as con:
        con.execute("CREATE TABLE extra (x INTEGER)")
    assert PolicyGate(lambda name: db_path).engine(case) is not first.engine(case)
    clear_shared_engines()
    assert PolicyGate(lambda name: db_path).check(case, "SELECT title FROM anime") is not decision


def test_schema_read_by_the_callers_query_is_the_same_and_cached_once(db_path: Path) -> None:
    from nl2sql_pipeline.policy import schema as schema_module

    own = read_database_schema(db_path)
    schema_module._SCHEMAS.clear()
    asked: list[str] = []

    def query(path: Path, sql: str) -> list[tuple]:
        asked.append(sql)
        with duckdb.connect(str(path), read_only=True) as con:
            return con.execute(sql).fetchall()

    read = read_database_schema(db_path, None, query)
    assert len(asked) == 4 and read == own and list(read.relations) == list(own.relations)
    assert read_database_schema(db_path) is read  # one read per file version, whoever made it


def test_schema_falls_back_to_its_own_read_when_the_callers_query_cannot(db_path: Path) -> None:
    from nl2sql_pipeline.policy import schema as schema_module

    schema_module._SCHEMAS.clear()

    def failing(path: Path, sql: str) -> None:
        raise RuntimeError("no sandbox")

    assert read_database_schema(db_path, None, failing).has_relation("users")
    schema_module._SCHEMAS.clear()
    assert read_database_schema(db_path, None, lambda path, sql: None).has_relation("users")
