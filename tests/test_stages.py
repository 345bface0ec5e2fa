"""The evaluation stages on a tiny database: execution, candidate selection, alternatives, outcomes.

The stages are fed records and return records; the last test sends them through the frame codec between
every stage (as the assets do) and gets the same verdicts.
"""

from __future__ import annotations

from dataclasses import replace

import duckdb
import pytest
from verdict_factory import make_candidate

from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.execution import SandboxLimits
from nl2sql_pipeline.policy.gate import PolicyGate
from nl2sql_pipeline.results import frames as codec
from nl2sql_pipeline.stages import execute_attempts, judge, outcomes, run_oracle
from nl2sql_pipeline.stages.records import attempts_from_candidates


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
    return case_from_dict(
        {
            "id": case_id,
            "domain": "d",
            "category": "single_table",
            "question": "q",
            "database": "tiny",
            "expected_sql": sql,
            **extra,
        }
    )


def _candidates(rows):
    return [
        make_candidate(
            c, sql, sample_index=s, candidate_index=i, error_class=err, latency_ms=5.0, input_tokens=10, output_tokens=5
        )
        for c, s, i, sql, err in rows
    ]


def _run(db, cases, candidates, **kwargs):
    resolve = lambda _name: db  # noqa: E731
    oracle = run_oracle(cases, resolve)
    attempts = execute_attempts(cases, attempts_from_candidates(candidates), PolicyGate(resolve), **kwargs)
    return codec.verdicts_to_frame(judge(cases, oracle, attempts)).set_index("case_id")


def test_outcome_classes(db):
    cases = [
        _case("ok", "SELECT COUNT(*) FROM anime"),
        _case("wrong", "SELECT COUNT(*) FROM anime"),
        _case("err", "SELECT COUNT(*) FROM anime"),
        _case("pol", "SELECT COUNT(*) FROM anime"),
        _case("gen", "SELECT COUNT(*) FROM anime"),
        _case("skip", "SELECT COUNT(*) FROM anime"),
    ]
    candidates = _candidates(
        [
            ("ok", 0, 0, "SELECT COUNT(anime_id) FROM anime", None),
            ("wrong", 0, 0, "SELECT COUNT(*) FROM anime WHERE format = 'TV'", None),
            ("err", 0, 0, "SELECT nope FROM anime", None),
            ("pol", 0, 0, "SELECT email FROM users", None),
            ("gen", 0, 0, None, "no_sql"),
            ("skip", 0, 0, None, "daily_quota_exhausted"),
        ]
    )
    verdicts = _run(db, cases, candidates)
    assert verdicts.loc["ok", "outcome"] == outcomes.CORRECT and verdicts.loc["ok", "comparison_rule"]
    assert verdicts.loc["wrong", "outcome"] == outcomes.WRONG_RESULT and "row" in verdicts.loc["wrong", "reason"]
    assert verdicts.loc["err", "outcome"] == outcomes.EXECUTION_ERROR
    assert verdicts.loc["pol", "outcome"] == outcomes.POLICY_REJECTED and verdicts.loc["pol", "policy_rule"]
    assert verdicts.loc["gen", "outcome"] == outcomes.GENERATION_ERROR
    assert verdicts.loc["skip", "outcome"] == outcomes.SKIPPED and verdicts.loc["skip", "skip_reason"]


@pytest.mark.parametrize("truncated", ["SELECT COUNT(*) FROM anime WHERE format = 'TV", "SELECT 1 /* cut"])
def test_a_truncated_answer_is_judged_not_a_crash(db, truncated):
    """An answer cut off inside a quote or a comment (an LLM at its token limit) does not tokenize: it gets a
    failing verdict with its reason, and the other cases are judged as usual."""
    cases = [_case("cut", "SELECT COUNT(*) FROM anime"), _case("ok", "SELECT COUNT(*) FROM anime")]
    candidates = _candidates([("cut", 0, 0, truncated, None), ("ok", 0, 0, "SELECT COUNT(*) FROM anime", None)])
    verdicts = _run(db, cases, candidates)
    assert verdicts.loc["cut", "outcome"] in (outcomes.POLICY_REJECTED, outcomes.EXECUTION_ERROR)
    assert verdicts.loc["cut", "grade"] == "fail" and verdicts.loc["cut", "reason"]
    assert verdicts.loc["ok", "outcome"] == outcomes.CORRECT


def test_any_acceptable_alternative_matches(db):
    case = _case(
        "alt", ["SELECT title FROM anime WHERE format = 'TV'", "SELECT title, format FROM anime WHERE format = 'TV'"]
    )
    verdicts = _run(
        db, [case], _candidates([("alt", 0, 0, "SELECT title, format FROM anime WHERE format <> 'Movie'", None)])
    )
    assert verdicts.loc["alt", "outcome"] == outcomes.CORRECT


def test_execution_consistency_picks_the_majority_result_and_reports_the_first(db):
    case = _case("sel", "SELECT COUNT(*) FROM anime", candidate_selection=3)
    candidates = _candidates(
        [
            ("sel", 0, 0, "SELECT COUNT(*) FROM anime WHERE format = 'TV'", None),  # first: wrong
            ("sel", 0, 1, "SELECT COUNT(*) FROM anime", None),
            ("sel", 0, 2, "SELECT COUNT(title) FROM anime", None),  # agrees with candidate 1
        ]
    )
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
    verdicts = _run(
        db, [case], _candidates([("slow", 0, 0, hog, None)]), limits=SandboxLimits(timeout_s=0.5), isolated=True
    )
    assert verdicts.loc["slow", "outcome"] == outcomes.TIMEOUT
    # the subprocess backstop fired: the query was killed, not merely interrupted
    assert "ignored interrupt and its process was killed" in verdicts.loc["slow", "reason"]


def test_the_stages_give_the_same_verdicts_through_the_frame_codec(db, tmp_path):
    """Records stored as Parquet between every stage (as the assets do) judge exactly like records in memory."""
    import pandas as pd

    def through_parquet(frame, name):
        path = tmp_path / f"{name}.parquet"
        frame.to_parquet(path, index=False)
        return pd.read_parquet(path)

    cases = [
        _case("ok", "SELECT COUNT(*) FROM anime"),
        _case("pol", "SELECT COUNT(*) FROM anime"),
        _case("gen", "SELECT COUNT(*) FROM anime"),
        _case("sel", "SELECT COUNT(*) FROM anime", candidate_selection=2),
        case_from_dict(
            {
                "id": "probe",
                "domain": "d",
                "category": "policy_rejection",
                "question": "q",
                "database": "tiny",
                "expected_outcome": "policy_rejection",
                "policy_probe_sql": "DROP TABLE anime",
            }
        ),
    ]
    candidates = _candidates(
        [
            ("ok", 0, 0, "SELECT COUNT(anime_id) FROM anime", None),
            ("pol", 0, 0, "SELECT email FROM users", None),
            ("gen", 0, 0, None, "no_sql"),
            ("sel", 0, 0, "SELECT 2", None),
            ("sel", 0, 1, "SELECT COUNT(*) FROM anime", None),
            ("sel", 0, 2, "SELECT COUNT(title) FROM anime", None),
        ]
    )
    resolve = lambda _name: db  # noqa: E731
    oracle = run_oracle(cases, resolve)
    attempts = execute_attempts(cases, attempts_from_candidates(candidates), PolicyGate(resolve))
    in_memory = judge(cases, oracle, attempts)

    stored_cases = codec.cases_from_frame(through_parquet(codec.cases_to_frame(cases), "gold"))
    stored_candidates = codec.candidates_from_frame(through_parquet(codec.candidates_to_frame(candidates), "cand"))
    assert stored_candidates == candidates
    stored_oracle = codec.oracle_rows_from_frame(through_parquet(codec.oracle_rows_to_frame(oracle), "oracle"))
    assert stored_oracle == oracle
    executed = execute_attempts(stored_cases, attempts_from_candidates(stored_candidates), PolicyGate(resolve))
    stored_attempts = codec.attempts_from_frame(through_parquet(codec.attempts_to_frame(executed), "results"))
    assert [a.generation for a in stored_attempts] == [a.generation for a in attempts]
    stored = judge(stored_cases, stored_oracle, stored_attempts)
    untimed = lambda verdicts: [replace(v, execution_ms=None, oracle_latency_ms=None) for v in verdicts]  # noqa: E731
    assert untimed(stored) == untimed(in_memory)
    assert (
        [v.outcome for v in stored]
        == [v.outcome for v in in_memory]
        == [
            outcomes.CORRECT,
            outcomes.POLICY_REJECTED,
            outcomes.GENERATION_ERROR,
            outcomes.CORRECT,
            outcomes.PROBE_REJECTED,
        ]
    )
    assert codec.verdicts_from_frame(through_parquet(codec.verdicts_to_frame(stored), "verdicts")) == stored


def test_a_miss_reads_the_canonical_clause_items_the_oracle_stored(db, monkeypatch):
    import importlib

    from nl2sql_pipeline.compare import structure

    judge_module = importlib.import_module("nl2sql_pipeline.stages.judge")  # the package exports the function

    gold = "SELECT format, COUNT(*) AS n FROM anime GROUP BY format ORDER BY format"
    cases = [_case("miss", gold)]
    resolve = lambda _name: db  # noqa: E731
    oracle = run_oracle(cases, resolve)
    assert oracle[0].clause_items == structure.parse_clauses(gold)
    stored = codec.oracle_rows_from_frame(codec.oracle_rows_to_frame(oracle))
    parsed = []
    monkeypatch.setattr(judge_module, "parse_clauses", lambda sql: parsed.append(sql) or structure.parse_clauses(sql))
    candidate = "SELECT format, COUNT(*) AS n FROM anime WHERE anime_id > 1 GROUP BY format ORDER BY format"
    attempts = execute_attempts(
        cases, attempts_from_candidates(_candidates([("miss", 0, 0, candidate, None)])), PolicyGate(resolve)
    )
    verdict = judge(cases, stored, attempts)[0]
    assert verdict.outcome == outcomes.WRONG_RESULT and parsed == [candidate]  # the gold's items were not parsed again
    assert verdict.clause_scores["where"] == 0.0 and verdict.clause_scores["group_by"] == 1.0
    without = [replace(row, clause_items=None) for row in oracle]  # an oracle stored before the items were
    assert judge(cases, without, attempts)[0] == verdict and parsed[1:] == [gold, candidate]


def test_execution_reads_the_policys_schema_in_the_sandbox_it_opens_anyway(db, monkeypatch):
    from nl2sql_pipeline.policy import schema as schema_module

    schema_module._SCHEMAS.clear()
    own_reads = []
    monkeypatch.setattr(schema_module, "_read_schema", lambda *args: own_reads.append(args))
    cases = [_case("c1", "SELECT title FROM anime WHERE format = 'TV'")]
    attempts = attempts_from_candidates(
        _candidates([("c1", 0, 0, "SELECT title FROM anime WHERE format = 'TV'", None)])
    )
    [done] = execute_attempts(cases, attempts, PolicyGate(lambda _name: db))
    assert done.policy_allowed and done.result.ok and sorted(done.result.rows) == [("A",), ("B",)]
    assert not own_reads  # no read-only instance of its own beside the sandbox
    assert schema_module.read_database_schema(db).has_relation("users")
    schema_module._SCHEMAS.clear()
