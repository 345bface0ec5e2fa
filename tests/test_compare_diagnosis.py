"""Clause scores (structure) and the rule-based diagnosis, each rule in both directions."""

from __future__ import annotations

from datetime import date

import pytest

from nl2sql_pipeline.compare import compare_results
from nl2sql_pipeline.compare.diagnosis import diagnose
from nl2sql_pipeline.compare.structure import CLAUSES, clause_scores, parse_clauses

GOLD = (
    "SELECT g.name, count(*) AS n FROM anime a LEFT JOIN genre g ON a.gid = g.id "
    "WHERE a.score > 5 AND a.year = 2020 GROUP BY g.name ORDER BY n DESC LIMIT 10"
)


def labels(candidate_sql: str, comparison=None) -> set[str]:
    return {label for label, _ in diagnose(comparison, parse_clauses(GOLD), parse_clauses(candidate_sql))}


def test_identical_queries_score_one_everywhere_and_identifiers_are_normalized():
    scores = clause_scores(parse_clauses(GOLD), parse_clauses(GOLD.replace("g.name", "G.NAME")))
    assert scores == {clause: 1.0 for clause in CLAUSES}


def test_clause_scores_show_which_clause_differs():
    candidate = GOLD.replace(" AND a.year = 2020", "").replace("LIMIT 10", "LIMIT 5")
    scores = clause_scores(parse_clauses(GOLD), parse_clauses(candidate))
    assert scores["where"] == pytest.approx(2 / 3) and scores["limit"] == 0.0 and scores["select"] == 1.0
    assert clause_scores(parse_clauses("SELEC nonsense ("), parse_clauses(GOLD)) is None


@pytest.mark.parametrize(
    "label, candidate",
    [
        ("missing_filter", GOLD.replace(" AND a.year = 2020", "")),
        ("extra_filter", GOLD.replace("a.score > 5", "a.score > 5 AND a.kind = 'TV'")),
        ("wrong_aggregate", GOLD.replace("count(*)", "sum(a.score)")),
        ("wrong_join", GOLD.replace("LEFT JOIN", "JOIN")),
        ("wrong_join", GOLD.replace("a.gid = g.id", "a.id = g.id")),
        ("missing_distinct", GOLD.replace("SELECT g.name", "SELECT DISTINCT g.name")),
        ("wrong_grouping", GOLD.replace("GROUP BY g.name", "GROUP BY g.name, a.year")),
        ("wrong_order_or_direction", GOLD.replace("n DESC", "n")),
        ("limit_differs", GOLD.replace("LIMIT 10", "LIMIT 20")),
    ],
)
def test_each_diagnosis_rule_fires_and_stays_quiet_on_the_gold(label, candidate):
    assert label in labels(candidate)
    assert label not in labels(GOLD)


def test_result_based_findings():
    extra = compare_results(["a"], [(1,)], ["a", "b"], [(1, 2)])
    assert "extra_or_missing_column" in labels(GOLD, extra)
    formatted = compare_results(
        ["id", "d"], [(1, "2024-01-01"), (2, "2024-01-02")], ["id", "d"], [(1, "01/01/2024"), (2, "01/02/2024")]
    )
    assert "only_type_or_format" in labels(GOLD, formatted)
    one_wrong = compare_results(["id", "d"], [(1, "a"), (2, "b")], ["id", "d"], [(1, "a"), (2, "c")])
    assert "only_type_or_format" not in labels(GOLD, one_wrong)
    same = compare_results(["d"], [("x",)], ["d"], [("x",)])
    assert "extra_or_missing_column" not in labels(GOLD, same)
    assert labels(GOLD, same) == {"unexplained"}


@pytest.mark.parametrize(
    "expected, candidate",
    [
        ([("TV", 3), ("Movie", 1)], [("tv", 3), ("movie", 1)]),  # text case
        ([("TV", date(2024, 1, 2))], [("TV", "02.01.2024")]),  # a DATE as text in another format
        ([("TV", True), ("Movie", False)], [("TV", 1), ("Movie", 0)]),  # boolean as 1/0
        ([("TV", "2024-01-02")], [("TV", "01/02/2024")]),  # date format
    ],
)
def test_only_type_or_format_when_values_are_equal_apart_from_type_or_format(expected, candidate):
    comparison = compare_results(["format", "v"], expected, ["format", "v"], candidate)
    assert not comparison.match
    assert "only_type_or_format" in labels(GOLD, comparison)


@pytest.mark.parametrize(
    "expected, candidate",
    [
        ([("TV", 222), ("Movie", 40)], [("TV", 223), ("Movie", 41)]),  # COUNT(*) + 1
        ([("TV", "2024-01-02")], [("TV", "2024-01-09")]),  # a date shifted by 7 days
        ([("TV", 3), ("Movie", 1)], [("TV", "4"), ("Movie", "1")]),  # a number as text, but another number
        ([("TV", "a b")], [("TV", "a c")]),
    ],
)
def test_no_only_type_or_format_when_values_differ(expected, candidate):
    comparison = compare_results(["format", "v"], expected, ["format", "v"], candidate)
    assert not comparison.match and "values differ in column" in comparison.reason
    assert "only_type_or_format" not in labels(GOLD, comparison)
