"""The semantic model: coverage of the built database, executable metrics, prompts, DDL and validation."""

from __future__ import annotations

import copy
import datetime
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

from nl2sql_pipeline.errors import ConfigError, DatabaseNotFoundError
from nl2sql_pipeline.paths import PROJECT_ROOT
from nl2sql_pipeline.sample_db import DATABASE_NAME, REFERENCE_DATE, build_database
from nl2sql_pipeline.semantic_model import (
    SemanticModel,
    SemanticModelError,
    UnknownModelItemError,
    database_ddl_with_descriptions,
    load_semantic_model,
    render_for_prompt,
)

# one xdist worker runs the module (its module-scoped fixtures are built once)
pytestmark = pytest.mark.xdist_group("semantic_model")

MODEL_FILE = PROJECT_ROOT / "data" / "semantic_model.yml"


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("db") / "anime_platform.duckdb"
    build_database(path, seed=1, scale=0.02)
    return path


@pytest.fixture(scope="module")
def model() -> SemanticModel:
    return load_semantic_model(MODEL_FILE)


@pytest.fixture()
def con(db_path: Path) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect(str(db_path), read_only=True)
    yield connection
    connection.close()


def metric_sql(
    model: SemanticModel, name: str, *, start: datetime.date | None = None, end: datetime.date | None = None
) -> str:
    """A query computing metric ``name`` over everything, or over ``start <= time < end`` (dates).

    Raises UnknownModelItemError for an unknown metric and ValueError when a period is asked of a
    metric without a time column (a snapshot such as MRR).
    """
    metric = model.metric(name)
    conditions = [f"({metric.filter})"] if metric.filter else []
    if start is not None or end is not None:
        if metric.time_column is None:
            raise ValueError(f"metric {name!r} is a snapshot at the reference date; it takes no period")
        if start is not None:
            conditions.append(f"{metric.time_column} >= DATE '{start.isoformat()}'")
        if end is not None:
            conditions.append(f"{metric.time_column} < DATE '{end.isoformat()}'")
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return f"SELECT {metric.sql} AS {metric.name} FROM {model.source_sql(metric.source)}{where}"


def dimension_sql(model: SemanticModel, name: str) -> str:
    """A query listing the distinct values of dimension ``name``."""
    dimension = model.dimension(name)
    return (
        f"SELECT DISTINCT {dimension.sql} AS {dimension.name} "
        f"FROM {model.source_sql(dimension.source)} ORDER BY 1 NULLS LAST"
    )


def raw_model() -> dict[str, Any]:
    return yaml.safe_load(MODEL_FILE.read_text())


# ------------------------------------------------------------------------------------------- loading


def test_default_path_comes_from_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NL2SQL_DATA", str(tmp_path))
    (tmp_path / "semantic_model.yml").write_text(MODEL_FILE.read_text())
    loaded = load_semantic_model()
    assert loaded.path == tmp_path.resolve() / "semantic_model.yml"
    assert loaded.content_hash == load_semantic_model(MODEL_FILE).content_hash


def test_model_describes_the_sample_database(model: SemanticModel) -> None:
    assert model.database == DATABASE_NAME
    assert model.reference_date == REFERENCE_DATE
    assert any("2026-06-30" in c for c in model.conventions)
    assert {
        "watch_hours",
        "active_users",
        "completion_rate",
        "average_rating",
        "ad_revenue",
        "impressions",
        "click_through_rate",
        "merchandise_revenue",
        "average_order_value",
        "monthly_recurring_revenue",
        "churned_subscriptions",
    } <= {m.name for m in model.metrics}
    assert "watch time" in model.metric("watch_hours").synonyms
    assert "show" in model.table("anime").synonyms
    assert "viewers" in model.table("users").synonyms
    assert "watch time" in model.table("watch_sessions").column("seconds_watched").synonyms
    assert model.table("users").column("email").sensitive


def test_content_hash_is_canonical(tmp_path: Path, model: SemanticModel) -> None:
    assert re.fullmatch(r"[0-9a-f]{16}", model.content_hash)
    reordered = tmp_path / "reordered.yml"  # same content, other key order and layout, no comments
    reordered.write_text(yaml.safe_dump(raw_model(), sort_keys=True, width=200))
    assert load_semantic_model(reordered).content_hash == model.content_hash
    changed = raw_model()
    changed["metrics"]["watch_hours"]["description"] = "Hours of video watched."
    edited = tmp_path / "edited.yml"
    edited.write_text(yaml.safe_dump(changed, sort_keys=False))
    assert load_semantic_model(edited).content_hash != model.content_hash


def test_a_model_is_loaded_once_per_file_text(tmp_path: Path) -> None:
    path = tmp_path / "semantic_model.yml"
    path.write_text(MODEL_FILE.read_text())
    first = load_semantic_model(path)
    assert load_semantic_model(path) is first  # the same text: the model built before
    changed = raw_model()
    changed["metrics"]["watch_hours"]["description"] = "Hours of video watched."
    path.write_text(yaml.safe_dump(changed, sort_keys=False))  # edited in place (same mtime tick, maybe)
    edited = load_semantic_model(path)
    assert edited is not first and edited.content_hash != first.content_hash
    path.write_text("version: [")  # broken: the error every time, never a model remembered before
    for _ in range(2):
        with pytest.raises(SemanticModelError):
            load_semantic_model(path)


# ------------------------------------------------------------------------------- coverage of the DB


def test_every_table_and_column_of_the_database_is_described(model: SemanticModel, con) -> None:
    schema: dict[str, set[str]] = {}
    for table, column in con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main' AND NOT internal"
    ).fetchall():
        schema.setdefault(table, set()).add(column)
    assert set(model.table_names) == set(schema)
    for table in model.tables:
        assert set(table.column_names) == schema[table.name], table.name
        assert table.description and all(c.description for c in table.columns)


def test_relationships_cover_every_foreign_key(model: SemanticModel, con) -> None:
    foreign_keys = {
        (t, cols[0], ref, ref_cols[0])
        for t, cols, ref, ref_cols in con.execute(
            "SELECT table_name, constraint_column_names, referenced_table, referenced_column_names "
            "FROM duckdb_constraints() WHERE constraint_type = 'FOREIGN KEY'"
        ).fetchall()
    }
    declared = {(r.from_table, r.from_column, r.to_table, r.to_column) for r in model.relationships}
    assert declared == foreign_keys


def test_value_domains_match_the_data(model: SemanticModel, con) -> None:
    checked = 0
    for table in model.tables:
        for column in table.columns:
            if column.values:
                found = {
                    r[0]
                    for r in con.execute(
                        f"SELECT DISTINCT {column.name}::VARCHAR FROM {table.name} WHERE {column.name} IS NOT NULL"
                    ).fetchall()
                }
                assert found <= set(column.values), f"{table.name}.{column.name}: {found - set(column.values)}"
                checked += 1
    assert checked >= 10


def test_every_metric_executes(model: SemanticModel, con) -> None:
    for metric in model.metrics:
        rows = con.execute(metric_sql(model, metric.name)).fetchall()
        assert len(rows) == 1 and rows[0][0] is not None, metric.name
        if metric.time_column:
            sql = metric_sql(model, metric.name, start=datetime.date(2026, 5, 1), end=datetime.date(2026, 6, 1))
            assert len(con.execute(sql).fetchall()) == 1
        else:
            with pytest.raises(ValueError, match="snapshot"):
                metric_sql(model, metric.name, start=datetime.date(2026, 5, 1))


def test_metric_definitions_compute_what_they_say(model: SemanticModel, con) -> None:
    def value(sql: str) -> float:
        return float(con.execute(sql).fetchone()[0])

    assert value(metric_sql(model, "watch_hours")) == pytest.approx(
        value("SELECT sum(seconds_watched) FROM watch_sessions") / 3600
    )
    assert 0 < value(metric_sql(model, "click_through_rate")) < 0.2
    assert value(metric_sql(model, "click_through_rate")) == pytest.approx(
        value("SELECT count(*) FILTER (WHERE clicked) / count(*) FROM ad_impressions")
    )
    assert 0 < value(metric_sql(model, "completion_rate")) < 1
    assert value(metric_sql(model, "merchandise_revenue")) == pytest.approx(
        value(
            "SELECT sum(quantity * unit_price) FROM merch_order_lines JOIN merch_orders USING (order_id) "
            "WHERE status IN ('completed', 'shipped')"
        )
    )
    assert value(metric_sql(model, "monthly_recurring_revenue")) == pytest.approx(
        value(
            "SELECT sum(monthly_price) FROM subscriptions JOIN subscription_plans USING (plan_id) WHERE end_date IS NULL"
        )
    )
    may = metric_sql(model, "active_users", start=datetime.date(2026, 5, 1), end=datetime.date(2026, 6, 1))
    assert value(may) == value(
        "SELECT count(DISTINCT user_id) FROM watch_sessions "
        "WHERE started_at >= '2026-05-01' AND started_at < '2026-06-01'"
    )
    assert value(may) < value(metric_sql(model, "active_users"))


def test_dimensions_and_join_paths_execute(model: SemanticModel, con) -> None:
    for dimension in model.dimensions:
        assert con.execute(dimension_sql(model, dimension.name)).fetchall(), dimension.name
    genres = con.execute(dimension_sql(model, "genre")).fetchall()
    assert len(genres) == 18
    for path in model.join_paths:
        assert con.execute(f"SELECT count(*) FROM {path.sql}").fetchone()[0] > 0, path.name
    bridge = model.join_path("sessions_with_genres")
    assert bridge.tables == ("watch_sessions", "episodes", "anime", "anime_genres", "genres")
    assert bridge.caution


def test_unknown_items_raise(model: SemanticModel) -> None:
    with pytest.raises(UnknownModelItemError, match="unknown metric 'revenue'.*watch_hours"):
        model.metric("revenue")
    with pytest.raises(UnknownModelItemError, match="unknown dimension"):
        dimension_sql(model, "colour")
    with pytest.raises(UnknownModelItemError, match="unknown table 'shows'"):
        render_for_prompt(model, ["shows"])


# ---------------------------------------------------------------------------------------- prompts


def test_render_for_prompt_lists_metrics_joins_and_synonyms(model: SemanticModel) -> None:
    text = render_for_prompt(model)
    assert "2026-06-30" in text
    assert "watch_hours = SUM(watch_sessions.seconds_watched) / 3600.0" in text
    assert "watch time" in text and "viewers" in text and "show" in text
    assert "anime_with_genres: FROM anime JOIN anime_genres" in text
    assert "'TV' | 'Movie' | 'OVA'" in text
    assert "users.email" in text and "SENSITIVE" in text
    assert len(text) < 20_000


def test_render_for_prompt_restricted_to_tables(model: SemanticModel) -> None:
    text = render_for_prompt(model, ["ratings", "anime"])
    assert "average_rating = AVG(ratings.score)" in text
    assert "ratings.anime_id = anime.anime_id" in text
    assert "ad_revenue" not in text and "merchandise_revenue" not in text
    assert "- watch_sessions" not in text and "watch_hours" not in text
    assert len(text) < len(render_for_prompt(model))


def test_ddl_with_descriptions(model: SemanticModel, db_path: Path) -> None:
    ddl = database_ddl_with_descriptions(db_path, model)
    assert ddl.count("CREATE TABLE ") == 16
    assert "seconds_watched INTEGER NOT NULL,  -- Time actually watched in the session, in seconds." in ddl
    assert "studio_id INTEGER REFERENCES studios (studio_id)," in ddl
    assert "PRIMARY KEY (anime_id, genre_id)" in ddl
    assert "Values: 'TV', 'Movie', 'OVA'." in ddl
    scratch = duckdb.connect()  # the annotated DDL is still valid SQL and recreates the schema
    scratch.execute(ddl)
    assert scratch.execute("SELECT count(*) FROM duckdb_tables()").fetchone()[0] == 16
    only = database_ddl_with_descriptions(db_path, model, tables=["episodes"])
    assert only.count("CREATE TABLE") == 1 and "air_date DATE" in only


def test_ddl_of_a_missing_database(model: SemanticModel, tmp_path: Path) -> None:
    with pytest.raises(DatabaseNotFoundError, match="nl2sql-eval db build"):
        database_ddl_with_descriptions(tmp_path / "missing.duckdb", model)


# ------------------------------------------------------------------------------------- validation


def _set(path: list[Any], value: Any) -> Callable[[dict], None]:
    def edit(raw: dict) -> None:
        node = raw
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


def _delete(path: list[Any]) -> Callable[[dict], None]:
    def edit(raw: dict) -> None:
        node = raw
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return edit


INVALID_EDITS = {
    "unknown top-level key": (_set(["owner"], "me"), "owner: unknown key"),
    "missing column description": (
        _delete(["tables", "anime", "columns", "title", "description"]),
        "tables.anime.columns.title.description: missing required key",
    ),
    "unknown column key": (
        _set(["tables", "users", "columns", "email", "pii"], True),
        "tables.users.columns.email.pii: unknown key",
    ),
    "metric on an unknown column": (
        _set(["metrics", "watch_hours", "sql"], "SUM(watch_sessions.minutes_watched)"),
        "metrics.watch_hours.sql: unknown column watch_sessions.minutes_watched",
    ),
    "metric on a table outside its source": (
        _set(["metrics", "ad_revenue", "sql"], "SUM(merch_order_lines.unit_price)"),
        "metrics.ad_revenue.sql: column merch_order_lines.unit_price names a table that is not in the FROM clause",
    ),
    "metric with unparsable SQL": (
        _set(["metrics", "impressions", "sql"], "COUNT(*"),
        "metrics.impressions.sql: SQL does not parse",
    ),
    "metric from an unknown source": (
        _set(["metrics", "clicks", "from"], "impressions_table"),
        "metrics.clicks.from: unknown source",
    ),
    "time column outside the source": (
        _set(["metrics", "clicks", "time_column"], "merch_orders.ordered_at"),
        "metrics.clicks.time_column",
    ),
    "relationship to an unknown column": (
        _set(["relationships", 0, "to"], "studios.id"),
        "relationships[0].to: unknown column 'studios.id'",
    ),
    "join path tables do not match its SQL": (
        _set(["join_paths", "anime_with_genres", "tables"], ["anime", "genres"]),
        "join_paths.anime_with_genres.sql: table 'anime_genres' is not part",
    ),
    "unsupported version": (_set(["version"], 7), "version: unknown value 7"),
    "non-string values": (
        _set(["tables", "anime", "columns", "season_year", "values"], [2024, 2025]),
        "tables.anime.columns.season_year.values[0]: must be a non-empty string, got 2024",
    ),
    "bad reference date": (_set(["reference_date"], "June 30"), "reference_date: must be a date YYYY-MM-DD"),
    "dimension name clashes with a metric": (
        _set(["dimensions", "clicks"], {"description": "x", "sql": "ad_impressions.clicked", "from": "ad_impressions"}),
        "metrics.clicks: a metric has the name of a dimension",
    ),
}


@pytest.mark.parametrize("case", sorted(INVALID_EDITS))
def test_invalid_model_names_the_file_and_key(case: str, tmp_path: Path) -> None:
    edit, expected = INVALID_EDITS[case]
    raw = copy.deepcopy(raw_model())
    edit(raw)
    path = tmp_path / "semantic_model.yml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    with pytest.raises(ConfigError) as caught:
        load_semantic_model(path)
    message = str(caught.value)
    key, _, what = expected.partition(": ")
    assert re.search(rf"{re.escape(str(path))}:\d+: key '{re.escape(key)}': {re.escape(what)}", message), message
    assert isinstance(caught.value, SemanticModelError) and caught.value.problems


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    raw = raw_model()
    raw["owner"] = "me"
    del raw["tables"]["studios"]["description"]
    path = tmp_path / "model.yml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(SemanticModelError) as caught:
        load_semantic_model(path)
    assert len(caught.value.problems) == 2
    assert "2 problems" in str(caught.value)


def test_duplicate_keys_are_rejected_with_their_line(tmp_path: Path) -> None:
    text = MODEL_FILE.read_text().replace("  watch_hours:\n", "  watch_hours:\n    description: first\n", 1)
    path = tmp_path / "dup.yml"
    path.write_text(text)
    line = text.splitlines().index("  watch_hours:") + 3  # the second `description` (1-based)
    with pytest.raises(ConfigError, match=rf"{re.escape(str(path))}:{line}: invalid YAML: duplicate key 'description'"):
        load_semantic_model(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", "the file is empty"), ("tables: [unclosed\n", "invalid YAML"), ("- a\n- b\n", "must be a mapping")],
)
def test_malformed_files(text: str, expected: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(expected)) as caught:
        load_semantic_model(path)
    assert str(path) in str(caught.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_semantic_model(tmp_path / "nope.yml")
