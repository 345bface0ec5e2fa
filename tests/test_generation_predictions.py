"""Replay models (kind: predictions): JSONL and one-SQL-per-line files, aligned with the gold set or refused."""

from __future__ import annotations

import json

import pytest

from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.generation import generate_candidates
from nl2sql_pipeline.generation.predictions import PredictionsError, prediction_records
from nl2sql_pipeline.generation.registry import load_registry


def case(case_id: str, database: str = "anime_platform", **extra):
    data = {
        "id": case_id,
        "domain": "d",
        "category": "single_table",
        "question": f"q {case_id}?",
        "database": database,
        "expected_sql": f"SELECT '{case_id}'",
    }
    data.update(extra)
    return case_from_dict(data)


PROBE = case_from_dict(
    {
        "id": "p1",
        "domain": "d",
        "category": "policy_rejection",
        "question": "drop?",
        "database": "anime_platform",
        "expected_outcome": "policy_rejection",
        "policy_probe_sql": "DROP TABLE users",
    }
)
CASES = [case("a"), PROBE, case("b"), case("c", database="shop")]


def replay(tmp_path, text: str, fmt: str = "jsonl"):
    path = tmp_path / f"predictions.{fmt}"
    path.write_text(text, encoding="utf-8")
    registry = tmp_path / "models.yml"
    registry.write_text(f"models:\n  replay:\n    kind: predictions\n    path: {path}\n    format: {fmt}\n")
    return load_registry(registry)["replay"], path


def jsonl(*rows: dict) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def test_jsonl_predictions_become_candidates_in_gold_order(tmp_path):
    spec, _ = replay(
        tmp_path,
        jsonl(
            {"case_id": "c", "sql": "SELECT 3;"},
            {"case_id": "a", "sql": " SELECT 1 "},
            {"case_id": "b", "sql": None, "note": "no answer"},
        )
        + "\n",
    )
    records = generate_candidates(CASES, spec, cache=None, context=None, samples=2)
    assert [(r.case_id, r.sample_index) for r in records] == [(c, s) for c in "abc" for s in range(2)]
    by_case = {r.case_id: r for r in records}
    assert by_case["a"].generated_sql == "SELECT 1" and by_case["c"].generated_sql == "SELECT 3"
    assert by_case["b"].generated_sql is None and by_case["b"].error_class == "no_sql"
    assert "predictions.jsonl:3" in by_case["b"].error_message
    for record in records:
        assert record.model_config_hash == spec.config_hash and record.calls == 0
        assert record.latency_ms is None and record.cost_usd is None and record.token_source is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("not json\n", r"predictions.jsonl:1: malformed JSON at column 1"),
        ("[1]\n", r"predictions.jsonl:1: line is a JSON list, not an object"),
        ('{"case_id": "a", "sql": "S", "sql": "T"}\n', r"predictions.jsonl:1: key 'sql' appears twice"),
        (jsonl({"sql": "SELECT 1"}), r"predictions.jsonl:1: each line needs a string \"case_id\""),
        (jsonl({"case_id": "a", "sql": 1}), r"predictions.jsonl:1: case 'a': \"sql\" must be a string or null"),
        (jsonl({"case_id": "a"}), r"\"sql\" must be a string or null"),
        (
            jsonl({"case_id": "a", "sql": "S"}, {"case_id": "b", "sql": "S"}, {"case_id": "a", "sql": "S"}),
            r"predictions.jsonl:3: case 'a' again \(first on line 1\)",
        ),
        (jsonl({"case_id": "p1", "sql": "S"}), r"predictions.jsonl:1: case 'p1' is a policy probe"),
        (jsonl({"case_id": "zzz", "sql": "S"}), r"predictions.jsonl:1: case 'zzz' is not in the gold set"),
        (jsonl({"case_id": "a", "sql": "S"}), r"predictions.jsonl: 2 of 3 query cases have no prediction \(b, c\)"),
    ],
)
def test_jsonl_misalignment_is_an_error_naming_file_and_line(tmp_path, text, expected):
    spec, _ = replay(tmp_path, text)
    with pytest.raises(PredictionsError, match=expected):
        prediction_records(CASES, spec)


def test_lines_follow_the_gold_order_of_query_cases(tmp_path):
    spec, _ = replay(tmp_path, "SELECT 1;\n\nSELECT 3\t----- bird -----\tshop\n", fmt="lines")
    records = prediction_records(CASES, spec)
    assert [(r.case_id, r.generated_sql, r.error_class) for r in records] == [
        ("a", "SELECT 1", None),
        ("b", None, "no_sql"),
        ("c", "SELECT 3", None),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("SELECT 1\nSELECT 2\n", r"predictions.lines: 2 lines for 3 query cases"),
        ("SELECT 1\nSELECT 2\nSELECT 3\nSELECT 4\n", r"4 lines for 3 query cases"),
        ("", r"0 lines for 3 query cases"),
        # Spider-style "SQL<TAB>db_id": a shifted file is caught where the databases differ
        (
            "SELECT 1\tanime_platform\nSELECT 3\tshop\nSELECT 2\tanime_platform\n",
            r"predictions.lines:2: names database 'shop' but line 2 answers case b of 'anime_platform'",
        ),
    ],
)
def test_lines_misalignment_is_an_error(tmp_path, text, expected):
    spec, _ = replay(tmp_path, text, fmt="lines")
    with pytest.raises(PredictionsError, match=expected):
        prediction_records(CASES, spec)


def test_a_missing_file_is_a_clear_error(tmp_path):
    spec, path = replay(tmp_path, "")
    path.unlink()
    with pytest.raises(PredictionsError, match="predictions file not found"):
        prediction_records(CASES, spec)
