"""The result comparator on hand-built rows: every base rule in both directions, reasons, score, scale."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from datetime import time as dtime
from decimal import Decimal

import numpy as np
import pytest

import nl2sql_pipeline.compare.columns as columns_module
import nl2sql_pipeline.compare.matching as matching_module
import nl2sql_pipeline.compare.state as state_module
from nl2sql_pipeline.compare import (
    COMPARATOR_VERSION,
    RULES,
    CompareConfig,
    Comparison,
    ComparisonInputError,
    ExpectedResultError,
    compare_query_results,
    compare_results,
)
from nl2sql_pipeline.compare.rules import CANONICALISER, RULE_NAMES
from nl2sql_pipeline.compare.values import ValueContext
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.execution import QueryResult


def counted(monkeypatch, module: object, name: str) -> list[object]:
    """Replace ``module.name`` by a wrapper that records each call's first argument (and still calls it)."""
    calls: list[object] = []
    real: Callable = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(args[0] if args else None)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def one(expected, candidate, config: CompareConfig = CompareConfig()) -> Comparison:
    """Compare two single-cell results with the same column name."""
    return compare_results(["v"], [(expected,)], ["v"], [(candidate,)], config)


def rules_of(comparison: Comparison) -> set[str]:
    return set(comparison.rule.split("+"))


# --- multiset ------------------------------------------------------------------------------------


def test_multiset_ignores_row_order():
    rows = [(1, "Mecha"), (2, "Isekai"), (3, "Shonen")]
    result = compare_results(["id", "genre"], rows, ["id", "genre"], list(reversed(rows)))
    assert (result.match, result.rule, result.reason, result.score) == (True, "multiset_exact", "all 3 rows match", 1.0)
    assert (result.row_precision, result.row_recall, result.cell_f1) == (1.0, 1.0, 1.0)


def test_partial_credit_rows_and_cells_and_grade():
    from nl2sql_pipeline.compare.model import grade

    expected = [(1, "Mecha", 10), (2, "Drama", 20), (3, "Isekai", 30), (4, "Horror", 40)]
    one_cell_off = expected[:3] + [(4, "Horror", 41)]
    result = compare_results(["id", "g", "n"], expected, ["id", "g", "n"], one_cell_off)
    assert (result.row_precision, result.row_recall) == (0.75, 0.75)
    assert result.cell_f1 == pytest.approx(11 / 12)
    assert grade(result, CompareConfig()) == "partial"
    unrelated = compare_results(["id"], [(1,), (2,)], ["id"], [(3,), (4,), (5,)])
    assert (unrelated.row_precision, unrelated.row_recall, unrelated.cell_f1) == (0.0, 0.0, 0.0)
    assert grade(unrelated, CompareConfig()) == "fail"
    assert grade(compare_results(["id"], [(1,)], ["id"], [(1,)]), CompareConfig()) == "pass"
    strict = CompareConfig(partial_threshold=0.95)
    assert grade(result, strict) == "fail"
    with pytest.raises(ConfigError, match="partial_threshold"):
        CompareConfig(partial_threshold=2)


def test_multiset_counts_duplicates():
    result = compare_results(["n", "g"], [(5, "x"), (5, "x"), (6, "y")], ["n", "g"], [(5, "x"), (6, "y"), (6, "y")])
    assert not result.match
    assert result.rule == "multiset_mismatch"
    assert "row (5, 'x') appears 2x in expected, 1x in candidate" in result.reason
    assert result.score == pytest.approx(2 / 3)


def test_row_count_mismatch_names_missing_and_extra_rows():
    expected = [(1, "Isekai"), (2, "Shonen"), (3, "Mecha")]
    candidate = [(1, "Isekai"), (2, "Shonen"), (4, "Horror"), (5, "Drama")]
    result = compare_results(["id", "genre"], expected, ["id", "genre"], candidate)
    assert (result.match, result.rule) == (False, "row_count_mismatch")
    assert "expected 3 rows, candidate returned 4" in result.reason
    assert "candidate has 2 extra rows, 1 missing; first missing: (3, 'Mecha')" in result.reason
    assert "first extra: (4, 'Horror')" in result.reason
    assert result.score == pytest.approx(2 * 2 / 7)


def test_multiset_mismatch_names_the_differing_column():
    result = compare_results(
        ["id", "genre"], [(1, "Mecha"), (2, "Isekai")], ["id", "genre"], [(1, "Mecha"), (2, "Horror")]
    )
    assert (result.match, result.rule) == (False, "multiset_mismatch")
    assert "first missing: (2, 'Isekai'); first extra: (2, 'Horror')" in result.reason
    assert "values differ in column 'genre'" in result.reason
    assert result.score == 0.5


def test_empty_results():
    assert compare_results(["a"], [], ["a"], []).match
    result = compare_results(["a"], [(1,)], ["a"], [])
    assert (result.match, result.rule, result.score) == (False, "row_count_mismatch", 0.0)
    assert "candidate is missing 1 row" in result.reason


# --- columns -------------------------------------------------------------------------------------


def test_columns_reordered_by_case_insensitive_name():
    result = compare_results(
        ["id", "Genre"], [(1, "Mecha"), (2, "Isekai")], ["GENRE", "ID"], [("Isekai", 2), ("Mecha", 1)]
    )
    assert (result.match, result.rule) == (True, "column_reorder_by_name")
    assert "matched by name" in result.reason


def test_names_decide_when_the_name_sets_match():
    """Same names, values under the wrong names: no positional rescue."""
    result = compare_results(["a", "b"], [(1, 2)], ["b", "a"], [(1, 2)])
    assert (result.match, result.rule) == (False, "multiset_mismatch")


def test_column_count_mismatch_names_the_missing_column():
    result = compare_results(["id", "genre"], [(1, "Mecha")], ["id"], [(1,)])
    assert (result.match, result.rule, result.score) == (False, "column_count_mismatch", pytest.approx(2 / 3))
    assert "column 'genre' missing from candidate" in result.reason
    result = compare_results(["id"], [(1,)], ["id", "kind"], [(1, "tv")])
    assert "candidate has extra column 'kind'" in result.reason


def test_positional_when_names_differ():
    result = compare_results(["count_star()"], [(7,)], ["n"], [(7,)])
    assert (result.match, result.rule) == (True, "column_positional")
    assert "compared by position" in result.reason
    result = compare_results(["count_star()"], [(7,)], ["n"], [(8,)])
    assert (result.match, result.rule) == (False, "multiset_mismatch")
    assert "values differ in column 'count_star()' (candidate 'n')" in result.reason


def test_permutation_found_for_aliased_reordered_columns():
    expected = [("Mecha", 2), ("Isekai", 1)]
    result = compare_results(["genre", "count_star()"], expected, ["n", "g"], [(1, "Isekai"), (2, "Mecha")])
    assert (result.match, result.rule) == (True, "column_permutation")
    assert "'g' -> 'genre'" in result.reason


def test_permutation_cannot_rescue_wrong_values():
    result = compare_results(["genre", "c"], [("Mecha", 2)], ["n", "g"], [(3, "Mecha")])
    assert not result.match
    assert "no reordering of the candidate's columns makes all rows match" in result.reason


def test_mismatch_uses_the_most_alike_column_order_for_partial_credit():
    expected = [("Mecha", 2), ("Isekai", 1), ("Drama", 5)]
    candidate = [(1, "Isekai"), (2, "Mecha"), (4, "Drama")]
    result = compare_results(["genre", "n"], expected, ["cnt", "g"], candidate)
    assert (result.match, result.rule) == (False, "multiset_mismatch")
    assert result.score == pytest.approx(2 / 3)
    assert "first missing: ('Drama', 5); first extra: ('Drama', 4)" in result.reason
    assert "compared in the most alike order" in result.reason
    shorter = compare_results(["genre", "n"], expected, ["cnt", "g"], candidate[:2])
    assert (shorter.rule, shorter.score) == ("row_count_mismatch", 0.8)


def test_columns_paired_by_value_at_thirty_columns_without_a_search_over_orders(monkeypatch):
    rng = random.Random(3)
    names = [f"c{i}" for i in range(30)]
    rows = [tuple(rng.randrange(1000) + 1000 * c for c in range(30)) for _ in range(2000)]
    order = list(range(30))
    rng.shuffle(order)
    candidate = [tuple(row[j] for j in order) for row in reversed(rows)]
    signatures = counted(monkeypatch, columns_module, "_signature")
    row_matchings = counted(monkeypatch, state_module, "match_rows")  # one per column order compared row by row
    result = compare_results(names, rows, [f"x{i}" for i in range(30)], candidate)
    assert (result.match, result.rule) == (True, "column_permutation")
    # 30! orders exist: the columns pair by one value signature each, and few orders are compared by rows
    assert len(signatures) == 2 * 30
    assert 2 <= len(row_matchings) <= 1 + columns_module.MAX_PERMUTATIONS_TRIED  # by position, then the pairing
    broken = [row[:-1] + (row[-1] + 1,) for row in candidate[:1]] + candidate[1:]
    wrong = compare_results(names, rows, [f"x{i}" for i in range(30)], broken)
    assert not wrong.match and wrong.score == pytest.approx(1999 / 2000)


def test_alike_columns_are_tried_in_both_orders():
    # both columns hold {1, 2}: only their pairing with the other columns decides
    expected = [(1, 2), (2, 1), (1, 1)]
    result = compare_results(["a", "b"], expected, ["x", "y"], [(1, 2), (2, 1), (1, 1)][::-1])
    assert result.match
    swapped = compare_results(["a", "b"], [(1, 2), (1, 2), (2, 1)], ["x", "y"], [(2, 1), (2, 1), (1, 2)])
    assert (swapped.match, swapped.rule) == (True, "column_permutation")


def test_column_order_modes():
    by_name = CompareConfig(column_order="by_name")
    result = compare_results(["n"], [(1,)], ["count"], [(1,)], by_name)
    assert (result.match, result.rule) == (False, "column_names_mismatch")
    assert "column 'n' missing from candidate; candidate has extra column 'count'" in result.reason
    positional = CompareConfig(column_order="positional")
    result = compare_results(["a", "b"], [(1, "x")], ["b", "a"], [(1, "x")], positional)
    assert result.match and result.rule == "column_positional"
    swapped = compare_results(["a", "b"], [(1, "x")], ["c", "d"], [("x", 1)], positional)
    assert (swapped.match, swapped.rule) == (False, "multiset_mismatch")
    assert compare_results(["a", "b"], [(1, "x")], ["c", "d"], [("x", 1)]).rule == "column_permutation"


# --- values --------------------------------------------------------------------------------------


def test_null_equals_null_only():
    assert one(None, None).rule == "multiset_exact"
    for other in (0, "", 0.0, False, float("nan")):
        assert not one(None, other).match, other
    assert "first missing: (NULL,)" in one(None, 0).reason


def test_numbers_equal_by_value():
    for a, b in [(3, 3.0), (3, Decimal("3.00")), (3.5, Decimal("3.50")), (Decimal("3.0"), Decimal("3"))]:
        result = one(a, b)
        assert result.match, (a, b)
    assert one(3, 3.0).rule == "numeric_value_equality"
    assert one(3, 3).rule == "multiset_exact"
    for a, b in [(3, 3.5), (3, Decimal("3.01")), (Decimal("0.1"), Decimal("0.10000001"))]:
        assert not one(a, b).match, (a, b)


def test_ints_and_decimals_are_exact_but_floats_have_tolerance():
    assert not one(10**17, 10**17 + 1).match
    result = one(0.1 + 0.2, 0.3)
    assert (result.match, result.rule) == (True, "float_tolerance")
    assert one(0.1, Decimal("0.1")).match  # a binary float is never exactly 0.1
    assert not one(1.0, 1.001).match
    assert "values differ in column 'v'" in one(1.0, 1.001).reason


def test_tolerance_is_configurable():
    exact = CompareConfig(rel_tol=0.0, abs_tol=0.0)
    assert not one(0.1 + 0.2, 0.3, exact).match
    loose = CompareConfig(rel_tol=1e-2)
    assert one(1.0, 1.001, loose).match
    assert not one(1.0, 1.02, loose).match
    absolute = CompareConfig(rel_tol=0.0, abs_tol=1e-6)
    assert one(0.0, 5e-7, absolute).match
    assert not one(0.0, 5e-6, absolute).match


def test_float_tolerance_pairs_rows_not_just_values():
    """Two float columns: a row must pair with a row that is close in every float column."""
    expected = [(1.0, 5.0), (1.0 + 1e-12, 2.0)]
    good = [(1.0 + 1e-12, 5.0), (1.0, 2.0)]
    assert compare_results(["a", "b"], expected, ["a", "b"], good).match
    bad = [(1.0, 5.0), (1.0, 2.5)]
    result = compare_results(["a", "b"], expected, ["a", "b"], bad)
    assert not result.match
    assert result.score == 0.5


def test_float_tolerance_on_big_residues_uses_buckets_soundly():
    rng = random.Random(7)
    expected = [(i % 10, rng.uniform(-1e6, 1e6)) for i in range(5000)]
    noisy = [(k, x * (1 + rng.uniform(-1e-11, 1e-11))) for k, x in expected]
    rng.shuffle(noisy)
    result = compare_results(["k", "x"], expected, ["k", "x"], noisy)
    assert (result.match, result.rule) == (True, "float_tolerance")
    assert "5000 rows equal within float tolerance" in result.reason
    noisy[123] = (noisy[123][0], noisy[123][1] * (1 + 1e-6))
    result = compare_results(["k", "x"], expected, ["k", "x"], noisy)
    assert (result.match, result.rule) == (False, "multiset_mismatch")
    assert "candidate has 1 extra row, 1 missing" in result.reason


def test_numeric_strings_coerced_against_numbers():
    for text, number in [("42", 42), ("3.50", 3.5), ("-7", Decimal("-7.0")), ("1e3", 1000)]:
        result = one(number, text)
        assert (result.match, result.rule) == (True, "numeric_string_coercion"), (text, number)
    for text, number in [("42", 43), (" 42", 42), ("42abc", 42), ("forty-two", 42)]:
        assert not one(number, text).match, (text, number)


def test_strings_compare_exactly():
    assert one("Mecha", "Mecha").rule == "multiset_exact"
    for a, b in [("Mecha", "mecha"), ("Mecha", "Mecha "), ("042", "42"), ("2024-01-01", "2024-01-01 00:00:00")]:
        assert not one(a, b).match, (a, b)


def test_date_equals_timestamp_at_midnight():
    result = one(date(2024, 1, 1), datetime(2024, 1, 1))
    assert (result.match, result.rule) == (True, "temporal_equivalence")
    assert "date vs timestamp" in result.reason
    assert not one(date(2024, 1, 1), datetime(2024, 1, 1, 12, 30)).match
    assert not one(date(2024, 1, 1), date(2024, 1, 2)).match


def test_temporal_values_equal_their_iso_strings():
    for value, text in [
        (date(2024, 1, 1), "2024-01-01"),
        (datetime(2024, 1, 1, 12, 30), "2024-01-01 12:30:00"),
        (datetime(2024, 1, 1, 12, 30), "2024-01-01T12:30:00"),
        (datetime(2024, 1, 1, 12, 30), "2024-01-01 12:30"),
        (datetime(2024, 1, 1, 0, 0), "2024-01-01"),
        (datetime(2024, 1, 1, 12, 30, tzinfo=timezone.utc), "2024-01-01T12:30:00Z"),
        (dtime(12, 30), "12:30:00"),
    ]:
        result = one(value, text)
        assert (result.match, result.rule) == (True, "temporal_equivalence"), (value, text)
    for value, text in [
        (date(2024, 1, 1), "2024-01-02"),
        (date(2024, 1, 1), "01/01/2024"),
        (datetime(2024, 1, 1, 12, 30), "2024-01-01 12:31:00"),
        (date(2024, 1, 1), "20240101"),
    ]:
        assert not one(value, text).match, (value, text)


def test_aware_timestamps_compare_as_instants_and_never_equal_naive():
    paris = timezone(timedelta(hours=1))
    assert one(datetime(2024, 1, 1, 12, tzinfo=timezone.utc), datetime(2024, 1, 1, 13, tzinfo=paris)).match
    assert not one(datetime(2024, 1, 1, 12, tzinfo=timezone.utc), datetime(2024, 1, 1, 12)).match


def test_nan_and_infinities_are_canonical():
    nan = float("nan")
    assert one(nan, float("nan")).match
    assert one(Decimal("NaN"), nan).match
    assert one(math.inf, math.inf).match
    assert one(-math.inf, float("-inf")).match
    assert one(Decimal("Infinity"), math.inf).match
    for a, b in [(nan, None), (nan, 0.0), (math.inf, -math.inf), (math.inf, 1e308)]:
        assert not one(a, b).match, (a, b)


def test_booleans_equal_booleans_only():
    assert one(True, True).match and one(False, False).match
    for a, b in [(True, 1), (False, 0), (True, "true"), (True, 1.0), (True, False)]:
        assert not one(a, b).match, (a, b)
    mixed = compare_results(["v"], [(True,), (1,)], ["v"], [(1,), (True,)])
    assert mixed.match
    assert not compare_results(["v"], [(True,), (1,)], ["v"], [(1,), (1,)]).match


def test_nested_values_compare_element_wise():
    assert one([1, 2, None], [1.0, 2, None]).match
    assert not one([1, 2], [2, 1]).match
    assert one({"a": 1, "b": [date(2024, 1, 1)]}, {"a": 1.0, "b": [datetime(2024, 1, 1)]}).match
    assert not one({"a": 1}, {"a": 2}).match


def test_other_values():
    import uuid

    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert one(ident, str(ident)).match
    assert one(timedelta(days=1), timedelta(hours=24)).match
    assert not one(b"abc", "abc").match


def test_numpy_scalars_compare_as_python_values():
    assert one(np.int64(3), 3.0).match
    assert one(np.float32(0.5), 0.5).match
    assert one(np.True_, True).match
    assert not one(np.True_, 1).match
    assert not compare_results(["v"], [(np.True_,), (1,)], ["v"], [(1,), (1,)]).match


def test_column_fast_path_agrees_with_the_rules():
    """Columns skipped as already canonical give the same values as applying the rules cell by cell."""
    columns = [
        [1, 2, None, 3],
        [1.5, float("inf"), None, -0.0],
        ["a", "b", None, "c"],
        [Decimal("1.10"), Decimal("2"), None, Decimal("-3.5")],
        [datetime(2024, 1, 1), None, datetime(2024, 1, 2, 3), datetime(2020, 2, 29)],
        [date(2024, 1, 1), None, date(2024, 1, 2), date(2020, 2, 29)],
        [True, False, None, True],
        [float("nan"), 1.0, None, 2.0],
        ["1", "2.5", "x", None],
    ]
    for flags in [(False, False, False), (True, False, False), (False, True, True)]:
        ctx = ValueContext(*flags, canonicaliser=CANONICALISER)
        for values in columns:
            fast = list(CANONICALISER.column(values, ctx))
            slow = [CANONICALISER.value(v, ctx) for v in values]
            assert len(fast) == len(slow)
            for a, b in zip(fast, slow):
                assert a is b or (a == b and type(a) is type(b)), (values, flags, a, b)


# --- query results -------------------------------------------------------------------------------


def result(rows, columns=("v",), truncated=False) -> QueryResult:
    return QueryResult(
        ok=True, columns=list(columns), column_types=["INTEGER"] * len(columns), rows=rows, truncated=truncated
    )


def test_query_results_compare_their_rows():
    assert compare_query_results(result([(1,), (2,)]), result([(2,), (1,)])).match


def test_failed_candidate_is_a_mismatch_naming_the_error():
    failed = QueryResult.failure(
        "catalog", 'Catalog Error: Table "x" does not exist!\n\nLINE 1: SELECT * FROM x\n      ^'
    )
    verdict = compare_query_results(result([(1,)]), failed)
    assert (verdict.match, verdict.rule, verdict.score) == (False, "candidate_failed", 0.0)
    assert verdict.reason == 'candidate query failed (catalog: Catalog Error: Table "x" does not exist!)'


def test_failed_expected_raises():
    with pytest.raises(ExpectedResultError, match="fix the gold SQL"):
        compare_query_results(QueryResult.failure("syntax", "Parser Error"), result([(1,)]))


def test_truncated_results():
    capped = result([(i,) for i in range(3)], truncated=True)
    verdict = compare_query_results(result([(0,), (1,)]), capped)
    assert (verdict.match, verdict.rule) == (False, "candidate_truncated")
    verdict = compare_query_results(capped, result([(0,), (1,), (2,)]))
    assert (verdict.match, verdict.rule) == (False, "expected_truncated")
    verdict = compare_query_results(capped, result([(2,), (1,), (0,)], truncated=True))
    assert verdict.match and "both results hit the row cap" in verdict.reason


# --- contract ------------------------------------------------------------------------------------


def test_rules_are_named_documented_and_unique():
    assert len(set(RULE_NAMES)) == len(RULES)
    for rule in RULES:
        assert rule.name and rule.doc, rule
        assert rule.kind in {"query", "value", "step"}
    assert RULES[-1].name == "multiset_mismatch"
    assert isinstance(COMPARATOR_VERSION, str) and COMPARATOR_VERSION
    assert Comparison(True, "multiset_exact", "", 1.0).to_dict()["comparator_version"] == COMPARATOR_VERSION


def test_verdict_rule_names_come_from_rules():
    verdicts = [
        one(3, 3.0),
        one(date(2024, 1, 1), "2024-01-01"),
        compare_results(["a", "b"], [(1, 0.1 + 0.2)], ["B", "x"], [(0.3, "1")]),
        compare_results(["a"], [(1,)], ["a", "b"], [(1, 2)]),
    ]
    for verdict in verdicts:
        assert rules_of(verdict) <= set(RULE_NAMES), verdict.rule


def test_bad_config_and_ragged_rows_raise_typed_errors():
    with pytest.raises(ConfigError, match="rel_tol"):
        CompareConfig(rel_tol=-1)
    with pytest.raises(ConfigError, match="abs_tol"):
        CompareConfig(abs_tol=float("nan"))
    with pytest.raises(ConfigError, match="column_order"):
        CompareConfig(column_order="sorted")
    with pytest.raises(ComparisonInputError, match="candidate row 1 has 1 values but there are 2 columns"):
        compare_results(["a", "b"], [(1, 2)], ["a", "b"], [(1, 2), (3,)])


def test_big_results_compare_as_multisets_without_pairing_rows(monkeypatch):
    rng = random.Random(3)
    n = 50_000
    day = date(2024, 1, 1)
    expected = [
        (
            i,
            rng.choice(["Mecha", "Isekai", "Drama"]),
            rng.random() * 10,
            day + timedelta(days=i % 400),
            Decimal(i % 997) / 100,
        )
        for i in range(n)
    ]
    candidate = expected[:]
    rng.shuffle(candidate)
    columns = ["id", "genre", "score", "aired", "price"]
    row_matchings = counted(monkeypatch, state_module, "match_rows")
    tolerance_pairings = counted(monkeypatch, matching_module, "pair_within_tolerance")
    bucketings = counted(monkeypatch, matching_module, "_bucket_rows")
    verdict = compare_results(columns, expected, columns, candidate)
    assert verdict.match and verdict.rule == "multiset_exact"
    # one count of each side's rows decides (speed: benchmarks/bench_compare.py); nothing is paired row by row
    assert len(row_matchings) == 1 and len(row_matchings[0]) == n
    assert tolerance_pairings == [] and bucketings == []


def test_random_results_match_themselves_shuffled_and_compare_symmetrically():
    rng = random.Random(0)
    pool = [
        None,
        0,
        1,
        3,
        3.0,
        Decimal("3.00"),
        0.1,
        0.1 + 0.2,
        0.3,
        float("nan"),
        math.inf,
        -math.inf,
        True,
        False,
        "3",
        "3.0",
        "x",
        "",
        "2024-01-01",
        date(2024, 1, 1),
        datetime(2024, 1, 1),
        datetime(2024, 1, 1, 12, 30),
        "12:30:00",
        dtime(12, 30),
        [1, 2],
        {"a": 1},
        b"x",
        Decimal("0.1"),
    ]
    for _ in range(400):
        width = rng.randint(1, 3)
        columns = [f"c{i}" for i in range(width)]
        a = [tuple(rng.choice(pool) for _ in range(width)) for _ in range(rng.randint(0, 5))]
        b = [tuple(rng.choice(pool) for _ in range(width)) for _ in range(rng.randint(0, 5))]
        shuffled = rng.sample(a, len(a))
        assert compare_results(columns, a, columns, shuffled).match, a
        forward, backward = compare_results(columns, a, columns, b), compare_results(columns, b, columns, a)
        assert forward.match == backward.match and forward.score == pytest.approx(backward.score), (a, b)


def test_extra_or_missing_column_is_a_mismatch_with_partial_credit():
    expected = [("Mecha", 2), ("Isekai", 1)]
    extra = compare_results(["genre", "n"], expected, ["genre", "n", "avg"], [("Mecha", 2, 1.5), ("Isekai", 1, 2.0)])
    assert (extra.match, extra.rule) == (False, "column_count_mismatch")
    assert extra.score == pytest.approx(2 * 2 / 5)  # all rows right on the 2 shared columns, 2 of 5 columns
    missing = compare_results(["genre", "n"], expected, ["g"], [("Mecha",), ("Isekai",)])
    assert (missing.match, missing.score) == (False, pytest.approx(2 * 1 / 3))  # paired by value
    unrelated = compare_results(["genre", "n"], expected, ["x"], [("Drama",), ("Horror",)])
    assert unrelated.score == 0.0
