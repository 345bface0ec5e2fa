"""Predictions in a benchmark's dialect: a Spider-format file of SQLite SQL, replayed with
``source_dialect: sqlite``, is converted as ``gold import`` converts gold, scores what the same SQL
converted by hand scores, and keeps the original beside the conversion in the stored verdicts."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from nl2sql_pipeline.dialect.column_info import read_column_info
from nl2sql_pipeline.dialect.sqlite_copy import column_info_path
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation import generate_candidates
from nl2sql_pipeline.generation.failures import CONVERSION_FAILED
from nl2sql_pipeline.generation.registry import load_registry
from nl2sql_pipeline.gold.formats import import_benchmark
from nl2sql_pipeline.gold.quality.validation import load_cases
from nl2sql_pipeline.policy.gate import PolicyGate
from nl2sql_pipeline.results.frames import verdicts_from_frame, verdicts_to_frame
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import execute_attempts, judge, outcomes, run_oracle
from nl2sql_pipeline.stages.records import attempts_from_candidates

ORCHESTRA_SQL = """
CREATE TABLE performance (performance_id INTEGER PRIMARY KEY, host TEXT, share TEXT);
CREATE TABLE show (show_id INTEGER PRIMARY KEY, performance_id INT REFERENCES performance(performance_id),
                   result TEXT, attendance REAL);
INSERT INTO performance VALUES (1, 'Boston', '22'), (2, 'Miami', '7'), (3, 'Dallas', '3');
INSERT INTO show VALUES (1, 1, 'T', 1200.0), (2, 1, 'F', 900.0), (3, 2, 'T', 2000.0), (4, 3, 'F', 500.0);
"""

# (question, gold SQL, prediction in SQLite SQL, the same prediction converted to DuckDB by hand)
QUESTIONS = [
    (
        "Shows per host?",
        "SELECT T1.host, count(*) FROM performance AS T1 JOIN show AS T2 ON T1.performance_id = T2.performance_id "
        "GROUP BY T1.host",
        # a bare column in GROUP BY (SQLite takes it from any row of the group)
        "SELECT T1.host, count(*) FROM performance AS T1 JOIN show AS T2 ON T1.performance_id = T2.performance_id "
        "GROUP BY T2.performance_id",
        'SELECT ANY_VALUE(T1.host) AS host, count(*) FROM performance AS T1 JOIN "show" AS T2 '
        "ON T1.performance_id = T2.performance_id GROUP BY T2.performance_id",
    ),
    (
        "How many shows had more than 1000 people?",
        "SELECT count(*) FROM show WHERE attendance > 1000",
        "SELECT count(*) FROM show WHERE attendance >= 1001",  # `show` as SQLite allows it unquoted
        'SELECT count(*) FROM "show" WHERE attendance >= 1001',
    ),
    (
        "Results of shows numbered above 100?",
        "SELECT result FROM show WHERE show_id > 100",
        # a number compared with text: empty in SQLite (any number sorts before any text), not an error
        "SELECT result FROM show WHERE show_id BETWEEN 'abc' AND 'abc'",
        'SELECT result FROM "show" WHERE FALSE',
    ),
    (
        "Results of shows numbered above 200?",
        "SELECT result FROM show WHERE show_id > 200",
        "SELECT result FROM show WHERE show_id < 'abc'",  # every number is less than 'abc': all rows, wrong
        'SELECT result FROM "show" WHERE show_id IS NOT NULL',
    ),
    (
        "Average share?",
        "SELECT avg(share) FROM performance",  # avg over numeric text: kept by the import
        "SELECT avg(share) FROM performance",
        "SELECT avg(TRY_CAST(share AS DOUBLE)) FROM performance",
    ),
    ("Number of hosts?", "SELECT count(*) FROM performance", "SELECT FROM WHERE (", "SELECT FROM WHERE ("),
]


def _spider(root: Path) -> Path:
    db = root / "database" / "orchestra" / "orchestra.sqlite"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)
    con.executescript(ORCHESTRA_SQL)
    con.commit()
    con.close()
    questions = [{"db_id": "orchestra", "question": q, "query": gold} for q, gold, _, _ in QUESTIONS]
    (root / "dev.json").write_text(json.dumps(questions))
    (root / "tables.json").write_text(json.dumps([]))
    return root


def _registry(tmp_path: Path, predicted: Path, by_hand: Path) -> Path:
    registry = tmp_path / "models.yml"
    registry.write_text(
        "models:\n"
        f"  spider-replay:\n    kind: predictions\n    path: {predicted}\n    format: lines\n"
        "    source_dialect: sqlite\n"
        f"  by-hand:\n    kind: predictions\n    path: {by_hand}\n    format: lines\n"
    )
    return registry


@pytest.fixture
def imported(tmp_path):
    out = tmp_path / "gold" / "spider-dev.jsonl"
    import_benchmark("spider", _spider(tmp_path / "spider"), out)
    return load_cases(out), out.parent


def _evaluate(cases, gold_dir: Path, spec):
    resolve = lambda database: gold_dir / database  # noqa: E731  (relative to the gold file)
    records = generate_candidates(cases, spec, cache=None, context=None, resolve_database=resolve)
    attempts = execute_attempts(cases, attempts_from_candidates(records), PolicyGate(resolve))
    verdicts = judge(cases, run_oracle(cases, resolve), attempts, resolve_database=resolve)
    return records, verdicts, score_run(verdicts)


def test_spider_predictions_in_sqlite_score_what_their_conversion_by_hand_scores(tmp_path, imported):
    cases, gold_dir = imported
    assert len(cases) == len(QUESTIONS), "every gold query is kept (avg over numeric text included)"
    predicted, by_hand = tmp_path / "predicted_sql.txt", tmp_path / "by_hand.txt"
    predicted.write_text("".join(f"{sqlite}\torchestra\n" for _, _, sqlite, _ in QUESTIONS))
    by_hand.write_text("".join(f"{duckdb}\n" for _, _, _, duckdb in QUESTIONS))
    models = load_registry(_registry(tmp_path, predicted, by_hand))

    records, verdicts, scores = _evaluate(cases, gold_dir, models["spider-replay"])
    _, hand_verdicts, hand_scores = _evaluate(cases, gold_dir, models["by-hand"])

    assert [v.correct for v in verdicts] == [v.correct for v in hand_verdicts] == [True, True, True, False, True, False]
    assert scores["semantic_correctness_rate"] == hand_scores["semantic_correctness_rate"] == pytest.approx(4 / 6)
    # the number compared with text follows SQLite: empty for BETWEEN 'abc' AND 'abc', every row for < 'abc'
    assert verdicts[2].outcome == outcomes.CORRECT and verdicts[3].outcome == outcomes.WRONG_RESULT
    # a prediction that does not convert is the model's miss, classified, with its SQL kept
    broken = records[5]
    assert broken.generated_sql is None and broken.error_class == CONVERSION_FAILED
    assert "does not parse as sqlite" in (broken.error_message or "") and f"{predicted}:6" in broken.error_message
    assert verdicts[5].outcome == outcomes.GENERATION_ERROR and verdicts[5].source_sql == "SELECT FROM WHERE ("

    stored = verdicts_from_frame(verdicts_to_frame(verdicts, gold_set="spider-dev", model="spider-replay"))
    for verdict, (_, _, sqlite_sql, _) in zip(stored[:5], QUESTIONS):
        assert verdict.source_sql == sqlite_sql  # the original, as the file gives it
        assert verdict.generated_sql is not None and verdict.generated_sql != sqlite_sql  # its DuckDB conversion
    assert '"show"' in stored[1].generated_sql and "ANY_VALUE" in stored[0].generated_sql
    assert all(v.source_sql is None for v in hand_verdicts), "DuckDB predictions are used as written"


def test_the_replay_reads_the_column_types_the_import_saw(tmp_path, imported):
    """A text column is compared as text (the import's TEXT affinity), a mixed one cast: the side file
    holds what the SQLite file said; without it the DuckDB catalog stands in."""
    _, gold_dir = imported
    database = gold_dir / "databases" / "orchestra.duckdb"
    assert column_info_path(database).is_file()
    columns = read_column_info(database)
    assert columns["performance"]["share"].affinity == "TEXT" and columns["show"]["attendance"].duckdb_type == "DOUBLE"
    column_info_path(database).unlink()
    fallback = read_column_info(database)
    assert fallback["performance"]["share"].duckdb_type == "VARCHAR"
    assert fallback["show"]["show_id"].duckdb_type == "BIGINT"


def test_source_dialect_is_checked_and_part_of_the_config_hash(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("SELECT 1\n")
    registry = tmp_path / "models.yml"
    registry.write_text(f"models:\n  r:\n    kind: predictions\n    path: {path}\n    format: lines\n")
    plain = load_registry(registry)["r"]
    registry.write_text(registry.read_text() + "    source_dialect: SQLite\n")
    sqlite = load_registry(registry)["r"]
    assert plain.predictions is not None and plain.predictions.source_dialect is None
    assert sqlite.predictions is not None and sqlite.predictions.source_dialect == "sqlite"
    assert plain.config_hash != sqlite.config_hash
    assert "source_dialect" not in plain.canonical_config(), "an entry without it keeps its hash"
    registry.write_text(registry.read_text().replace("SQLite", "klingon"))
    with pytest.raises(ConfigError, match="source_dialect.*unknown SQL dialect 'klingon'"):
        load_registry(registry)
    registry.write_text(
        "models:\n  m:\n    kind: offline\n    model: nl2sql-offline/gold-echo\n    source_dialect: sqlite\n"
    )
    with pytest.raises(ConfigError, match="only used by kind: predictions"):
        load_registry(registry)
