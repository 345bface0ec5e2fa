"""The evaluation stages on a tiny database: execution, candidate selection, alternatives, outcomes."""

from __future__ import annotations

import time

import duckdb
import pandas as pd
import pytest

from nl2sql_pipeline import outcomes
from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.evaluation import PolicyGate, execute_candidates, judge, run_oracle
from nl2sql_pipeline.execution import SandboxLimits


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "tiny.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE anime (anime_id INTEGER, title VARCHAR, format VARCHAR)")
    con.execute("INSERT INTO anime VALUES (1, 'A', 'TV'), (2, 'B', 'TV'), (3, 'C', 'Movie')")
    con.execute("CREATE TABLE users (user_id INTEGER, email VARCHAR)")
    con.execute("INSERT INTO users VALUES (1, 'a@x')")
    con.close()
    return path


def _case(case_id: str, sql, **extra):
    return case_from_dict({"id": case_id, "domain": "d", "category": "single_table", "question": "q",
                           "database": "tiny", "expected_sql": sql, **extra})


def _candidates(rows):
    return pd.DataFrame([
        {"case_id": c, "sample_index": s, "candidate_index": i, "generated_sql": sql, "error_class": err,
         "latency_ms": 5.0, "input_tokens": 10, "output_tokens": 5, "token_source": "measured", "cost_usd": 0.0,
         "cached": False, "cold_start": False, "mutation": None}
        for c, s, i, sql, err in rows
    ])


def _run(db, cases, candidates, **kwargs):
    resolve = lambda _name: db  # noqa: E731
    oracle = run_oracle(cases, resolve)
    results = execute_candidates(cases, candidates, resolve, PolicyGate(resolve), **kwargs)
    return judge(cases, oracle, results, candidates).set_index("case_id")


def test_outcome_classes(db):
    cases = [_case("ok", "SELECT COUNT(*) FROM anime"), _case("wrong", "SELECT COUNT(*) FROM anime"),
             _case("err", "SELECT COUNT(*) FROM anime"), _case("pol", "SELECT COUNT(*) FROM anime"),
             _case("gen", "SELECT COUNT(*) FROM anime"), _case("skip", "SELECT COUNT(*) FROM anime")]
    candidates = _candidates([
        ("ok", 0, 0, "SELECT COUNT(anime_id) FROM anime", None),
        ("wrong", 0, 0, "SELECT COUNT(*) FROM anime WHERE format = 'TV'", None),
        ("err", 0, 0, "SELECT nope FROM anime", None),
        ("pol", 0, 0, "SELECT email FROM users", None),
        ("gen", 0, 0, None, "no_sql"),
        ("skip", 0, 0, None, "daily_quota_exhausted"),
    ])
    verdicts = _run(db, cases, candidates)
    assert verdicts.loc["ok", "outcome"] == outcomes.CORRECT and verdicts.loc["ok", "comparison_rule"]
    assert verdicts.loc["wrong", "outcome"] == outcomes.WRONG_RESULT and "row" in verdicts.loc["wrong", "reason"]
    assert verdicts.loc["err", "outcome"] == outcomes.EXECUTION_ERROR
    assert verdicts.loc["pol", "outcome"] == outcomes.POLICY_REJECTED and verdicts.loc["pol", "policy_rule"]
    assert verdicts.loc["gen", "outcome"] == outcomes.GENERATION_ERROR
    assert verdicts.loc["skip", "outcome"] == outcomes.SKIPPED and verdicts.loc["skip", "skip_reason"]


def test_any_acceptable_alternative_matches(db):
    case = _case("alt", ["SELECT title FROM anime WHERE format = 'TV'", "SELECT title, format FROM anime WHERE format = 'TV'"])
    verdicts = _run(db, [case], _candidates([("alt", 0, 0, "SELECT title, format FROM anime WHERE format <> 'Movie'", None)]))
    assert verdicts.loc["alt", "outcome"] == outcomes.CORRECT


def test_execution_consistency_picks_the_majority_result_and_reports_the_first(db):
    case = _case("sel", "SELECT COUNT(*) FROM anime", candidate_selection=3)
    candidates = _candidates([
        ("sel", 0, 0, "SELECT COUNT(*) FROM anime WHERE format = 'TV'", None),   # first: wrong
        ("sel", 0, 1, "SELECT COUNT(*) FROM anime", None),
        ("sel", 0, 2, "SELECT COUNT(title) FROM anime", None),                   # agrees with candidate 1
    ])
    verdict = _run(db, [case], candidates).loc["sel"]
    assert verdict["selected_candidate_index"] == 1
    assert verdict["correct"] and not verdict["first_candidate_correct"]
    assert verdict["candidate_count"] == 3 and verdict["input_tokens"] == 30


def test_a_failing_oracle_is_an_environment_error_not_a_model_miss(db):
    case = _case("broken", "SELECT CAST(title AS INTEGER) FROM anime")
    verdict = _run(db, [case], _candidates([("broken", 0, 0, "SELECT 1", None)])).loc["broken"]
    assert verdict["outcome"] == outcomes.ENVIRONMENT_ERROR


def test_isolated_execution_kills_a_query_that_ignores_interrupt(db):
    case = _case("slow", "SELECT COUNT(*) FROM anime")
    hog = "SELECT length(repeat('x', 2000000000)) AS n"  # ignores interrupt: ~10 s in-process
    started = time.monotonic()
    verdicts = _run(db, [case], _candidates([("slow", 0, 0, hog, None)]),
                    limits=SandboxLimits(timeout_s=0.5), isolated=True)
    assert verdicts.loc["slow", "outcome"] == outcomes.TIMEOUT
    assert time.monotonic() - started < 8
