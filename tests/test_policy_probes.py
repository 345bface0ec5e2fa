"""Probe suite of the SQL policy engine: attacks must be rejected by the right rule, realistic
analytics over the anime schema must be allowed, and precision and recall over the suite are 1.0."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from nl2sql_pipeline.policy import SQLPolicyEngine, load_policy, read_database_schema

# A tiny copy of part of the anime platform schema (nl2sql_pipeline/sample_db/schema.sql), no rows.
ANIME_DDL = """
CREATE TABLE studios (studio_id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, country VARCHAR, founded_year INTEGER);
CREATE TABLE anime (anime_id INTEGER PRIMARY KEY, title VARCHAR NOT NULL, studio_id INTEGER, format VARCHAR NOT NULL,
    season VARCHAR, season_year INTEGER NOT NULL, status VARCHAR NOT NULL, age_rating VARCHAR NOT NULL, synopsis VARCHAR);
CREATE TABLE genres (genre_id INTEGER PRIMARY KEY, name VARCHAR NOT NULL);
CREATE TABLE anime_genres (anime_id INTEGER NOT NULL, genre_id INTEGER NOT NULL, PRIMARY KEY (anime_id, genre_id));
CREATE TABLE episodes (episode_id INTEGER PRIMARY KEY, anime_id INTEGER NOT NULL, episode_number INTEGER NOT NULL,
    title VARCHAR, duration_minutes INTEGER NOT NULL, air_date DATE);
CREATE TABLE users (user_id INTEGER PRIMARY KEY, username VARCHAR NOT NULL, email VARCHAR NOT NULL, country VARCHAR,
    age_band VARCHAR, signup_date DATE NOT NULL);
CREATE TABLE watch_sessions (session_id BIGINT PRIMARY KEY, user_id INTEGER NOT NULL, episode_id INTEGER NOT NULL,
    started_at TIMESTAMP NOT NULL, seconds_watched INTEGER NOT NULL, device VARCHAR NOT NULL, completed BOOLEAN NOT NULL);
CREATE TABLE ratings (rating_id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, anime_id INTEGER NOT NULL,
    score INTEGER NOT NULL, rated_at TIMESTAMP NOT NULL, review VARCHAR);
CREATE TABLE subscription_plans (plan_id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, monthly_price DECIMAL(10, 2) NOT NULL,
    max_streams INTEGER NOT NULL, has_ads BOOLEAN NOT NULL);
CREATE TABLE subscriptions (subscription_id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, plan_id INTEGER NOT NULL,
    start_date DATE NOT NULL, end_date DATE, status VARCHAR NOT NULL);
CREATE TABLE merch_orders (order_id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, ordered_at TIMESTAMP NOT NULL,
    status VARCHAR NOT NULL, shipping_country VARCHAR);
CREATE TABLE merch_order_lines (order_id INTEGER NOT NULL, line_number INTEGER NOT NULL, product_id INTEGER NOT NULL,
    quantity INTEGER NOT NULL, unit_price DECIMAL(10, 2) NOT NULL, PRIMARY KEY (order_id, line_number));
"""

SEVEN_JOINS = (
    "SELECT a.title FROM anime a JOIN studios s ON s.studio_id = a.studio_id "
    "JOIN anime_genres ag ON ag.anime_id = a.anime_id JOIN genres g ON g.genre_id = ag.genre_id "
    "JOIN episodes e ON e.anime_id = a.anime_id JOIN watch_sessions ws ON ws.episode_id = e.episode_id "
    "JOIN users u ON u.user_id = ws.user_id JOIN ratings r ON r.user_id = u.user_id AND r.anime_id = a.anime_id"
)

# (id, sql, the rule that must reject it)
ATTACKS: list[tuple[str, str, str]] = [
    # ---- parse (fail closed) ----
    ("typo", "SELEC title FROM anime", "parse"),
    ("truncated", "SELECT title FROM anime WHERE", "parse"),
    ("empty", "   ", "parse"),
    ("only-comment", "-- nothing here", "parse"),
    # ---- one statement ----
    ("stacked-drop", "SELECT 1; DROP TABLE users", "single_statement"),
    ("comment-then-delete", "SELECT title FROM anime /* harmless */; DELETE FROM users", "single_statement"),
    ("line-comment-smuggle", "SELECT title FROM anime; -- report\nDROP TABLE users", "single_statement"),
    ("block-comment-attach", "SELECT 1;/**/ATTACH 'evil.duckdb' AS e", "single_statement"),
    # ---- read-only ----
    ("dml-cte", "WITH d AS (DELETE FROM users RETURNING user_id) SELECT count(*) FROM d", "read_only"),
    ("drop", "DROP TABLE users", "read_only"),
    ("insert", "INSERT INTO genres VALUES (99, 'hacked')", "read_only"),
    ("update", "UPDATE users SET country = 'JP'", "read_only"),
    ("ctas", "CREATE TABLE loot AS SELECT title FROM anime", "read_only"),
    ("attach", "ATTACH 'other.duckdb' AS o", "read_only"),
    ("detach", "DETACH o", "read_only"),
    ("copy", "COPY users TO 'users.csv'", "read_only"),
    ("export", "EXPORT DATABASE 'dump'", "read_only"),
    ("import", "IMPORT DATABASE 'dump'", "read_only"),
    ("install", "INSTALL httpfs", "read_only"),
    ("load", "LOAD httpfs", "read_only"),
    ("set", "SET enable_external_access = true", "read_only"),
    ("reset", "RESET memory_limit", "read_only"),
    ("pragma", "PRAGMA table_info('users')", "read_only"),
    ("call", "CALL pragma_version()", "read_only"),
    ("checkpoint", "CHECKPOINT", "read_only"),
    ("vacuum", "VACUUM", "read_only"),
    ("explain-analyze", "EXPLAIN ANALYZE SELECT title FROM anime", "read_only"),
    ("transaction", "BEGIN TRANSACTION", "read_only"),
    ("describe", "DESCRIBE users", "read_only"),
    ("summarize", "SUMMARIZE users", "read_only"),
    ("summarize-subquery", "SELECT * FROM (SUMMARIZE users)", "read_only"),
    ("pivot-statement", "PIVOT users ON country USING count(*)", "read_only"),
    # ---- table scope ----
    ("csv-path", "SELECT * FROM 'data.csv'", "table_scope"),
    ("etc-passwd", "SELECT * FROM '/etc/passwd'", "table_scope"),
    ("url", "SELECT * FROM 'https://example.com/leak.parquet'", "table_scope"),
    ("s3-quoted", 'SELECT * FROM "s3://bucket/users.parquet"', "table_scope"),
    ("read-csv", "SELECT * FROM read_csv('/etc/passwd')", "table_scope"),
    (
        "read-csv-auto-nested",
        "SELECT title FROM anime WHERE anime_id IN (SELECT anime_id FROM read_csv_auto('ids.csv'))",
        "table_scope",
    ),
    ("read-parquet", "SELECT * FROM read_parquet('x.parquet')", "table_scope"),
    ("read-text", "SELECT content FROM read_text('/etc/hostname')", "table_scope"),
    ("glob", "SELECT * FROM glob('*')", "table_scope"),
    ("parquet-scan", "SELECT * FROM parquet_scan('x.parquet')", "table_scope"),
    ("information-schema", "SELECT table_name, column_name FROM information_schema.columns", "table_scope"),
    ("pg-catalog", "SELECT * FROM pg_catalog.pg_class", "table_scope"),
    ("duckdb-tables-fn", "SELECT * FROM duckdb_tables()", "table_scope"),
    ("duckdb-columns-view", "SELECT * FROM duckdb_columns", "table_scope"),
    ("duckdb-settings", "SELECT * FROM duckdb_settings()", "table_scope"),
    ("duckdb-secrets", "SELECT * FROM duckdb_secrets()", "table_scope"),
    ("sqlite-master", "SELECT * FROM sqlite_master", "table_scope"),
    ("pragma-table-info", "SELECT * FROM pragma_table_info('users')", "table_scope"),
    ("query-fn", "SELECT * FROM query('SELECT email FROM users')", "table_scope"),
    ("query-table-fn", "SELECT * FROM query_table('users')", "table_scope"),
    ("system-catalog", "SELECT * FROM system.main.duckdb_tables", "table_scope"),
    ("other-catalog", "SELECT * FROM other_db.main.users", "table_scope"),
    ("unknown-table", "SELECT * FROM payment_cards", "table_scope"),
    ("test-all-types", "SELECT * FROM test_all_types()", "table_scope"),
    # ---- column scope ----
    ("direct", "SELECT email FROM users", "column_scope"),
    ("quoted-mixed-case", 'SELECT "Users"."EMAIL" FROM "Users"', "column_scope"),
    ("upper-case", "SELECT EMAIL FROM USERS", "column_scope"),
    ("alias", "SELECT u.email AS contact FROM users AS u", "column_scope"),
    ("schema-qualified", "SELECT main.users.email FROM main.users", "column_scope"),
    ("star", "SELECT * FROM users", "column_scope"),
    ("table-star", "SELECT u.* FROM users u", "column_scope"),
    ("star-join", "SELECT * FROM users u JOIN ratings r ON r.user_id = u.user_id", "column_scope"),
    ("columns-star", "SELECT COLUMNS(*) FROM users", "column_scope"),
    ("columns-regex", "SELECT COLUMNS('e.*') FROM users", "column_scope"),
    ("columns-regex-partial", "SELECT COLUMNS('MAIL') FROM users u", "column_scope"),
    ("columns-lambda", "SELECT COLUMNS(c -> c LIKE 'e%') FROM users", "column_scope"),
    # RE2 (DuckDB) reads [[:alpha:]] as a letter class; Python's re reads a plain character set
    ("columns-regex-posix-class", "SELECT COLUMNS('^[[:alpha:]]+$') FROM users", "column_scope"),
    ("columns-regex-negated-posix", "SELECT COLUMNS('[[:^digit:]]{5}') FROM users", "column_scope"),
    ("columns-regex-unicode-class", "SELECT COLUMNS('^\\pL+$') FROM users", "column_scope"),
    ("columns-regex-inline-flag", "SELECT COLUMNS('(?-i)MAIL|mail') FROM users", "column_scope"),
    ("columns-regex-invalid", "SELECT COLUMNS('[') FROM users", "column_scope"),
    # a qualified EXCLUDE drops one copy's column: the other copy's stays in *
    (
        "star-exclude-one-side-of-self-join",
        "SELECT * EXCLUDE (u.email) FROM users u JOIN users v ON u.user_id = v.user_id",
        "column_scope",
    ),
    (
        "star-exclude-table-qualified-self-join",
        "SELECT * EXCLUDE (main.users.email) FROM users JOIN users v ON users.user_id = v.user_id",
        "column_scope",
    ),
    ("star-like", "SELECT * LIKE 'e%' FROM users", "column_scope"),
    ("star-exclude-other", "SELECT * EXCLUDE (username) FROM users", "column_scope"),
    ("struct-pack", "SELECT u FROM users u", "column_scope"),
    ("struct-pack-unaliased", "SELECT users FROM users", "column_scope"),
    ("to-json-row", "SELECT to_json(u) FROM users u", "column_scope"),
    ("struct-pack-star", "SELECT struct_pack(u.*) FROM users u", "column_scope"),
    ("row-field", "SELECT (u).email FROM users u", "column_scope"),
    ("row-bracket", "SELECT u['email'] FROM users u", "column_scope"),
    ("where-only", "SELECT user_id FROM users WHERE email LIKE '%@example.com'", "column_scope"),
    ("order-by-only", "SELECT user_id FROM users ORDER BY email", "column_scope"),
    (
        "qualify-only",
        "SELECT user_id FROM users QUALIFY row_number() OVER (PARTITION BY email ORDER BY user_id) = 1",
        "column_scope",
    ),
    ("having-only", "SELECT country FROM users GROUP BY country HAVING max(length(email)) > 10", "column_scope"),
    ("cte-only", "WITH c AS (SELECT user_id, email FROM users) SELECT user_id FROM c", "column_scope"),
    ("cte-star", "WITH c AS (SELECT * FROM users) SELECT user_id, country FROM c", "column_scope"),
    ("subquery-alias", "SELECT x.contact FROM (SELECT email AS contact FROM users) AS x", "column_scope"),
    ("scalar-subquery", "SELECT (SELECT max(email) FROM users) AS m", "column_scope"),
    (
        "correlated",
        "SELECT u.user_id FROM users u WHERE EXISTS (SELECT 1 FROM ratings r WHERE r.review = u.email)",
        "column_scope",
    ),
    ("lateral", "SELECT l.x FROM users u, LATERAL (SELECT u.email AS x) l", "column_scope"),
    ("column-rename", "SELECT c FROM users AS u(a, b, c)", "column_scope"),
    ("positional", "SELECT #3 FROM users", "column_scope"),
    ("from-first", "FROM users", "column_scope"),
    ("table-statement", "TABLE users", "column_scope"),
    ("using-denied", "SELECT u.user_id FROM users u JOIN users v USING (email)", "column_scope"),
    ("natural-join", "SELECT u.user_id FROM users u NATURAL JOIN subscriptions s", "column_scope"),
    ("union-branch", "SELECT review FROM ratings UNION ALL SELECT email FROM users", "column_scope"),
    ("count-distinct", "SELECT count(DISTINCT email) FROM users", "column_scope"),
    ("cte-shadow-base", "WITH users AS (SELECT * FROM main.users) SELECT user_id FROM users", "column_scope"),
    ("method-call-column", "SELECT email.upper() FROM users", "column_scope"),
    ("method-call-row", "SELECT u.upper() FROM users u", "column_scope"),
    ("join-tree-alias-star", "SELECT j.* FROM (users JOIN ratings USING (user_id)) AS j", "column_scope"),
    ("join-tree-alias-column", "SELECT j.email FROM (users JOIN ratings USING (user_id)) AS j", "column_scope"),
    ("lambda-body", "SELECT list_transform([1, 2], x -> email) FROM users", "column_scope"),
    # ---- dangerous functions ----
    ("getenv", "SELECT getenv('HOME')", "denied_function"),
    ("current-setting", "SELECT current_setting('threads')", "denied_function"),
    ("method-call", "SELECT 'HOME'.getenv()", "denied_function"),
    ("quoted-function", "SELECT \"current_setting\"('memory_limit')", "denied_function"),
    ("function-in-where", "SELECT title FROM anime WHERE title = current_setting('home_directory')", "denied_function"),
    (
        "scalar-read-text",
        "SELECT title FROM anime WHERE length(title) > (SELECT 1 WHERE read_text('x') IS NULL)",
        "denied_function",
    ),
    ("json-execute", "SELECT json_execute_serialized_sql('{}')", "denied_function"),
    # ---- LIMIT budget ----
    ("limit-over", "SELECT title FROM anime LIMIT 5000", "max_limit"),
    ("limit-one-over", "SELECT title FROM anime LIMIT 1001", "max_limit"),
    ("limit-inner", "SELECT title FROM (SELECT title FROM anime LIMIT 100000) t LIMIT 10", "max_limit"),
    ("limit-percent", "SELECT title FROM anime LIMIT 50 PERCENT", "max_limit"),
    ("limit-subquery", "SELECT title FROM anime LIMIT (SELECT 5000)", "max_limit"),
    ("fetch-first", "SELECT title FROM anime FETCH FIRST 2000 ROWS ONLY", "max_limit"),
    # ---- joins ----
    ("seven-joins", SEVEN_JOINS, "max_joins"),
    ("cross-join", "SELECT a.title, g.name FROM anime a CROSS JOIN genres g", "cartesian_join"),
    ("comma-join", "SELECT a.title, s.name FROM anime a, studios s", "cartesian_join"),
    ("comma-join-filter-only", "SELECT a.title FROM anime a, studios s WHERE a.format = 'TV'", "cartesian_join"),
    ("on-true", "SELECT a.title FROM anime a JOIN studios s ON TRUE", "cartesian_join"),
    ("on-constant", "SELECT a.title FROM anime a JOIN studios s ON 1 = 1", "cartesian_join"),
    ("on-one-side", "SELECT a.title FROM anime a JOIN studios s ON a.studio_id = a.studio_id", "cartesian_join"),
    (
        "on-or-true",
        "SELECT a.title FROM anime a JOIN studios s ON (a.studio_id = s.studio_id OR TRUE)",
        "cartesian_join",
    ),
    (
        "nested-join-tree-on-true",
        "SELECT a.title FROM ((anime a JOIN studios s ON TRUE) JOIN episodes e ON e.anime_id = a.anime_id)",
        "cartesian_join",
    ),
    ("range-product", "SELECT g.name, r.range FROM genres g, range(100) r", "cartesian_join"),
]

REALISTIC: list[str] = [
    # single table
    "SELECT COUNT(*) FROM users",
    "SELECT COUNT(*) AS user_count FROM users WHERE country = 'JP'",
    "SELECT u.user_id, u.country FROM users u",
    "SELECT country, COUNT(*) AS users FROM users GROUP BY country ORDER BY users DESC LIMIT 10",
    "SELECT age_band, COUNT(*) FROM users WHERE age_band IS NOT NULL GROUP BY age_band ORDER BY age_band",
    "SELECT username, signup_date FROM users WHERE signup_date >= DATE '2026-01-01' ORDER BY signup_date",
    "SELECT * FROM anime WHERE status = 'airing' ORDER BY title",
    "SELECT title, season_year FROM anime WHERE format = 'Movie' ORDER BY season_year DESC LIMIT 1000",
    "SELECT format, COUNT(*) AS n FROM anime GROUP BY ALL ORDER BY n DESC",
    "SELECT season, season_year, COUNT(*) FROM anime WHERE season IS NOT NULL GROUP BY 1, 2 ORDER BY 2, 1",
    "SELECT * EXCLUDE (email) FROM users WHERE country = 'FR'",
    "SELECT name, monthly_price FROM subscription_plans WHERE NOT has_ads ORDER BY monthly_price",
    "SELECT max(founded_year) - min(founded_year) AS span FROM studios",
    "SELECT DISTINCT country FROM studios WHERE country IS NOT NULL",
    "FROM anime SELECT title WHERE age_rating IN ('R', 'R+')",
    "SELECT title, length(synopsis) AS synopsis_length FROM anime WHERE synopsis IS NOT NULL LIMIT 20",
    "SELECT COUNT(*) FILTER (WHERE completed) * 1.0 / COUNT(*) AS completion_rate FROM watch_sessions",
    "SELECT device, SUM(seconds_watched) / 3600.0 AS hours FROM watch_sessions GROUP BY device ORDER BY hours DESC",
    "SELECT status, COUNT(*) FROM subscriptions GROUP BY status",
    "SELECT AVG(score) AS avg_score, COUNT(*) AS ratings FROM ratings WHERE review IS NOT NULL",
    # joins, including the anime_genres bridge
    "SELECT a.title, s.name AS studio FROM anime a JOIN studios s ON s.studio_id = a.studio_id",
    "SELECT a.title, s.name FROM anime a LEFT JOIN studios s ON a.studio_id = s.studio_id WHERE s.studio_id IS NULL",
    "SELECT g.name, COUNT(DISTINCT ag.anime_id) AS titles FROM genres g JOIN anime_genres ag ON ag.genre_id = g.genre_id "
    "GROUP BY g.name ORDER BY titles DESC",
    "SELECT a.title FROM anime a JOIN anime_genres ag ON ag.anime_id = a.anime_id JOIN genres g ON g.genre_id = ag.genre_id "
    "WHERE g.name = 'Mecha'",
    "SELECT g.name, AVG(r.score) AS avg_score FROM ratings r JOIN anime_genres ag ON ag.anime_id = r.anime_id "
    "JOIN genres g ON g.genre_id = ag.genre_id GROUP BY g.name HAVING COUNT(*) >= 10 ORDER BY avg_score DESC LIMIT 5",
    "SELECT a.title, AVG(r.score) AS avg_score FROM anime a JOIN ratings r ON r.anime_id = a.anime_id "
    "GROUP BY a.title HAVING COUNT(*) >= 5 ORDER BY avg_score DESC LIMIT 20",
    "SELECT u.country, COUNT(DISTINCT ws.user_id) AS viewers FROM watch_sessions ws JOIN users u ON u.user_id = ws.user_id "
    "GROUP BY u.country ORDER BY viewers DESC",
    "SELECT a.title, SUM(ws.seconds_watched) / 3600.0 AS hours FROM watch_sessions ws "
    "JOIN episodes e ON e.episode_id = ws.episode_id JOIN anime a ON a.anime_id = e.anime_id "
    "GROUP BY a.title ORDER BY hours DESC LIMIT 10",
    "SELECT p.name, COUNT(*) AS active FROM subscriptions s JOIN subscription_plans p ON p.plan_id = s.plan_id "
    "WHERE s.status = 'active' GROUP BY p.name",
    "SELECT SUM(p.monthly_price) AS mrr FROM subscriptions s JOIN subscription_plans p USING (plan_id) "
    "WHERE s.end_date IS NULL",
    "SELECT a.title, s.name FROM anime a, studios s WHERE a.studio_id = s.studio_id AND s.country = 'JP'",
    "SELECT u.age_band, AVG(r.score) FROM users u JOIN ratings r ON r.user_id = u.user_id GROUP BY u.age_band",
    "SELECT o.shipping_country, SUM(l.quantity * l.unit_price) AS revenue FROM merch_orders o "
    "JOIN merch_order_lines l ON l.order_id = o.order_id WHERE o.status <> 'refunded' GROUP BY 1 ORDER BY 2 DESC",
    "SELECT u.username FROM users u WHERE NOT EXISTS (SELECT 1 FROM ratings r WHERE r.user_id = u.user_id)",
    "SELECT u.username FROM users u SEMI JOIN subscriptions s ON s.user_id = u.user_id",
    "SELECT e.title, e.air_date FROM episodes e JOIN anime a ON a.anime_id = e.anime_id "
    "WHERE a.title = 'Frieren' ORDER BY e.episode_number",
    # CTEs
    "WITH per_user AS (SELECT user_id, COUNT(*) AS sessions FROM watch_sessions GROUP BY user_id) "
    "SELECT AVG(sessions) FROM per_user",
    "WITH monthly AS (SELECT date_trunc('month', started_at) AS month, SUM(seconds_watched) AS secs FROM watch_sessions "
    "GROUP BY 1) SELECT month, secs, secs - LAG(secs) OVER (ORDER BY month) AS delta FROM monthly ORDER BY month",
    "WITH top AS (SELECT anime_id, AVG(score) AS s FROM ratings GROUP BY anime_id ORDER BY s DESC LIMIT 10) "
    "SELECT a.title, top.s FROM top JOIN anime a ON a.anime_id = top.anime_id",
    "WITH users_jp AS (SELECT user_id FROM users WHERE country = 'JP') "
    "SELECT COUNT(*) FROM users_jp j JOIN ratings r ON r.user_id = j.user_id",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12) SELECT i AS month_number FROM n",
    "WITH u AS (SELECT user_id, country FROM users) SELECT * FROM u WHERE country = 'BR'",
    "WITH users AS (SELECT user_id, username FROM main.users) SELECT * FROM users",
    # window functions
    "SELECT title, season_year, RANK() OVER (PARTITION BY season_year ORDER BY title) AS rnk FROM anime",
    "SELECT user_id, started_at, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY started_at) AS nth "
    "FROM watch_sessions QUALIFY nth = 1",
    "SELECT anime_id, score, AVG(score) OVER (PARTITION BY anime_id) AS anime_avg FROM ratings",
    "SELECT rated_at::DATE AS day, COUNT(*) AS n, SUM(COUNT(*)) OVER (ORDER BY rated_at::DATE) AS running "
    "FROM ratings GROUP BY 1 ORDER BY 1",
    # subqueries
    "SELECT title FROM anime WHERE anime_id IN (SELECT anime_id FROM ratings WHERE score = 10)",
    "SELECT title FROM anime WHERE studio_id = (SELECT studio_id FROM studios WHERE name = 'Madhouse')",
    "SELECT t.format, AVG(t.eps) FROM (SELECT a.format, COUNT(*) AS eps FROM anime a "
    "JOIN episodes e ON e.anime_id = a.anime_id GROUP BY a.anime_id, a.format) t GROUP BY t.format",
    "SELECT username FROM users WHERE user_id IN (SELECT user_id FROM merch_orders WHERE status = 'completed')",
    "SELECT a.title, (SELECT COUNT(*) FROM episodes e WHERE e.anime_id = a.anime_id) AS episodes FROM anime a",
    # set operations
    "SELECT user_id FROM ratings UNION SELECT user_id FROM watch_sessions",
    "SELECT user_id FROM subscriptions WHERE status = 'active' INTERSECT SELECT user_id FROM merch_orders",
    "SELECT user_id FROM users EXCEPT SELECT user_id FROM subscriptions",
    "SELECT 'tv' AS kind, COUNT(*) FROM anime WHERE format = 'TV' UNION ALL SELECT 'movie', COUNT(*) FROM anime "
    "WHERE format = 'Movie'",
    # dates
    "SELECT date_trunc('week', started_at) AS week, COUNT(*) FROM watch_sessions "
    "WHERE started_at >= TIMESTAMP '2026-06-30' - INTERVAL 90 DAY GROUP BY 1 ORDER BY 1",
    "SELECT strftime(signup_date, '%Y-%m') AS month, COUNT(*) FROM users GROUP BY 1 ORDER BY 1",
    "SELECT EXTRACT(year FROM air_date) AS y, COUNT(*) FROM episodes WHERE air_date IS NOT NULL GROUP BY y",
    "SELECT AVG(date_diff('day', start_date, coalesce(end_date, DATE '2026-06-30'))) FROM subscriptions",
    "SELECT COUNT(*) FROM subscriptions WHERE start_date BETWEEN DATE '2026-04-01' AND DATE '2026-06-30'",
    "SELECT dayname(started_at) AS weekday, COUNT(*) FROM watch_sessions GROUP BY 1",
    # table functions on the allowlist, LIMIT at the budget, misc
    "SELECT title FROM anime ORDER BY anime_id LIMIT 1000",
    "SELECT title FROM anime ORDER BY anime_id LIMIT 1000 OFFSET 1000",
    "SELECT y.year, COUNT(a.anime_id) FROM range(2020, 2027) AS y(year) LEFT JOIN anime a ON a.season_year = y.year "
    "GROUP BY y.year ORDER BY y.year",
    "SELECT d::DATE AS day FROM generate_series(TIMESTAMP '2026-06-01', TIMESTAMP '2026-06-30', INTERVAL 1 DAY) t(d)",
    "SELECT unnest(['TV', 'Movie', 'OVA']) AS format",
    "SELECT title, CASE WHEN season_year >= 2025 THEN 'recent' ELSE 'older' END AS era FROM anime",
    "SELECT u.country, COUNT(*) FROM users u JOIN merch_orders o ON o.user_id = u.user_id "
    "AND o.shipping_country <> u.country GROUP BY u.country",
    "SELECT title FROM anime FETCH FIRST 10 ROWS ONLY",
    "SELECT j.score, a.title FROM (users u JOIN ratings r ON u.user_id = r.user_id) AS j "
    "JOIN anime a ON a.anime_id = j.anime_id",
    "SELECT title.upper() AS loud FROM anime",
    "SELECT country AS region, COUNT(*) FROM users GROUP BY country ORDER BY region",
    "SELECT COLUMNS('^user') FROM users",
    "SELECT COLUMNS('(?:user_id|country)') FROM users",
    "SELECT COLUMNS('^[[:alpha:]]+$') FROM anime",
    "SELECT * EXCLUDE (u.email) FROM users u",
    "SELECT * EXCLUDE (u.email, v.email) FROM users u JOIN users v ON u.user_id = v.user_id",
]

# Column-scope attacks that must really reach users.email when run (not merely look suspicious).
LEAKS = [
    "columns-regex-posix-class",
    "columns-regex-negated-posix",
    "columns-regex-unicode-class",
    "columns-regex-inline-flag",
    "star-exclude-one-side-of-self-join",
    "star-exclude-table-qualified-self-join",
]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> SQLPolicyEngine:
    path: Path = tmp_path_factory.mktemp("policy_probes") / "anime.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(ANIME_DDL)
    return SQLPolicyEngine(load_policy("default"), read_database_schema(path))


def test_suite_sizes() -> None:
    assert len(ATTACKS) >= 60
    assert len(REALISTIC) >= 60
    assert len({name for name, _, _ in ATTACKS}) == len(ATTACKS)
    assert len(set(REALISTIC)) == len(REALISTIC)


@pytest.mark.parametrize(("sql", "rule"), [(sql, rule) for _, sql, rule in ATTACKS], ids=[n for n, _, _ in ATTACKS])
def test_attack_is_rejected_by_the_right_rule(engine: SQLPolicyEngine, sql: str, rule: str) -> None:
    decision = engine.check(sql)
    assert not decision.allowed, f"allowed: {sql}"
    assert decision.rule == rule, decision.reason
    assert decision.policy_name == "default"
    assert decision.reason


@pytest.mark.parametrize("sql", REALISTIC, ids=[f"q{i:02d}" for i in range(len(REALISTIC))])
def test_realistic_query_is_allowed(engine: SQLPolicyEngine, sql: str) -> None:
    decision = engine.check(sql)
    assert decision.allowed, f"{decision.rule}: {decision.reason}"
    assert decision.rule is None


def test_realistic_queries_are_valid_duckdb(tmp_path: Path) -> None:
    """The allowed queries are real SQL: each one runs on the (empty) tiny database."""
    with duckdb.connect(str(tmp_path / "anime.duckdb")) as con:
        con.execute(ANIME_DDL)
        for sql in REALISTIC:
            con.execute(sql).fetchall()


@pytest.mark.parametrize("name", LEAKS)
def test_column_scope_attack_really_reads_the_denied_column(tmp_path: Path, name: str) -> None:
    """The attack is real: DuckDB returns an email column for it on the tiny database."""
    sql = next(sql for probe, sql, _ in ATTACKS if probe == name)
    with duckdb.connect(str(tmp_path / "anime.duckdb")) as con:
        con.execute(ANIME_DDL)
        columns = [column[0].lower() for column in con.execute(sql).description]
    assert "email" in columns, columns


def test_precision_and_recall_are_perfect(engine: SQLPolicyEngine) -> None:
    """Positive = rejected. Attacks must all be rejected (recall), realistic queries never (precision)."""
    true_positives = sum(not engine.check(sql).allowed for _, sql, _ in ATTACKS)
    false_negatives = len(ATTACKS) - true_positives
    false_positives = sum(not engine.check(sql).allowed for sql in REALISTIC)
    precision = true_positives / (true_positives + false_positives)
    recall = true_positives / (true_positives + false_negatives)
    assert (precision, recall) == (1.0, 1.0)
