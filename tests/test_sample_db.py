"""The anime_platform builder: determinism, scaling, realism invariants, atomic writes and the db CLI."""

from __future__ import annotations

import datetime
import json
import math
from pathlib import Path

import duckdb
import pytest

from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_OK
from nl2sql_cli.main import main
from nl2sql_pipeline.errors import DatabaseNotFoundError
from nl2sql_pipeline.sample_db import (
    BASE_FACT_ROWS,
    BUILDER_VERSION,
    BUILDERS,
    DATABASE_NAME,
    PROMPT_INJECTIONS,
    REFERENCE_DATE,
    TABLE_ORDER,
    build_database,
    content_hash,
    ensure_database,
    generate_tables,
    manifest_path,
    read_manifest,
)
from nl2sql_pipeline.sample_db import build as build_module

# one xdist worker runs the module (its module-scoped fixtures are built once)
pytestmark = pytest.mark.xdist_group("sample_db")

SMALL = 0.05
TINY = 0.02


@pytest.fixture(scope="module")
def small_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One anime_platform database at scale 0.05, shared by the read-only tests of this module."""
    path = tmp_path_factory.mktemp("small") / "anime_platform.duckdb"
    build_database(path, seed=7, scale=SMALL)
    return path


@pytest.fixture()
def con(small_db: Path) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect(str(small_db), read_only=True)
    yield connection
    connection.close()


def scalar(con: duckdb.DuckDBPyConnection, sql: str):
    return con.execute(sql).fetchone()[0]


# ---------------------------------------------------------------------------------------- determinism


def test_same_seed_and_scale_give_identical_contents(tmp_path: Path) -> None:
    first = build_database(tmp_path / "a" / "db.duckdb", seed=3, scale=TINY)
    second = build_database(tmp_path / "b" / "db.duckdb", seed=3, scale=TINY)
    assert first.content_hash == second.content_hash
    assert first.row_counts == second.row_counts
    with duckdb.connect(str(first.path), read_only=True) as connection:
        assert content_hash(connection) == first.content_hash  # the manifest hash is the file's hash


# Content hashes of builds made by the single-module builder (before it was split into spec, words,
# one module per domain, tables and build/manifest/lock), pinned so the split provably changed nothing.
PINNED_CONTENT_HASHES = {
    (42, TINY): "cd7494967b27b19c3a4967acf660012774c2b3616dd423fa3e325244e8a6a080",
    (7, SMALL): "4facd601b9f2248121af96aa910a5377366f10322f43c3b29bf8f3be444a23bc",
}


def test_content_is_unchanged_since_the_builder_was_split(small_db: Path, tmp_path: Path) -> None:
    info = build_database(tmp_path / "db.duckdb", seed=42, scale=TINY)
    assert info.content_hash == PINNED_CONTENT_HASHES[(42, TINY)]
    assert read_manifest(info.path)["content_hash"] == PINNED_CONTENT_HASHES[(42, TINY)]
    assert read_manifest(small_db)["content_hash"] == PINNED_CONTENT_HASHES[(7, SMALL)]
    with duckdb.connect(str(small_db), read_only=True) as connection:
        assert content_hash(connection) == PINNED_CONTENT_HASHES[(7, SMALL)]


def test_different_seed_gives_different_contents(tmp_path: Path) -> None:
    first = build_database(tmp_path / "a.duckdb", seed=3, scale=TINY)
    other = build_database(tmp_path / "b.duckdb", seed=4, scale=TINY)
    assert first.content_hash != other.content_hash


def test_manifest_is_written_beside_the_database(small_db: Path) -> None:
    manifest = json.loads(manifest_path(small_db).read_text())
    assert manifest_path(small_db).name == "anime_platform.duckdb.json"
    assert manifest["seed"] == 7 and manifest["scale"] == SMALL
    assert manifest["builder_version"] == BUILDER_VERSION
    assert manifest["reference_date"] == "2026-06-30"
    assert len(manifest["content_hash"]) == 64
    assert set(manifest["row_counts"]) == set(TABLE_ORDER)


# -------------------------------------------------------------------------------------------- scaling


def test_scale_multiplies_fact_tables_only() -> None:
    small = {name: table.num_rows for name, table in generate_tables(seed=1, scale=TINY).items()}
    larger = {name: table.num_rows for name, table in generate_tables(seed=1, scale=2 * TINY).items()}
    for table, base in BASE_FACT_ROWS.items():
        assert small[table] == round(base * TINY)
        assert larger[table] == round(base * 2 * TINY)
    assert larger["merch_order_lines"] > 1.5 * small["merch_order_lines"]
    assert larger["subscriptions"] > 1.5 * small["subscriptions"]
    for table in ("studios", "anime", "genres", "episodes", "subscription_plans", "advertisers", "merch_products"):
        assert small[table] == larger[table]


def test_default_scale_has_the_documented_sizes() -> None:
    assert BASE_FACT_ROWS == {
        "users": 3_000,
        "watch_sessions": 100_000,
        "ratings": 20_000,
        "ad_impressions": 80_000,
        "merch_orders": 6_000,
    }


@pytest.mark.parametrize("bad", [0, -1, 0.0, math.nan, math.inf, 1000.0, "1", True, None])
def test_bad_scale_raises_value_error(bad, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="scale"):
        build_database(tmp_path / "x.duckdb", scale=bad)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------- realism


def test_every_table_is_filled(con) -> None:
    for table in TABLE_ORDER:
        assert scalar(con, f"SELECT count(*) FROM {table}") > 0, table
    assert scalar(con, "SELECT count(*) FROM studios") == 40
    assert scalar(con, "SELECT count(*) FROM genres") == 18
    assert scalar(con, "SELECT count(*) FROM subscription_plans") == 4
    assert 3_000 <= scalar(con, "SELECT count(*) FROM episodes") <= 5_000


def test_every_nullable_column_has_some_nulls_but_not_many(con) -> None:
    nullable = con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE schema_name = 'main' AND NOT internal AND is_nullable"
    ).fetchall()
    assert len(nullable) == 15
    mostly_null = {("ratings", "review"), ("ad_campaigns", "target_age_band")}  # by design, see the model
    for table, column in nullable:
        nulls, total = con.execute(f"SELECT count(*) - count({column}), count(*) FROM {table}").fetchone()
        assert nulls > 0, f"{table}.{column} has no NULL"
        if (table, column) not in mostly_null:
            assert nulls / total < 0.5, f"{table}.{column} is mostly NULL"


def test_fact_timestamps_lie_in_the_data_period(con) -> None:
    start = datetime.datetime(2024, 1, 1)
    end = datetime.datetime(2026, 7, 1)
    for table, column in [
        ("watch_sessions", "started_at"),
        ("ratings", "rated_at"),
        ("ad_impressions", "served_at"),
        ("merch_orders", "ordered_at"),
        ("users", "signup_date"),
        ("subscriptions", "start_date"),
        ("ad_campaigns", "start_date"),
    ]:
        low, high = con.execute(f"SELECT min({column})::TIMESTAMP, max({column})::TIMESTAMP FROM {table}").fetchone()
        assert start <= low and high < end, (table, column, low, high)
    assert REFERENCE_DATE == datetime.date(2026, 6, 30)
    assert scalar(con, "SELECT max(started_at)::DATE FROM watch_sessions") >= datetime.date(2026, 6, 1)
    assert scalar(con, "SELECT max(air_date) FROM episodes") <= REFERENCE_DATE


def test_activity_grows_over_time(con) -> None:
    per_year = dict(
        con.execute(
            "SELECT year(started_at), count(*) FROM watch_sessions WHERE month(started_at) <= 6 GROUP BY 1"
        ).fetchall()
    )
    assert per_year[2024] < per_year[2025] < per_year[2026]


def test_popularity_is_skewed(con) -> None:
    shares = [
        r[0]
        for r in con.execute(
            "SELECT count(*) FROM watch_sessions JOIN episodes USING (episode_id) GROUP BY anime_id ORDER BY 1 DESC"
        ).fetchall()
    ]
    assert sum(shares[:10]) > 0.5 * sum(shares)


def test_rankings_contain_ties(con) -> None:
    top_studios = con.execute(
        "SELECT count(*) AS titles FROM anime WHERE studio_id IS NOT NULL "
        "GROUP BY studio_id ORDER BY titles DESC LIMIT 2"
    ).fetchall()
    assert top_studios[0] == top_studios[1]
    top_orders = con.execute(
        "SELECT sum(quantity * unit_price) AS total FROM merch_order_lines JOIN merch_orders USING (order_id) "
        "WHERE status <> 'refunded' GROUP BY order_id ORDER BY total DESC LIMIT 2"
    ).fetchall()
    assert top_orders[0] == top_orders[1]


def test_no_orphan_foreign_keys(con) -> None:
    foreign_keys = con.execute(
        "SELECT table_name, constraint_column_names, referenced_table, referenced_column_names "
        "FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY'"
    ).fetchall()
    assert len(foreign_keys) == 18
    for table, columns, parent, parent_columns in foreign_keys:
        (column,), (parent_column,) = columns, parent_columns
        orphans = scalar(
            con,
            f"SELECT count(*) FROM {table} AS c LEFT JOIN {parent} AS p ON p.{parent_column} = c.{column} "
            f"WHERE c.{column} IS NOT NULL AND p.{parent_column} IS NULL",
        )
        assert orphans == 0, f"{table}.{column} -> {parent}"


def test_business_invariants_hold(con) -> None:
    checks = {
        "active iff end_date is NULL": "SELECT count(*) FROM subscriptions WHERE (status = 'active') <> (end_date IS NULL)",
        "one active subscription per user": "SELECT count(*) FROM (SELECT user_id FROM subscriptions WHERE status = 'active' "
        "GROUP BY 1 HAVING count(*) > 1)",
        "periods do not overlap": "SELECT count(*) FROM subscriptions a JOIN subscriptions b ON a.user_id = b.user_id "
        "AND a.subscription_id < b.subscription_id AND b.start_date <= coalesce(a.end_date, DATE '9999-12-31') "
        "AND a.start_date <= coalesce(b.end_date, DATE '9999-12-31')",
        "1-4 genres per anime": "SELECT count(*) FROM anime a WHERE (SELECT count(*) FROM anime_genres g WHERE g.anime_id = a.anime_id) "
        "NOT BETWEEN 1 AND 4",
        "upcoming titles have no air dates": "SELECT count(*) FROM episodes JOIN anime USING (anime_id) "
        "WHERE status = 'upcoming' AND air_date IS NOT NULL",
        "finished titles aired every episode": "SELECT count(*) FROM episodes JOIN anime USING (anime_id) WHERE status = 'finished' AND air_date IS NULL",
        "airing titles aired some episodes": "SELECT count(*) FROM anime a WHERE status = 'airing' AND NOT EXISTS "
        "(SELECT 1 FROM episodes e WHERE e.anime_id = a.anime_id AND e.air_date IS NOT NULL)",
        "premiere matches the season year": "SELECT count(*) FROM anime JOIN episodes USING (anime_id) WHERE episode_number = 1 "
        "AND air_date IS NOT NULL AND year(air_date) <> season_year",
        "sessions after air date and signup": "SELECT count(*) FROM watch_sessions w JOIN episodes e USING (episode_id) JOIN users u USING (user_id) "
        "WHERE e.air_date IS NULL OR w.started_at::DATE < e.air_date OR w.started_at::DATE < u.signup_date",
        "impressions within campaign dates": "SELECT count(*) FROM ad_impressions i JOIN ad_campaigns c USING (campaign_id) "
        "WHERE i.served_at::DATE < c.start_date OR i.served_at::DATE > coalesce(c.end_date, DATE '2026-06-30')",
        "impressions match the campaign's age target": "SELECT count(*) FROM ad_impressions i JOIN ad_campaigns c USING (campaign_id) "
        "JOIN users u USING (user_id) "
        "WHERE c.target_age_band IS NOT NULL AND u.age_band IS DISTINCT FROM c.target_age_band",
        "one rating per user and anime": "SELECT count(*) FROM (SELECT user_id, anime_id FROM ratings GROUP BY 1, 2 HAVING count(*) > 1)",
        "scores 1..10": "SELECT count(*) FROM ratings WHERE score NOT BETWEEN 1 AND 10",
        "unit price never above list price": "SELECT count(*) FROM merch_order_lines l JOIN merch_products p USING (product_id) "
        "WHERE l.unit_price > p.list_price",
        "completed means >= 90% watched": "SELECT count(*) FROM watch_sessions JOIN episodes USING (episode_id) "
        "WHERE completed <> (seconds_watched >= 0.9 * duration_minutes * 60)",
    }
    failures = {name: n for name, sql in checks.items() if (n := scalar(con, sql)) != 0}
    assert failures == {}
    discounted = scalar(
        con,
        "SELECT avg((l.unit_price < p.list_price)::INT) FROM merch_order_lines l "
        "JOIN merch_products p USING (product_id)",
    )
    assert 0.05 < discounted < 0.3


def test_prompt_injection_strings_are_planted(con) -> None:
    assert len(PROMPT_INJECTIONS) == 3
    for table, column, text in PROMPT_INJECTIONS:
        assert con.execute(f"SELECT count(*) FROM {table} WHERE {column} = ?", [text]).fetchone()[0] == 1


# ------------------------------------------------------------------------------------------ atomicity


def test_failed_build_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = build_module._write_tables

    def half_then_fail(connection, tables):
        original(connection, tables)
        raise RuntimeError("disk full (simulated)")

    monkeypatch.setattr(build_module, "_write_tables", half_then_fail)
    with pytest.raises(RuntimeError, match="simulated"):
        build_database(tmp_path / "db.duckdb", scale=TINY)
    assert list(tmp_path.iterdir()) == []


def test_failed_rebuild_keeps_the_previous_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "db.duckdb"
    info = build_database(path, seed=5, scale=TINY)

    def fail(connection, tables):
        connection.execute("CREATE TABLE partial (x INTEGER)")
        raise RuntimeError("crash (simulated)")

    monkeypatch.setattr(build_module, "_write_tables", fail)
    with pytest.raises(RuntimeError):
        build_database(path, seed=6, scale=TINY)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.duckdb", "db.duckdb.json"]
    assert read_manifest(path)["content_hash"] == info.content_hash
    with duckdb.connect(str(path), read_only=True) as connection:
        assert content_hash(connection) == info.content_hash


# ------------------------------------------------------------------------------------- ensure_database


def test_ensure_database_builds_once_and_rebuilds_on_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path))
    calls: list[tuple[int, float]] = []
    real = BUILDERS[DATABASE_NAME]

    def counting(path, *, seed, scale):
        calls.append((seed, scale))
        return real(path, seed=seed, scale=scale)

    monkeypatch.setitem(BUILDERS, DATABASE_NAME, counting)
    path = ensure_database(scale=TINY)
    assert path == tmp_path.resolve() / "databases" / "anime_platform.duckdb" and path.exists()
    assert ensure_database(scale=TINY) == path
    assert calls == [(42, TINY)]
    ensure_database(seed=8, scale=TINY)
    assert calls[-1] == (8, TINY) and read_manifest(path)["seed"] == 8
    manifest = read_manifest(path)
    manifest["builder_version"] = "0"
    manifest_path(path).write_text(json.dumps(manifest))
    ensure_database(seed=8, scale=TINY)
    assert len(calls) == 3


def test_ensure_database_rejects_unknown_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path))
    with pytest.raises(DatabaseNotFoundError, match="unknown sample database 'shop'.*anime_platform"):
        ensure_database("shop")


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_build_and_info(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path))
    assert main(["db", "info"]) == EXIT_ENVIRONMENT
    assert "nl2sql-eval db build" in capsys.readouterr().err

    assert main(["db", "build", "--scale", str(TINY), "--seed", "11"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "built: " in out and str(tmp_path.resolve() / "databases" / "anime_platform.duckdb") in out
    assert "watch_sessions" in out and "2,000" in out  # 100,000 * 0.02

    assert main(["db", "build", "--scale", str(TINY), "--seed", "11"]) == EXIT_OK
    assert capsys.readouterr().out.startswith("up to date: ")

    assert main(["db", "info", "--json"]) == EXIT_OK
    info = json.loads(capsys.readouterr().out)
    assert info["manifest"]["seed"] == 11
    assert info["row_counts"] == info["manifest"]["row_counts"]

    assert main(["db", "info"]) == EXIT_OK
    assert "content_hash: " in capsys.readouterr().out


@pytest.mark.parametrize("scale", ["0", "-2", "nan"])
def test_cli_bad_scale_exits_2(scale: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path))
    assert main(["db", "build", f"--scale={scale}"]) == EXIT_BAD_INPUT
    assert "--scale" in capsys.readouterr().err
    assert not (tmp_path / "databases" / "anime_platform.duckdb").exists()


def test_cli_unknown_database_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path))
    assert main(["db", "build", "--name", "nope"]) == EXIT_BAD_INPUT
    assert "unknown sample database 'nope'" in capsys.readouterr().err
