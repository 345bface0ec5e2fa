"""The frame codec: every stage record survives records -> frame -> Parquet -> records, and the stored
columns stay the ones readers of the Parquet files know."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from verdict_factory import make_verdict

from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.execution import QueryResult
from nl2sql_pipeline.generation import CandidateRecord
from nl2sql_pipeline.results import frames as codec
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import SOURCE_PROBE, Attempt, OracleRow


def _parquet(frame: pd.DataFrame, tmp_path, name: str = "frame") -> pd.DataFrame:
    path = tmp_path / f"{name}.parquet"
    frame.to_parquet(path, index=False)
    return pd.read_parquet(path)


RICH = QueryResult(
    ok=True,
    columns=["n", "price", "day", "at", "meta", "missing", "ratio"],
    column_types=["BIGINT", "DECIMAL(10,2)", "DATE", "TIMESTAMP", "STRUCT", "VARCHAR", "DOUBLE"],
    rows=[
        (
            2**70,
            Decimal("1.50"),
            dt.date(2024, 1, 31),
            dt.datetime(2024, 1, 31, 12, 30),
            {"a": [1, {"b": None}]},
            None,
            0.5,
        ),
        (-1, Decimal("-0.000"), dt.date(1970, 1, 1), dt.datetime(2000, 2, 29), {"$odd": 1}, "x", math.nan),
    ],
    elapsed_ms=1.25,
)


def _candidate(case_id: str = "c1", **overrides) -> CandidateRecord:
    values = dict(
        case_id=case_id,
        case_fingerprint="fp",
        sample_index=0,
        candidate_index=0,
        generated_sql="SELECT 1",
        raw_reply="```sql\nSELECT 1\n```",
        error_class=None,
        error_message=None,
        latency_ms=12.5,
        input_tokens=111,
        output_tokens=22,
        token_source="measured",
        cost_usd=None,
        cached=False,
        mutation=None,
        model_config_hash="hash",
        prompt_hash="p",
        turns=2,
        calls=1,
        attempts=1,
        cold_start=True,
    )
    return CandidateRecord(**{**values, **overrides})


def _same_result(a: QueryResult, b: QueryResult) -> None:
    assert (a.ok, a.columns, a.column_types, a.truncated, a.error_class, a.error_message, a.elapsed_ms) == (
        b.ok,
        b.columns,
        b.column_types,
        b.truncated,
        b.error_class,
        b.error_message,
        b.elapsed_ms,
    )
    assert len(a.rows) == len(b.rows)
    for row_a, row_b in zip(a.rows, b.rows):
        for x, y in zip(row_a, row_b, strict=True):
            if isinstance(x, float) and math.isnan(x):
                assert isinstance(y, float) and math.isnan(y)
            else:
                assert (x, type(x)) == (y, type(y))


def test_cases_round_trip_and_keep_case_json(tmp_path):
    cases = [
        case_from_dict(
            {
                "id": "q",
                "domain": "d",
                "category": "time",
                "question": "how many?",
                "database": "db",
                "expected_sql": ["SELECT 1", "SELECT 1 AS x"],
                "tags": ["a", "b"],
                "difficulty": "hard",
            }
        ),
        case_from_dict(
            {
                "id": "p",
                "domain": "d",
                "category": "policy_rejection",
                "question": "drop",
                "database": "db",
                "expected_outcome": "policy_rejection",
                "policy_probe_sql": "DROP TABLE t",
            }
        ),
    ]
    frame = _parquet(codec.cases_to_frame(cases), tmp_path)
    assert list(frame.columns) == list(codec.GOLD_COLUMNS) and "case_json" in frame.columns
    assert codec.cases_from_frame(frame) == cases


def test_candidates_round_trip_with_missing_values(tmp_path):
    records = [
        _candidate(),
        _candidate(
            "c2",
            generated_sql=None,
            raw_reply=None,
            error_class="no_sql",
            error_message="the reply holds no SQL",
            latency_ms=None,
            input_tokens=None,
            output_tokens=None,
            token_source=None,
            cost_usd=0.25,
            mutation="drop_limit",
            prompt_hash=None,
            cached=True,
            cold_start=False,
        ),
    ]
    frame = _parquet(codec.candidates_to_frame(records), tmp_path)
    assert list(frame.columns) == list(codec.CANDIDATE_COLUMNS)
    assert frame["latency_ms"].isna().tolist() == [False, True]  # stored as NaN by pandas ...
    assert codec.candidates_from_frame(frame) == records  # ... read back as None


def test_oracle_rows_round_trip_exact_values(tmp_path):
    failed = QueryResult.failure("timeout", "took too long", elapsed_ms=500.0)
    rows = [OracleRow("c1", "fp1", 0, RICH), OracleRow("c1", "fp1", 1, failed)]
    frame = _parquet(codec.oracle_rows_to_frame(rows, gold_fingerprint="g"), tmp_path)
    assert list(frame.columns) == [*codec.ORACLE_COLUMNS, "gold_fingerprint"]
    assert frame["row_count"].tolist() == [2, 0] and set(frame["gold_fingerprint"]) == {"g"}
    back = codec.oracle_rows_from_frame(frame)
    assert [(r.case_id, r.case_fingerprint, r.alternative_index) for r in back] == [("c1", "fp1", 0), ("c1", "fp1", 1)]
    _same_result(back[0].result, RICH)
    assert back[1].result == failed


def test_attempts_round_trip_model_rejected_and_probe(tmp_path):
    ran = Attempt.from_candidate(_candidate())
    ran = Attempt(
        **{
            **{f: getattr(ran, f) for f in ran.__slots__},
            "policy_allowed": True,
            "policy_name": "default",
            "executed": True,
            "result": RICH,
        }
    )
    rejected = Attempt(
        case_id="c2",
        case_fingerprint="fp",
        source="model",
        sample_index=1,
        candidate_index=2,
        sql="SELECT email FROM users",
        generation=_candidate("c2", sample_index=1, candidate_index=2, generated_sql="SELECT email FROM users"),
        policy_allowed=False,
        policy_rule="column_scope",
        policy_name="default",
        policy_reason="email",
    )
    probe = Attempt(
        case_id="p",
        case_fingerprint="fp",
        source=SOURCE_PROBE,
        sample_index=0,
        candidate_index=0,
        sql="DROP TABLE t",
        policy_name="default",
        policy_reason="policy engine error: boom",
    )
    frame = _parquet(codec.attempts_to_frame([ran, rejected, probe]), tmp_path)
    legacy = [
        "case_id",
        "case_fingerprint",
        "source",
        "sample_index",
        "candidate_index",
        "sql",
        "generation_error_class",
        "policy_allowed",
        "policy_rule",
        "policy_name",
        "policy_reason",
        "executed",
        "policy_ms",
        "result_ok",
        "result_rows",
        "result_row_count",
        "result_elapsed_ms",
    ]
    assert set(legacy) <= set(frame.columns)
    assert frame["policy_allowed"].tolist() == [True, False, None]
    back = codec.attempts_from_frame(frame)
    assert back[1:] == [rejected, probe] and back[2].generation is None
    assert back[0].generation == ran.generation and back[0].policy_allowed is True
    _same_result(back[0].result, RICH)


def test_verdicts_round_trip_with_partition_columns(tmp_path):
    verdicts = [
        make_verdict(),
        make_verdict(
            case_id="c2",
            tags=(),
            outcome=outcomes.CORRECT,
            correct=True,
            score_exact=1.0,
            score_partial=1.0,
            comparison_rule="multiset_exact",
            latency_ms=10.0,
            input_tokens=30.0,
            output_tokens=5.0,
            token_source="measured",
            cost_usd=0.0,
            cached=True,
            cold_start=True,
            mutation="swap",
            first_candidate_correct=True,
        ),
    ]
    frame = _parquet(codec.verdicts_to_frame(verdicts, gold_set="g", model="m", model_config_hash="h"), tmp_path)
    assert list(frame.columns) == ["gold_set", "model", *codec.VERDICT_COLUMNS, "model_config_hash"]
    assert frame["tags"].tolist() == ["filter,prompt_injection", ""]
    assert codec.verdicts_from_frame(frame) == verdicts
    assert codec.model_config_hash_of(frame) == "h"


def test_run_scores_store_nested_values_as_json_and_read_back_real_ones(tmp_path):
    scores = score_run([make_verdict(), make_verdict(case_id="c2", outcome=outcomes.CORRECT, correct=True, domain="e")])
    frame = _parquet(codec.run_scores_to_frame(scores, gold_set="g", model="m", run_id="r"), tmp_path)
    assert list(frame.columns)[:3] == ["gold_set", "model", "run_id"]
    assert json.loads(frame.loc[0, "per_domain"]) == scores["per_domain"]  # JSON text in storage
    assert json.loads(frame.loc[0, "warnings"]) == scores["warnings"]
    identity, back = codec.run_scores_from_frame(frame)
    assert identity == {"gold_set": "g", "model": "m", "run_id": "r"}
    assert back.as_dict() == scores.as_dict()
    assert back["p50_latency_ms"] is None  # NaN in the frame, None in the record
    assert isinstance(back["outcome_counts"], dict)


def test_a_frame_without_the_needed_columns_is_a_codec_error():
    with pytest.raises(codec.FrameCodecError, match="case_id"):
        codec.attempts_from_frame(pd.DataFrame({"sql": ["SELECT 1"]}))
    assert codec.attempts_from_frame(pd.DataFrame()) == []


def test_oracle_rows_carry_the_canonical_clause_items_and_ignore_other_versions():
    from nl2sql_pipeline.compare import structure

    items = structure.parse_clauses("select a, count(*) from t where b > 1 group by a order by a limit 3")
    result = QueryResult(
        ok=True,
        columns=["a"],
        column_types=["INTEGER"],
        rows=[(1,)],
        truncated=False,
        error_class=None,
        error_message=None,
        elapsed_ms=1.0,
    )
    rows = [OracleRow("c1", "f1", 0, result, items), OracleRow("c1", "f1", 1, result)]
    frame = codec.oracle_rows_to_frame(rows)
    back = codec.oracle_rows_from_frame(frame)
    assert back[0].clause_items == items and back[1].clause_items is None
    stale = json.loads(frame.loc[0, "clause_items"]) | {"version": structure.CLAUSE_ITEMS_VERSION + 1}
    frame.loc[0, "clause_items"] = json.dumps(stale)
    assert codec.oracle_rows_from_frame(frame)[0].clause_items is None  # made by another version: worked out again
    older = codec.oracle_rows_to_frame(rows).drop(columns=["clause_items"])  # stored before the column existed
    assert [row.clause_items for row in codec.oracle_rows_from_frame(older)] == [None, None]


def test_the_reports_samples_read_only_the_results_they_show(tmp_path):
    failed = QueryResult.failure("timeout", "took too long", elapsed_ms=500.0)
    other = QueryResult(ok=True, columns=["n"], column_types=["INTEGER"], rows=[(1,)])
    oracle = [OracleRow("c1", "fp", 1, failed), OracleRow("c1", "fp", 0, RICH), OracleRow("c2", "fp", 0, other)]
    frame = _parquet(codec.oracle_rows_to_frame(oracle), tmp_path, "oracle")
    first = codec.first_alternative_results(frame)
    assert set(first) == {"c1", "c2"} and first["c2"] == other
    _same_result(first["c1"], RICH)  # the lowest alternative, wherever its row is
    ran = Attempt("c1", "fp", "model", 0, 0, "SELECT 1", executed=True, result=other)
    again = Attempt("c1", "fp", "model", 0, 0, "SELECT 2", executed=True, result=RICH)
    rejected = Attempt("c2", "fp", "model", 0, 1, "SELECT email", policy_allowed=False)
    frame = _parquet(codec.attempts_to_frame([ran, again, rejected]), tmp_path, "attempts")
    results = codec.attempt_results(frame, {("c1", 0, 0), ("c2", 0, 1), ("c3", 0, 0)})
    assert set(results) == {("c1", 0, 0), ("c2", 0, 1)} and results[("c2", 0, 1)] is None
    _same_result(results[("c1", 0, 0)], RICH)  # the last row of a key, as attempts_from_frame has it


def test_answer_only_verdict_stores_correct_and_scores_as_null_and_reads_back(tmp_path):
    answer_only = make_verdict(case_id="a1", outcome=outcomes.ANSWER_ONLY, category="answer")
    right = make_verdict(case_id="c2", outcome=outcomes.CORRECT, correct=True, score_exact=1.0, score_partial=1.0)
    frame = _parquet(codec.verdicts_to_frame([answer_only, right], gold_set="g", model="gold-echo"), tmp_path)
    for column in ("correct", "score_exact", "score_partial"):
        assert frame[column].isna().tolist() == [True, False], column  # n/a, not a miss
    assert codec.verdicts_from_frame(frame) == [answer_only, right]  # the record keeps False / 0.0
    again = codec.verdicts_to_frame(codec.verdicts_from_frame(frame), gold_set="g", model="gold-echo")
    assert again["correct"].isna().tolist() == [True, False]  # NULL round-trips
    con = duckdb.connect()
    con.execute(f"CREATE VIEW verdicts AS SELECT * FROM read_parquet('{tmp_path / 'frame.parquet'}')")
    misses = con.execute("SELECT count(*) FROM verdicts WHERE NOT correct").fetchone()
    assert misses == (0,)  # the README's misses query lists no answer-only case
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    by_category = readme.split("-- correctness by category\n", 1)[1].split(";", 1)[0]
    rates = con.execute("SELECT model, category, avg(correct::INT) AS rate, count(*) AS n\n" + by_category).fetchall()
    assert rates == [("gold-echo", "time", 1.0, 1)]  # the README's query: the answer-only case left out
