"""Row order from the expected query's AST: ORDER BY direction, ties, LIMIT boundary ties, key resolution."""

from __future__ import annotations

import duckdb
import pytest

from nl2sql_pipeline.compare import CompareConfig, EngineSource, compare_query_results
from nl2sql_pipeline.compare.order import ORDER_NOT_REQUIRED, ORDER_OK, ORDER_PARTIAL, ORDER_UNCHECKED, order_spec
from nl2sql_pipeline.execution import SandboxLimits, release_sandboxes, run_query

LIMITS = SandboxLimits()


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("order") / "titles.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE titles (id INTEGER, title VARCHAR, views INTEGER, score DOUBLE, genre VARCHAR)")
    rows = [(i, f"t{i:02d}", 1000 - i * 10, (i % 5) * 1.5, ["Mecha", "Drama", "Isekai"][i % 3]) for i in range(1, 31)]
    rows += [(31, "tie-a", 700, 2.0, "Mecha"), (32, "tie-b", 700, 2.0, "Drama"), (33, "tie-c", 700, 2.0, "Isekai")]
    con.executemany("INSERT INTO titles VALUES (?, ?, ?, ?, ?)", rows)
    con.close()
    yield path
    release_sandboxes(path)


def verdict(db, expected_sql: str, candidate_sql: str):
    expected, candidate = run_query(db, expected_sql, LIMITS), run_query(db, candidate_sql, LIMITS)
    assert expected.ok and candidate.ok, (expected.error_message, candidate.error_message)
    return compare_query_results(
        expected, candidate, CompareConfig(), EngineSource(db, expected_sql, candidate_sql, LIMITS)
    )


def test_top_ten_highest_first_answered_lowest_first_is_wrong(db):
    gold = "SELECT title, views FROM titles ORDER BY views DESC LIMIT 10"
    wrong = verdict(
        db, gold, "SELECT * FROM (SELECT title, views FROM titles ORDER BY views DESC LIMIT 10) ORDER BY views ASC"
    )
    assert (wrong.match, wrong.rule, wrong.order.status) == (False, "row_order_mismatch", "wrong")
    right = verdict(db, gold, "SELECT title, views FROM titles ORDER BY 2 DESC LIMIT 10")
    assert (right.match, right.order.status) == (True, ORDER_OK)


def test_order_by_without_limit_is_judged(db):
    gold = "SELECT id, views FROM titles WHERE id <= 30 ORDER BY views"
    assert not verdict(db, gold, "SELECT id, views FROM titles WHERE id <= 30 ORDER BY views DESC").match
    assert verdict(db, gold, "SELECT id, views FROM titles WHERE id <= 30 ORDER BY id DESC").match  # same order


def test_rows_tied_on_the_sort_keys_may_come_in_any_order(db):
    gold = "SELECT genre, title FROM titles ORDER BY genre"
    tied = verdict(db, gold, "SELECT genre, title FROM titles ORDER BY genre, title DESC")
    assert (tied.match, tied.order.status) == (True, ORDER_OK)
    untied = verdict(db, gold, "SELECT genre, title FROM titles ORDER BY genre DESC, title")
    assert not untied.match and untied.rule == "row_order_mismatch"


def test_no_outermost_order_by_means_order_is_ignored(db):
    gold = "SELECT title FROM (SELECT title FROM titles ORDER BY views) t"
    result = verdict(db, gold, "SELECT title FROM titles ORDER BY title DESC")
    assert (result.match, result.order.status) == (True, ORDER_NOT_REQUIRED)


def test_ties_at_the_limit_boundary_accept_any_valid_choice(db):
    # views 700 is shared by id 30 and the three tie-* rows; the top 4 ends inside that tie
    gold = "SELECT title, views FROM titles WHERE views <= 720 ORDER BY views DESC LIMIT 4"
    other_choice = "SELECT title, views FROM titles WHERE views <= 720 ORDER BY views DESC, title DESC LIMIT 4"
    result = verdict(db, gold, other_choice)
    assert (result.match, result.rule) == (True, "limit_ties")
    wrong = verdict(db, gold, "SELECT title, views FROM titles WHERE views <= 720 ORDER BY views ASC LIMIT 4")
    assert not wrong.match
    invented = verdict(
        db,
        gold,
        "SELECT CASE WHEN id = 33 THEN 'zzz' ELSE title END AS title, views FROM titles "
        "WHERE views <= 720 ORDER BY views DESC, title DESC LIMIT 4",
    )
    assert not invented.match  # a row with the boundary key that is not one of the tied rows


def test_set_operation_order_by_ordinal(db):
    gold = "SELECT title FROM titles WHERE id < 3 UNION ALL SELECT title FROM titles WHERE id > 31 ORDER BY 1 DESC"
    assert verdict(db, gold, "SELECT title FROM titles WHERE id < 3 OR id > 31 ORDER BY title DESC").match
    assert not verdict(db, gold, "SELECT title FROM titles WHERE id < 3 OR id > 31 ORDER BY title").match


def test_sort_key_by_expression_and_alias_resolve_to_columns():
    spec = order_spec("SELECT lower(title) AS t, views * 2 FROM titles ORDER BY views * 2 DESC, t")
    assert [(k.column, k.descending) for k in spec.keys] == [(1, True), (0, False)]
    spec = order_spec("SELECT title FROM titles ORDER BY views DESC")
    assert [k.column for k in spec.keys] == [None]


def test_key_not_among_the_result_columns_is_checked_as_far_as_visible(db):
    hidden_first = verdict(
        db, "SELECT title FROM titles ORDER BY views DESC", "SELECT title FROM titles ORDER BY views"
    )
    assert (hidden_first.match, hidden_first.order.status) == (True, ORDER_UNCHECKED)
    assert "cannot be checked" in hidden_first.reason
    gold = "SELECT genre, title FROM titles ORDER BY genre, views DESC"
    partial = verdict(db, gold, "SELECT genre, title FROM titles ORDER BY genre, views")
    assert (partial.match, partial.order.status) == (True, ORDER_PARTIAL)
    assert "not among the result columns" in partial.reason
    assert not verdict(db, gold, "SELECT genre, title FROM titles ORDER BY genre DESC, views").match


def test_judge_stores_grade_order_credit_clauses_and_diagnosis(db):

    from nl2sql_pipeline.cases import Case
    from nl2sql_pipeline.results.frames import verdicts_from_frame, verdicts_to_frame
    from nl2sql_pipeline.stages import judge
    from nl2sql_pipeline.stages.records import Attempt, OracleRow

    gold = "SELECT title, views FROM titles ORDER BY views DESC LIMIT 10"
    case = Case(id="top10", domain="d", category="c", question="q", database=str(db), expected_sql=(gold,))
    oracle = [OracleRow("top10", case.fingerprint, 0, run_query(db, gold, LIMITS))]
    candidates = [
        gold,
        "SELECT title, views FROM (" + gold + ") ORDER BY views",
        gold.replace("DESC LIMIT 10", "DESC LIMIT 12"),
    ]
    attempts = [
        Attempt(
            case_id="top10",
            case_fingerprint=case.fingerprint,
            source="model",
            sample_index=i,
            candidate_index=0,
            sql=sql,
            policy_allowed=True,
            result=run_query(db, sql, LIMITS),
        )
        for i, sql in enumerate(candidates)
    ]
    right, reversed_, longer = verdicts_from_frame(verdicts_to_frame(judge([case], oracle, attempts)))
    assert (right.grade, right.order_check, right.diagnosis, right.expected_row_count) == ("pass", "ok", None, 10)
    assert (reversed_.correct, reversed_.grade, reversed_.order_check) == (False, "partial", "wrong")
    assert "wrong_order_or_direction" in reversed_.diagnosis and reversed_.comparison_rule == "row_order_mismatch"
    assert (longer.grade, longer.row_recall, longer.candidate_row_count) == ("partial", 1.0, 12)
    assert longer.row_precision == pytest.approx(10 / 12, abs=1e-6)
    assert "limit_differs" in longer.diagnosis and longer.clause_scores["limit"] == 0.0
