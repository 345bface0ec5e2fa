"""The identical-result fast path gives exactly the verdict of the step rules, field for field.

Every pair is compared twice: as ``compare_query_results`` does it (the fast path when ``same_result``
holds) and with the fast path switched off (``same_result`` patched to False), including the order check.
"""

from __future__ import annotations

import random
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal

import pytest
from verdict_factory import make_candidate

import nl2sql_pipeline.compare.comparator as compare_package
from nl2sql_pipeline.compare import CompareConfig, EngineSource, compare_query_results
from nl2sql_pipeline.compare.identical import same_result
from nl2sql_pipeline.execution import QueryResult

# one xdist worker runs the module (its module-scoped fixtures are built once)
pytestmark = pytest.mark.xdist_group("compare_identical")

CONFIGS = [CompareConfig(), CompareConfig(column_order="positional"), CompareConfig(column_order="by_name")]
EXPECTED_SQL = [
    None,  # no source: no order check
    "SELECT a, b FROM t",
    "SELECT a, b FROM t ORDER BY a",
    "SELECT a, b FROM t ORDER BY a DESC, b LIMIT 3",
    "SELECT a, b FROM t ORDER BY 2, c",  # a hidden key after a visible one
    "SELECT a, b FROM t ORDER BY c",  # no sort key among the result columns
]
NAN = float("nan")


def _result(columns, rows, types=None, **extra) -> QueryResult:
    return QueryResult(
        ok=True,
        columns=list(columns),
        column_types=list(types or ["X"] * len(columns)),
        rows=[tuple(r) for r in rows],
        **extra,
    )


def _both_ways(monkeypatch, expected, candidate, config, sql):
    source = EngineSource(None, sql, "SELECT 1") if sql else None
    fast = compare_query_results(expected, candidate, config, source)
    with monkeypatch.context() as patch:
        patch.setattr(compare_package, "same_result", lambda *_: False)
        full = compare_query_results(expected, candidate, config, source)
    return fast, full


def _assert_same_verdict(monkeypatch, expected, candidate):
    # the expected SQL must be able to produce the expected result: its sort keys are among its columns
    sqls = EXPECTED_SQL if len(expected.columns) >= 2 else EXPECTED_SQL[:2]
    for config in CONFIGS:
        for sql in sqls:
            fast, full = _both_ways(monkeypatch, expected, candidate, config, sql)
            assert (fast, fast.alignment, fast.to_dict()) == (full, full.alignment, full.to_dict()), (config, sql)


AWARE = datetime(2024, 1, 1, 12, tzinfo=timezone.utc)
IDENTICAL = {
    "ints": (["a", "b"], [(1, 2), (3, 4)]),
    "one row": (["a", "b"], [(1, "x")]),
    "empty": (["a", "b"], []),
    "no columns": ([], [(), ()]),
    "nulls": (["a", "b"], [(None, 1), (None, None), (2, None)]),
    "duplicates": (["a", "b"], [(1, 1), (1, 1), (2, 3), (1, 1)]),
    "ties on the sort key": (["a", "b"], [(1, "z"), (1, "y"), (1, "x"), (2, "w")]),
    "floats": (["a", "b"], [(0.1 + 0.2, 1e-300), (-0.0, 3.5), (float("inf"), float("-inf"))]),
    "decimals": (["a", "b"], [(Decimal("3.00"), Decimal("1.5")), (Decimal("-0"), Decimal("1E+2"))]),
    "temporal": (["a", "b"], [(date(2024, 1, 1), datetime(2024, 1, 1, 12, 30)), (None, AWARE)]),
    "time and interval": (["a", "b"], [(time(12, 30), timedelta(days=1)), (time(0), timedelta(0))]),
    "booleans": (["a", "b"], [(True, False), (False, None)]),
    "booleans and ints in one column": (["a", "b"], [(True, 1), (1, True), (0, False)]),
    "numeric strings beside numbers": (["a", "b"], [("42", 42), (7, "3.50"), ("x", 1.5)]),
    "temporal strings beside dates": (["a", "b"], [("2024-01-01", date(2024, 1, 1)), (date(2024, 1, 2), "12:30")]),
    "bytes": (["a", "b"], [(b"\x00", 1), (b"", 2)]),
    "duplicate column names": (["a", "A"], [(1, 2), (2, 1)]),
}


@pytest.mark.parametrize("name", sorted(IDENTICAL))
def test_identical_results_take_the_fast_path_with_the_same_verdict(monkeypatch, name):
    columns, rows = IDENTICAL[name]
    expected, candidate = _result(columns, rows), _result(columns, [tuple(r) for r in rows])
    assert same_result(expected, candidate)
    _assert_same_verdict(monkeypatch, expected, candidate)


def test_the_same_nan_object_on_both_sides(monkeypatch):
    rows = [(NAN, 1), (2.0, NAN)]  # equal rows only because the very same float objects are shared
    expected, candidate = _result(["a", "b"], rows), _result(["a", "b"], list(rows))
    assert same_result(expected, candidate)
    _assert_same_verdict(monkeypatch, expected, candidate)


EQUAL_SPELLED_OTHERWISE = {
    "decimal scale": ([(Decimal("1.0"), 1)], [(Decimal("1.00"), 1)]),
    "signed zero": ([(-0.0, 1), (0.0, 2)], [(0.0, 1), (-0.0, 2)]),
    "one instant in two zones": ([(AWARE, 1)], [(AWARE.astimezone(timezone(timedelta(hours=9))), 1)]),
}


@pytest.mark.parametrize("name", sorted(EQUAL_SPELLED_OTHERWISE))
def test_equal_values_spelled_otherwise_take_the_fast_path_with_the_same_verdict(monkeypatch, name):
    exp_rows, cand_rows = EQUAL_SPELLED_OTHERWISE[name]
    expected, candidate = _result(["a", "b"], exp_rows), _result(["a", "b"], cand_rows)
    assert same_result(expected, candidate)
    _assert_same_verdict(monkeypatch, expected, candidate)


NOT_IDENTICAL = {
    "renamed column": (["a", "b"], [(1, 2)], ["a", "n"], [(1, 2)]),
    "columns swapped": (["a", "b"], [(1, 2)], ["b", "a"], [(2, 1)]),
    "other row order": (["a", "b"], [(1, 2), (3, 4)], ["a", "b"], [(3, 4), (1, 2)]),
    "tied rows in another order": (["a", "b"], [(1, "z"), (1, "y")], ["a", "b"], [(1, "y"), (1, "z")]),
    "floats within tolerance": (["a", "b"], [(0.3, 1)], ["a", "b"], [(0.1 + 0.2, 1)]),
    "int against float": (["a", "b"], [(3, 1)], ["a", "b"], [(3.0, 1)]),
    "bool against int": (["a", "b"], [(True, 1)], ["a", "b"], [(1, 1)]),
    "int against decimal": (["a", "b"], [(3, 1)], ["a", "b"], [(Decimal(3), 1)]),
    "fresh NaNs": (["a", "b"], [(NAN, 1)], ["a", "b"], [(float("nan"), 1)]),
    "dict keys in another order": (["a", "b"], [({"x": 1, "y": 2}, 1)], ["a", "b"], [({"y": 2, "x": 1}, 1)]),
    "lists of booleans against ints": (["a", "b"], [([True], 1)], ["a", "b"], [([1], 1)]),
    "equal lists": (["a", "b"], [([1, 2], 1)], ["a", "b"], [([1, 2], 1)]),
    "a duplicate more": (["a", "b"], [(1, 1), (1, 1)], ["a", "b"], [(1, 1), (1, 1), (1, 1)]),
    "a missing NULL": (["a", "b"], [(None, 1), (1, 1)], ["a", "b"], [(1, 1)]),
}


@pytest.mark.parametrize("name", sorted(NOT_IDENTICAL))
def test_other_results_take_the_step_rules(monkeypatch, name):
    exp_columns, exp_rows, cand_columns, cand_rows = NOT_IDENTICAL[name]
    expected, candidate = _result(exp_columns, exp_rows), _result(cand_columns, cand_rows)
    assert not same_result(expected, candidate)
    _assert_same_verdict(monkeypatch, expected, candidate)


def test_truncated_failed_or_retyped_results_are_not_identical():
    rows = [(1, 2)]
    plain = _result(["a", "b"], rows)
    assert not same_result(plain, _result(["a", "b"], rows, truncated=True))
    assert not same_result(_result(["a", "b"], rows, truncated=True), _result(["a", "b"], rows, truncated=True))
    assert not same_result(plain, QueryResult.failure("runtime", "boom"))
    assert not same_result(plain, _result(["a", "b"], rows, types=["INTEGER", "BIGINT"]))
    assert not same_result(_result(["a"], [(1, 2)]), _result(["a"], [(1, 2)]))  # ragged: the step rules raise


def test_a_signalling_nan_is_left_to_the_value_rules():
    expected, candidate = _result(["a"], [(Decimal("sNaN"),)]), _result(["a"], [(Decimal("sNaN"),)])
    assert not same_result(expected, candidate)


POOL = [None, 0, 1, 2, -1, 0.5, 1.5, 2.5e10, Decimal("1.50"), "a", "b", "1", True, False, date(2024, 1, 2)]


def _random_rows(rng: random.Random, width: int) -> list[tuple]:
    rows = [tuple(rng.choice(POOL) for _ in range(width)) for _ in range(rng.randint(0, 6))]
    if rows and rng.random() < 0.4:
        rows.extend(rng.sample(rows, rng.randint(1, len(rows))))  # duplicates
    return rows


def _variant(rng: random.Random, columns: list[str], rows: list[tuple]) -> tuple[list[str], list[tuple]]:
    """The same result, or one changed the way candidates differ: renamed, reordered, perturbed, cut."""
    change = rng.choice(["same", "same", "rename", "shuffle", "tolerance", "drop", "retype", "swap columns"])
    columns, rows = list(columns), list(rows)
    if change == "rename" and columns:
        columns[rng.randrange(len(columns))] = "renamed"
    elif change == "shuffle":
        rng.shuffle(rows)
    elif change == "tolerance":
        rows = [tuple(v * (1 + 1e-12) if type(v) is float else v for v in row) for row in rows]
    elif change == "drop" and rows:
        rows.pop(rng.randrange(len(rows)))
    elif change == "retype":
        rows = [tuple(float(v) if type(v) is int else v for v in row) for row in rows]
    elif change == "swap columns" and len(columns) > 1:
        columns.reverse()
        rows = [tuple(reversed(row)) for row in rows]
    return columns, rows


def test_random_results_get_the_same_verdict_both_ways(monkeypatch):
    rng = random.Random(7)
    fast_paths = 0
    for _ in range(250):
        width = rng.randint(2, 3)
        columns = ["a", "b", "c"][:width]
        rows = _random_rows(rng, width)
        cand_columns, cand_rows = _variant(rng, columns, rows)
        expected, candidate = _result(columns, rows), _result(cand_columns, cand_rows)
        fast_paths += same_result(expected, candidate)
        _assert_same_verdict(monkeypatch, expected, candidate)
    assert fast_paths > 60  # both paths were exercised


def _offline_candidates(cases, model: str):
    """The candidates the offline model answers every query case with (its answer function, no prompt)."""
    from nl2sql_pipeline.generation.offline_provider import OfflineRequest, answer

    records = []
    for case in cases:
        if case.is_probe:
            continue
        sql, mutation = answer(model, OfflineRequest(case.id, case.canonical_sql, 0, 0), {})
        records.append(
            make_candidate(
                case.id,
                sql,
                case_fingerprint=case.fingerprint,
                token_source="estimated",
                mutation=mutation,
                model_config_hash=model,
            )
        )
    return records


@pytest.fixture(scope="module")
def gold_runs(tmp_path_factory):
    """multidomain-v1 on a small sample database: the oracle, and the executed attempts of both offline models."""
    from nl2sql_pipeline import paths
    from nl2sql_pipeline.gold.registry import load_gold_set
    from nl2sql_pipeline.policy.gate import PolicyGate
    from nl2sql_pipeline.sample_db import DATABASE_NAME, build_database
    from nl2sql_pipeline.stages import execute_attempts, run_oracle
    from nl2sql_pipeline.stages.records import attempts_from_candidates

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NL2SQL_HOME", str(tmp_path_factory.mktemp("identical-home")))
        build_database(paths.database_path(DATABASE_NAME), scale=0.05)
        cases = load_gold_set("multidomain-v1")
        oracle = run_oracle(cases, paths.database_path)
        runs = {
            model: execute_attempts(
                cases, attempts_from_candidates(_offline_candidates(cases, model)), PolicyGate(paths.database_path)
            )
            for model in ("gold-echo", "sql-mutant")
        }
        yield cases, oracle, runs


@pytest.mark.parametrize("model", ["gold-echo", "sql-mutant"])
def test_the_gold_set_gets_the_same_verdicts_and_scores_both_ways(monkeypatch, gold_runs, model):
    from nl2sql_pipeline.scoring.run_scores import score_run
    from nl2sql_pipeline.stages import judge

    cases, oracle, runs = gold_runs
    taken = []
    monkeypatch.setattr(compare_package, "same_result", lambda *a: taken.append(same_result(*a)) or taken[-1])
    fast = judge(cases, oracle, runs[model])
    monkeypatch.setattr(compare_package, "same_result", lambda *_: False)
    full = judge(cases, oracle, runs[model])
    assert sum(taken) > 40  # most correct candidates return the expected result itself
    assert [repr(v) for v in fast] == [repr(v) for v in full]
    assert repr(score_run(fast)) == repr(score_run(full))


def test_evolve_is_dataclasses_replace():
    from dataclasses import fields, replace

    from nl2sql_pipeline.compare import Comparison

    base = Comparison(True, "multiset_exact", "all 2 rows match", 1.0, 2, 2, None, 1.0, 1.0, 1.0, (1, 0))
    changes = {
        "match": False,
        "rule": "r",
        "reason": "why",
        "score": 0.5,
        "expected_rows": None,
        "candidate_rows": 3,
        "order": None,
        "row_precision": 0.25,
        "row_recall": None,
        "cell_f1": 0.0,
        "alignment": (0, 1),
    }
    for name, value in changes.items():
        evolved, replaced = base.evolve(**{name: value}), replace(base, **{name: value})
        assert [getattr(evolved, f.name) for f in fields(Comparison)] == [
            getattr(replaced, f.name) for f in fields(Comparison)
        ]
    assert base.evolve(**changes).to_dict() == replace(base, **changes).to_dict()
    assert base.alignment == (1, 0)  # the original is left as it was
    with pytest.raises(TypeError, match="no field nope"):
        base.evolve(nope=1)
