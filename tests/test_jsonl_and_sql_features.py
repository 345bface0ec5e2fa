"""The one JSONL reader/writer and the one SQL-features classifier."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlglot.errors import SqlglotError

from nl2sql_pipeline.config.jsonl import parse_jsonl, render_jsonl, write_jsonl_lines
from nl2sql_pipeline.gold.builtin.sql_analysis import structural_tags
from nl2sql_pipeline.gold.formats.team_files import infer_category
from nl2sql_pipeline.sql.features import FEATURES, sql_features


def test_parse_jsonl_reports_every_bad_line_at_its_line() -> None:
    raw = b'\xef\xbb\xbf{"a": 1}\n\nnot json\n[1]\n{"a": 1, "a": 2}\n{"b": NaN}\n\xff\n{"c": 3}\n'
    lines, problems = parse_jsonl(raw, "f.jsonl")
    assert [(item.line, item.value, item.text) for item in lines] == [
        (1, {"a": 1}, '{"a": 1}'),
        (8, {"c": 3}, '{"c": 3}'),
    ]
    assert [p.split(":")[1] for p in problems] == ["7", "3", "4", "5", "6"]
    assert all(p.startswith("f.jsonl:") and p.endswith(")") for p in problems)
    assert "key 'a' appears twice" in problems[3] and "NaN is not valid JSON" in problems[4]


def test_write_jsonl_lines_is_deterministic_and_replaces_atomically(tmp_path: Path) -> None:
    target = tmp_path / "out" / "x.jsonl"
    write_jsonl_lines(target, ['{"a": 1}', '{"b": "é"}'])
    assert (
        target.read_bytes()
        == render_jsonl(['{"a": 1}', '{"b": "é"}']).encode("utf-8")
        == b'{"a": 1}\n{"b": "\xc3\xa9"}\n'
    )
    write_jsonl_lines(target, ['{"c": 3}'])
    assert target.read_text(encoding="utf-8") == '{"c": 3}\n'
    assert [p.name for p in target.parent.iterdir()] == ["x.jsonl"]  # no temp file left behind


@pytest.mark.parametrize(
    ("sql", "present", "absent"),
    [
        (
            "SELECT a FROM t JOIN u ON t.id = u.id LEFT JOIN v ON v.id = u.id",
            {"join", "left_join", "multi_hop"},
            {"aggregate"},
        ),
        ("SELECT SUM(x) OVER (ORDER BY y) FROM t", {"window"}, {"aggregate", "order_by"}),
        (
            "SELECT g, AVG(CASE WHEN ok THEN 1 ELSE 0 END) FROM t GROUP BY g HAVING COUNT(*) > 1",
            {"aggregate", "group_by", "having", "case_when", "ratio"},
            {"filter"},
        ),
        ("WITH c AS (SELECT 1 AS x) SELECT x FROM c UNION SELECT 2", {"cte", "set_op"}, {"join"}),
        (
            "SELECT * FROM t WHERE d >= DATE '2026-01-01' ORDER BY d LIMIT 5",
            {"filter", "date_range", "temporal_cast", "order_by", "top_n", "date_literal_filter"},
            {"date_function"},
        ),
        (
            "SELECT * FROM t o WHERE EXISTS (SELECT 1 FROM u WHERE u.id = o.id)",
            {"subquery", "correlated_subquery"},
            set(),
        ),
        (
            "SELECT year(d) FROM t WHERE name ILIKE '%a%' AND x IS NULL",
            {"date_function", "string_match", "null_handling"},
            set(),
        ),
    ],
)
def test_features_name_what_the_tree_holds(sql: str, present: set[str], absent: set[str]) -> None:
    features = sql_features(sql)
    assert present <= features.names and not (absent & features.names)
    assert features.names <= {name for name, _ in FEATURES}


def test_importer_and_generator_derive_from_the_same_features() -> None:
    sql = "SELECT a.title FROM anime a JOIN anime_genres g ON g.anime_id = a.id WHERE a.aired >= DATE '2020-01-01'"
    assert infer_category(sql) == "multi_table"
    assert {"join", "bridge", "filter", "date_range"} <= structural_tags(sql)
    assert infer_category("SELECT * FROM t WHERE d > '2024-01-01'") == "time"
    assert infer_category("SELECT COUNT(*) FROM t") == "single_table"
    assert infer_category("SELEC nonsense (((") == "single_table"
    with pytest.raises(SqlglotError):
        sql_features("SELECT (((")
