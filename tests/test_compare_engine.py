"""Whole results compared in the engine: results over the row cap, exact counts, parity with Python."""

from __future__ import annotations

import random
from datetime import date, datetime
from decimal import Decimal

import duckdb
import pytest

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.compare import CompareConfig, EngineSource, compare_query_results, compare_results
from nl2sql_pipeline.execution import SandboxLimits, release_sandboxes, run_query
from nl2sql_pipeline.stages import judge, outcomes
from nl2sql_pipeline.stages.records import Attempt, OracleRow

# one xdist worker runs the module (its module-scoped fixtures are built once)
pytestmark = pytest.mark.xdist_group("compare_engine")

LIMITS = SandboxLimits(row_cap=10_000)


@pytest.fixture(scope="module")
def big_db(tmp_path_factory):
    """50,000 rows ``a``; ``shuffled`` the same rows in random order; ``late_diff`` differs beyond row 10,000."""
    path = tmp_path_factory.mktemp("engine") / "big.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE a AS SELECT i, (i * 0.25)::DOUBLE AS f, 'name ' || i AS s, DATE '2020-01-01' + (i % 900)::INTEGER AS d, "
        "CASE WHEN i % 7 = 0 THEN NULL ELSE i END AS ni, (i / 3)::DECIMAL(12, 3) AS dec FROM range(50000) t(i)"
    )
    con.execute("CREATE TABLE shuffled AS SELECT * FROM a ORDER BY random()")
    con.execute(
        "CREATE TABLE late_diff AS SELECT i, f, CASE WHEN i = 40000 THEN 'changed' ELSE s END AS s, d, ni, dec FROM a"
    )
    con.execute("CREATE TABLE late_missing AS SELECT * FROM a WHERE i <> 49999")
    con.execute("CREATE TABLE noisy AS SELECT i, f * (1 + 1e-12) AS f, s, d, ni, dec FROM a")
    con.close()
    yield path
    release_sandboxes(path)


def whole(db, expected_sql: str, candidate_sql: str, config: CompareConfig = CompareConfig()):
    expected, candidate = run_query(db, expected_sql, LIMITS), run_query(db, candidate_sql, LIMITS)
    return (
        expected,
        candidate,
        compare_query_results(expected, candidate, config, EngineSource(db, expected_sql, candidate_sql, LIMITS)),
    )


def test_difference_beyond_the_row_cap_is_a_mismatch(big_db):
    expected, candidate, verdict = whole(big_db, "SELECT * FROM a ORDER BY i", "SELECT * FROM late_diff ORDER BY i")
    assert expected.truncated and candidate.truncated and expected.rows == candidate.rows  # first 10,000 agree
    assert (verdict.match, verdict.rule) == (False, "multiset_mismatch")
    assert (verdict.expected_rows, verdict.candidate_rows) == (50_000, 50_000)
    assert "'changed'" in verdict.reason and "compared whole in the engine" in verdict.reason
    assert verdict.score == pytest.approx(49_999 / 50_000)


def test_one_row_missing_beyond_the_row_cap_is_a_row_count_mismatch(big_db):
    _, _, verdict = whole(big_db, "SELECT * FROM a", "SELECT * FROM late_missing")
    assert (verdict.match, verdict.rule) == (False, "row_count_mismatch")
    assert (verdict.expected_rows, verdict.candidate_rows) == (50_000, 49_999)
    assert "candidate is missing 1 row" in verdict.reason


def test_same_rows_in_another_order_match(big_db):
    expected, candidate, verdict = whole(big_db, "SELECT * FROM a", "SELECT * FROM shuffled")
    assert expected.rows != candidate.rows  # the fetched first rows differ
    assert (verdict.match, verdict.rule) == (True, "multiset_exact")
    assert (verdict.expected_rows, verdict.candidate_rows) == (50_000, 50_000)


def test_float_tolerance_applies_in_the_engine(big_db):
    _, _, verdict = whole(big_db, "SELECT * FROM a", "SELECT * FROM noisy")
    assert (verdict.match, verdict.rule) == (True, "float_tolerance")
    _, _, strict = whole(big_db, "SELECT * FROM a", "SELECT * FROM noisy", CompareConfig(rel_tol=0, abs_tol=0))
    assert not strict.match


def test_value_rules_across_types_in_the_engine(big_db):
    _, _, verdict = whole(
        big_db, "SELECT i, d, dec FROM a", "SELECT i, strftime(d, '%Y-%m-%d') AS d, dec::DOUBLE AS dec FROM a"
    )
    assert verdict.match
    assert {"numeric_value_equality", "temporal_equivalence", "float_tolerance"} >= set(verdict.rule.split("+")) - {
        "float_tolerance"
    }
    _, _, booleans = whole(big_db, "SELECT i, i % 2 = 0 AS even FROM a", "SELECT i, (i + 1) % 2 AS even FROM a")
    assert not booleans.match  # TRUE is not 1


def test_candidate_over_the_cap_against_a_small_expected_counts_exactly(big_db):
    _, _, verdict = whole(big_db, "SELECT * FROM a WHERE i < 5", "SELECT * FROM a")
    assert (verdict.match, verdict.rule) == (False, "row_count_mismatch")
    assert (verdict.expected_rows, verdict.candidate_rows) == (5, 50_000)
    assert verdict.score == pytest.approx(10 / 50_005, abs=1e-6)


def test_refused_candidate_never_runs_in_the_engine(big_db):
    expected = run_query(big_db, "SELECT * FROM a", LIMITS)
    candidate = run_query(big_db, "SELECT * FROM a", LIMITS)
    hostile = "SELECT * FROM a; DROP TABLE a"
    verdict = compare_query_results(
        expected, candidate, CompareConfig(), EngineSource(big_db, "SELECT * FROM a", hostile, LIMITS)
    )
    assert "not compared whole in the engine" in verdict.reason and "exactly one SELECT" in verdict.reason
    assert run_query(big_db, "SELECT count(*) FROM a", LIMITS).rows == [(50_000,)]


def _judged(big_db, gold: str, candidates: list[str]) -> list:
    """The judge's verdicts on one case of ``big_db`` (gold ``gold``), one sample per candidate query."""
    case = Case(id="big", domain="d", category="c", question="q", database=str(big_db), expected_sql=(gold,))
    oracle = [OracleRow("big", case.fingerprint, 0, run_query(big_db, gold, LIMITS))]
    attempts = [
        Attempt(
            case_id="big",
            case_fingerprint=case.fingerprint,
            source="model",
            sample_index=sample,
            candidate_index=0,
            sql=sql,
            policy_allowed=True,
            result=run_query(big_db, sql, LIMITS),
        )
        for sample, sql in enumerate(candidates)
    ]
    return judge([case], oracle, attempts)


def test_judge_checks_the_order_of_capped_results_whole(big_db):
    """The sort key is not a result column and both results are over the row cap: the judge still sees a
    reversed order (the comparator is the one ``compare`` uses)."""
    verdicts = _judged(
        big_db,
        "SELECT s FROM a ORDER BY i DESC",
        ["SELECT s FROM a ORDER BY i", "SELECT s FROM shuffled ORDER BY i DESC"],
    )
    assert [(v.correct, v.comparison_rule, v.order_check) for v in verdicts] == [
        (False, "row_order_mismatch", "wrong"),
        (True, "multiset_exact", "ok"),
    ]


def _engine_times_out(monkeypatch):
    from nl2sql_pipeline.compare import engine

    def timed_out(*args, **kwargs):
        raise engine.EngineComparisonError("the in-engine comparison failed (timeout: query exceeded the 2 s timeout)")

    monkeypatch.setattr(engine, "engine_counts", timed_out)


def test_whole_comparison_that_cannot_finish_is_undetermined_not_a_mismatch(big_db, monkeypatch):
    """Both results over the row cap and the engine timed out: their first rows cannot decide (they differ
    here though the results are the same), so there is no verdict."""
    _engine_times_out(monkeypatch)
    expected, candidate, verdict = whole(big_db, "SELECT * FROM a", "SELECT * FROM shuffled")
    assert expected.rows != candidate.rows
    assert (verdict.match, verdict.rule, verdict.undetermined) == (False, "comparison_undetermined", True)
    assert "timeout" in verdict.reason and "undetermined" in verdict.reason
    # one result under the row cap: the row counts differ, which the fetched rows show exactly
    _, _, counted = whole(big_db, "SELECT * FROM a WHERE i < 5", "SELECT * FROM a")
    assert (counted.match, counted.rule, counted.undetermined) == (False, "candidate_truncated", False)


def test_trailing_comment_and_semicolon_are_embedded_safely(big_db):
    _, _, verdict = whole(big_db, "SELECT * FROM a; -- gold", "SELECT * FROM shuffled -- candidate")
    assert verdict.match


def test_judge_compares_capped_results_whole(big_db):
    verdicts = _judged(big_db, "SELECT * FROM a", ["SELECT * FROM late_diff", "SELECT * FROM shuffled"])
    assert [v.correct for v in verdicts] == [False, True]


def test_judge_counts_an_undetermined_comparison_as_an_environment_error(big_db, monkeypatch):
    _engine_times_out(monkeypatch)
    case = Case(
        id="big", domain="d", category="c", question="q", database=str(big_db), expected_sql=("SELECT * FROM a",)
    )
    oracle = [OracleRow("big", case.fingerprint, 0, run_query(big_db, "SELECT * FROM a", LIMITS))]
    sql = "SELECT * FROM shuffled"
    attempt = Attempt(
        case_id="big",
        case_fingerprint=case.fingerprint,
        source="model",
        sample_index=0,
        candidate_index=0,
        sql=sql,
        policy_allowed=True,
        result=run_query(big_db, sql, LIMITS),
    )
    [verdict] = judge([case], oracle, [attempt])
    assert (verdict.outcome, verdict.comparison_rule) == (outcomes.ENVIRONMENT_ERROR, "comparison_undetermined")
    assert verdict.skip_reason is not None and "undetermined" in verdict.skip_reason


# --- parity: the engine and the Python comparator give the same verdict on random results -----------------

_TYPES = {
    "int": ("INTEGER", lambda r: r.randint(-3, 3)),
    "big": ("BIGINT", lambda r: r.randint(0, 2)),
    "dec": ("DECIMAL(8,2)", lambda r: Decimal(r.randint(-300, 300)) / 100),
    "float": ("DOUBLE", lambda r: r.choice([0.5, 1.0, -2.25, 1e-3, 3.0, float("nan"), float("inf")])),
    "noisy": ("DOUBLE", lambda r: r.choice([0.5, 1.0, 3.0]) * (1 + r.choice([0, 1e-12, -1e-12, 1e-6]))),
    "str": ("VARCHAR", lambda r: r.choice(["a", "b", "A", " a", "1", "2.50", "2024-01-01"])),
    "date": ("DATE", lambda r: r.choice([date(2024, 1, 1), date(2024, 1, 2)])),
    "ts": ("TIMESTAMP", lambda r: r.choice([datetime(2024, 1, 1), datetime(2024, 1, 1, 12, 30)])),
    "bool": ("BOOLEAN", lambda r: r.choice([True, False])),
}
# infinite dates and timestamps (inserted from their text) beside the extreme finite values Python fetches them as
_INFINITE_TYPES = {
    "idate": ("DATE", lambda r: r.choice(["infinity", "-infinity", date.max, date.min, date(2024, 1, 1)])),
    "its": (
        "TIMESTAMP",
        lambda r: r.choice(["infinity", "-infinity", datetime.max, datetime.min, datetime(2024, 1, 1)]),
    ),
}
_TYPES.update(_INFINITE_TYPES)
_FINITE_KINDS = [kind for kind in _TYPES if kind not in _INFINITE_TYPES]


def _random_table(rng: random.Random, kinds: list[str], n: int) -> list[tuple]:
    rows = []
    for _ in range(n):
        rows.append(tuple(None if rng.random() < 0.1 else _TYPES[k][1](rng) for k in kinds))
    return rows


def _mutate(rng: random.Random, rows: list[tuple], kinds: list[str]) -> list[tuple]:
    rows = list(rows)
    rng.shuffle(rows)
    action = rng.choice(["same", "drop", "dup", "change", "change"])
    if action == "drop" and rows:
        rows.pop()
    elif action == "dup" and rows:
        rows.append(rows[0])
    elif action == "change" and rows:
        index, col = rng.randrange(len(rows)), rng.randrange(len(kinds))
        row = list(rows[index])
        row[col] = None if rng.random() < 0.2 else _TYPES[kinds[col]][1](rng)
        rows[index] = tuple(row)
    return rows


@pytest.mark.parametrize("seed", range(40))
def test_engine_and_python_agree_on_random_results(tmp_path, seed):
    _check_parity(tmp_path, random.Random(seed), _FINITE_KINDS)


@pytest.mark.parametrize("seed", range(12))
def test_engine_and_python_agree_on_infinite_dates_and_timestamps(tmp_path, seed):
    """'infinity' and '-infinity' equal only themselves (a DATE's equals a TIMESTAMP's), never 9999-12-31 or
    0001-01-01, which Python's DuckDB client would fetch them as: both paths give the same verdict."""
    _check_parity(tmp_path, random.Random(seed), ["idate", "its", "int", "str"], first=["idate", "its"][seed % 2])


def _check_parity(tmp_path, rng: random.Random, kinds: list[str], first: str | None = None) -> None:
    width = rng.randint(1, 3)
    exp_kinds = [first or rng.choice(kinds), *(rng.choice(kinds) for _ in range(width - 1))]
    # the candidate keeps each column's type, or swaps in a related one (numbers, dates, strings)
    related = {
        "int": ["big", "dec", "float"],
        "dec": ["float", "str"],
        "date": ["ts", "str"],
        "idate": ["its", "str"],
        "its": ["idate", "str"],
    }
    cand_kinds = [rng.choice([k, *related.get(k, [])]) if rng.random() < 0.3 else k for k in exp_kinds]
    expected_rows = _random_table(rng, exp_kinds, rng.randint(0, 30))
    candidate_rows = _mutate(rng, expected_rows, exp_kinds)
    path = tmp_path / "parity.duckdb"
    con = duckdb.connect(str(path))
    for name, rows in (("e", expected_rows), ("c", candidate_rows)):
        con.execute(f"CREATE TABLE {name} ({', '.join(f'v{i} {_TYPES[k][0]}' for i, k in enumerate(exp_kinds))})")
        if rows:
            con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in exp_kinds)})", rows)
    con.close()
    cand_sql = (
        "SELECT "
        + ", ".join(
            f"v{i}::{_TYPES[k][0]} AS v{i}" if k == e or k != "str" else f"CAST(v{i} AS VARCHAR) AS v{i}"
            for i, (k, e) in enumerate(zip(cand_kinds, exp_kinds))
        )
        + " FROM c"
    )
    try:
        expected = run_query(path, "SELECT * FROM e", SandboxLimits(row_cap=1000))
        candidate = run_query(path, cand_sql, SandboxLimits(row_cap=1000))
        assert expected.ok and candidate.ok, candidate.error_message
        python = compare_results(expected.columns, expected.rows, candidate.columns, candidate.rows)
        source = EngineSource(path, "SELECT * FROM e", cand_sql, SandboxLimits(row_cap=1000))
        from nl2sql_pipeline.compare import compare_whole

        engine = compare_whole(expected, candidate, source, CompareConfig())
    finally:
        release_sandboxes(path)
    assert (engine.match, engine.rule, round(engine.score, 6)) == (python.match, python.rule, round(python.score, 6)), (
        exp_kinds,
        cand_kinds,
        python.reason,
        engine.reason,
    )


@pytest.mark.parametrize(("factor", "match"), [(0.95, True), (1.05, False)])
def test_floats_at_the_edge_of_the_tolerance_agree_with_python(tmp_path, factor, match):
    """Float buckets span up to 0.9 rel_tol: pairs just inside the tolerance match wherever a bucket edge
    falls, pairs just outside never do, exactly as in Python."""
    config = CompareConfig(rel_tol=1e-9, abs_tol=0.0)
    path = tmp_path / "edge.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE e AS SELECT i, (1.37 ** (i % 97 - 48)) * (1 + i / 3001.0) * (CASE WHEN i % 2 = 0 THEN 1 ELSE -1 END) AS f "
        "FROM range(3000) t(i)"
    )
    con.execute(f"CREATE TABLE c AS SELECT i, f * (1 + {factor * 1e-9!r} * 0.999999) AS f FROM e ORDER BY hash(i)")
    con.close()
    try:
        limits = SandboxLimits(row_cap=1000)
        expected, candidate = run_query(path, "SELECT * FROM e", limits), run_query(path, "SELECT * FROM c", limits)
        from nl2sql_pipeline.compare import compare_whole

        engine = compare_whole(
            expected, candidate, EngineSource(path, "SELECT * FROM e", "SELECT * FROM c", limits), config
        )
        whole_e, whole_c = (run_query(path, f"SELECT * FROM {t}", SandboxLimits(row_cap=10_000)) for t in "ec")
        python = compare_results(whole_e.columns, whole_e.rows, whole_c.columns, whole_c.rows, config)
    finally:
        release_sandboxes(path)
    assert expected.truncated
    assert (
        (engine.match, engine.rule)
        == (python.match, python.rule)
        == (match, "float_tolerance" if match else "multiset_mismatch")
    )
    assert round(engine.score, 6) == round(python.score, 6) == (1.0 if match else 0.0), (engine.reason, python.reason)
