"""Row order from the expected query's AST: ORDER BY direction, ties, LIMIT boundary ties, key resolution, and
sort keys that are not result columns (evaluated on the gold)."""

from __future__ import annotations

import duckdb
import pytest

from nl2sql_pipeline.compare import CompareConfig, EngineSource, compare_query_results
from nl2sql_pipeline.compare.keyed import keyed_sql
from nl2sql_pipeline.compare.order import (
    ORDER_NOT_REQUIRED,
    ORDER_OK,
    ORDER_PARTIAL,
    ORDER_UNCHECKED,
    ORDER_WRONG,
    order_spec,
)
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


def test_key_not_among_the_result_columns_is_evaluated_on_the_gold(db):
    reversed_ = verdict(db, "SELECT title FROM titles ORDER BY views DESC", "SELECT title FROM titles ORDER BY views")
    assert (reversed_.match, reversed_.rule, reversed_.order.status) == (False, "row_order_mismatch", ORDER_WRONG)
    gold = "SELECT genre, title FROM titles ORDER BY genre, views DESC"
    second_key = verdict(db, gold, "SELECT genre, title FROM titles ORDER BY genre, views")
    assert (second_key.match, second_key.order.status) == (False, ORDER_WRONG)
    assert not verdict(db, gold, "SELECT genre, title FROM titles ORDER BY genre DESC, views").match
    # views 700 is shared by four titles, in different genres: within genre every row has its own key
    right = verdict(db, gold, "SELECT genre, title FROM titles ORDER BY genre, views * 2 DESC")
    assert (right.match, right.order.status) == (True, ORDER_OK)


def test_hidden_key_checked_as_far_as_visible_when_the_gold_cannot_be_re_run(db):
    gold = "SELECT genre, title FROM titles ORDER BY genre, views DESC"
    expected = run_query(db, gold, LIMITS)
    candidate = run_query(db, "SELECT genre, title FROM titles ORDER BY genre, views", LIMITS)
    no_database = compare_query_results(expected, candidate, CompareConfig(), EngineSource(None, gold, "x", LIMITS))
    assert (no_database.match, no_database.order.status) == (True, ORDER_PARTIAL)
    assert "not among the result columns" in no_database.reason
    assert "could not be re-run with its sort keys as columns (no database to run it on)" in no_database.reason
    first_hidden = "SELECT title FROM titles ORDER BY views DESC"
    unchecked = compare_query_results(
        run_query(db, first_hidden, LIMITS),
        run_query(db, "SELECT title FROM titles ORDER BY views", LIMITS),
        CompareConfig(),
        EngineSource(None, first_hidden, "x", LIMITS),
    )
    assert (unchecked.match, unchecked.order.status) == (True, ORDER_UNCHECKED)
    assert "cannot be checked" in unchecked.reason


def capped_verdict(db, expected_sql: str, candidate_sql: str, row_cap: int):
    limits = SandboxLimits(row_cap=row_cap)
    expected, candidate = run_query(db, expected_sql, limits), run_query(db, candidate_sql, limits)
    assert expected.truncated and candidate.truncated
    return compare_query_results(
        expected, candidate, CompareConfig(), EngineSource(db, expected_sql, candidate_sql, limits)
    )


def test_order_over_the_row_cap_is_checked_on_the_whole_results(db):
    gold = "SELECT title FROM titles ORDER BY views DESC"  # the sort key is not a result column
    reversed_ = capped_verdict(db, gold, "SELECT title FROM titles ORDER BY views", 5)
    assert (reversed_.match, reversed_.rule, reversed_.order.status) == (False, "row_order_mismatch", ORDER_WRONG)
    assert "checked on the whole results in the engine" in reversed_.reason
    # views 700 is shared by four titles: ties in any order
    tied = capped_verdict(db, gold, "SELECT title FROM titles ORDER BY views DESC, title DESC", 5)
    assert (tied.match, tied.order.status) == (True, ORDER_OK), tied.reason
    # the first rows (all that is fetched) are in order, the rest is not
    visible = "SELECT id, views FROM titles ORDER BY views DESC, id"
    late = capped_verdict(
        db, visible, "SELECT id, views FROM titles ORDER BY CASE WHEN id <= 10 THEN views ELSE -views END DESC, id", 5
    )
    assert (late.match, late.rule, late.order.status) == (False, "row_order_mismatch", ORDER_WRONG)
    assert capped_verdict(db, visible, "SELECT id, views FROM titles ORDER BY 2 DESC, 1", 5).match


@pytest.fixture(scope="module")
def people(tmp_path_factory):
    """``people``: names stored out of age order, two tied at age 30; ``sorted_people``: the same by age."""
    path = tmp_path_factory.mktemp("order") / "people.duckdb"
    con = duckdb.connect(str(path))
    rows = [("cy", 41), ("al", 30), ("bo", 22), ("di", 30), ("ed", 57), ("fa", 19)]
    con.execute("CREATE TABLE people (name VARCHAR, age INTEGER)")
    con.executemany("INSERT INTO people VALUES (?, ?)", rows)
    con.execute("CREATE TABLE sorted_people AS SELECT * FROM people ORDER BY age, name")
    con.execute("CREATE TABLE t (name VARCHAR, n INTEGER)")
    con.execute("INSERT INTO t VALUES ('a', 1), ('b', 3), ('c', 2), ('d', 3)")
    con.close()
    yield path
    release_sandboxes(path)


def test_order_by_a_key_that_is_not_selected(people):
    gold = "SELECT name FROM people ORDER BY age"
    descending = verdict(people, gold, "SELECT name FROM people ORDER BY age DESC")
    assert (descending.match, descending.rule, descending.order.status) == (False, "row_order_mismatch", ORDER_WRONG)
    assert "out of order" in descending.reason
    unordered = verdict(people, gold, "SELECT name FROM people")  # stored out of age order
    assert (unordered.match, unordered.rule) == (False, "row_order_mismatch")
    same_order = verdict(people, gold, "SELECT name FROM (SELECT name, age + 1 AS a FROM people) ORDER BY a")
    assert (same_order.match, same_order.order.status) == (True, ORDER_OK)
    happens_sorted = verdict(people, "SELECT name FROM sorted_people ORDER BY age", "SELECT name FROM sorted_people")
    assert (happens_sorted.match, happens_sorted.order.status) == (True, ORDER_OK)
    # al and di are both 30: either may come first
    for tiebreak in ("name", "name DESC"):
        tied = verdict(people, gold, f"SELECT name FROM people ORDER BY age, {tiebreak}")
        assert (tied.match, tied.order.status) == (True, ORDER_OK), tied.reason
    swapped = verdict(
        people, gold, "SELECT name FROM people ORDER BY CASE name WHEN 'bo' THEN 19 WHEN 'fa' THEN 22 ELSE age END"
    )
    assert (swapped.match, swapped.rule) == (False, "row_order_mismatch")


def test_hidden_key_order_over_the_row_cap(people):
    gold = "SELECT name FROM people ORDER BY age"
    for tiebreak in ("name", "name DESC"):  # al and di are both 30
        tied = capped_verdict(people, gold, f"SELECT name FROM people ORDER BY age, {tiebreak}", 2)
        assert (tied.match, tied.order.status) == (True, ORDER_OK), tied.reason
    assert capped_verdict(people, gold, "SELECT name FROM people ORDER BY age DESC", 2).rule == "row_order_mismatch"
    assert capped_verdict(people, gold, "SELECT name FROM people", 2).rule == "row_order_mismatch"


def test_tie_at_a_limit_with_the_sort_key_not_selected(people):
    gold = "SELECT name FROM t ORDER BY n DESC LIMIT 1"  # b and d tie on n = 3
    for tiebreak in ("name", "name DESC"):
        kept = verdict(people, gold, f"SELECT name FROM t ORDER BY n DESC, {tiebreak} LIMIT 1")
        assert kept.match and kept.rule in ("multiset_exact", "limit_ties"), kept.reason
    other = verdict(people, gold, "SELECT name FROM t WHERE name <> (" + gold + ") ORDER BY n DESC LIMIT 1")
    assert (other.match, other.rule) == (True, "limit_ties")
    assert "2 rows tie with the last one" in other.reason
    not_tied = verdict(people, gold, "SELECT name FROM t ORDER BY n LIMIT 1")
    assert not not_tied.match
    top_two = "SELECT name FROM t ORDER BY n LIMIT 3"  # a, c, then b or d
    assert verdict(people, top_two, "SELECT name FROM t ORDER BY n, name DESC LIMIT 3").match
    wrong_order = verdict(people, top_two, "SELECT name FROM t ORDER BY n DESC, name DESC LIMIT 3")
    assert not wrong_order.match
    misplaced = verdict(people, top_two, f"SELECT name FROM ({top_two}) ORDER BY name DESC")
    assert (misplaced.match, misplaced.rule) == (False, "row_order_mismatch")
    other_misplaced = verdict(
        people, top_two, "SELECT name FROM (SELECT * FROM t ORDER BY n, name DESC LIMIT 3) ORDER BY name DESC"
    )
    assert not other_misplaced.match  # the other tied row, but out of order
    for tiebreak in ("name", "name DESC"):
        assert not verdict(
            people, top_two, f"SELECT name FROM (SELECT * FROM t ORDER BY n, {tiebreak} LIMIT 3) ORDER BY name DESC"
        ).match


def test_hidden_keys_of_aggregates_set_operations_and_distinct(db):
    grouped = "SELECT genre FROM titles GROUP BY genre ORDER BY sum(views)"
    assert verdict(db, grouped, "SELECT genre FROM titles GROUP BY genre ORDER BY avg(views) * count(*)").match
    assert not verdict(db, grouped, "SELECT genre FROM titles GROUP BY genre ORDER BY sum(views) DESC").match
    union = "SELECT title FROM titles WHERE id < 3 UNION ALL SELECT title FROM titles WHERE id > 31 ORDER BY upper(title) DESC"
    assert verdict(db, union, "SELECT title FROM titles WHERE id < 3 OR id > 31 ORDER BY title DESC").match
    assert not verdict(db, union, "SELECT title FROM titles WHERE id < 3 OR id > 31 ORDER BY title").match
    distinct = "SELECT DISTINCT genre FROM titles ORDER BY length(genre), genre"
    assert not verdict(db, distinct, "SELECT DISTINCT genre FROM titles ORDER BY genre DESC").match
    assert verdict(db, distinct, "SELECT genre FROM titles GROUP BY genre ORDER BY length(genre), genre").match


def test_keyed_sql_appends_hidden_keys_after_the_result_columns():
    assert keyed_sql("SELECT name FROM t ORDER BY age DESC LIMIT 2") == (
        "SELECT name, age AS __order_key_0 FROM t ORDER BY age DESC LIMIT 2"
    )
    assert keyed_sql("SELECT a, b FROM t ORDER BY 2, c", keep_limit=False) == (
        "SELECT a, b, c AS __order_key_0 FROM t ORDER BY 2, c"
    )
    assert keyed_sql("SELECT DISTINCT a FROM t ORDER BY a + 1 LIMIT 3 OFFSET 1", keep_limit=False) == (
        "SELECT *, a + 1 AS __order_key_0 FROM (SELECT DISTINCT a FROM t) AS __order_q ORDER BY a + 1 OFFSET 1"
    )
    assert keyed_sql("SELECT a FROM t ORDER BY a") is None  # no hidden key
    assert keyed_sql("SELECT a FROM t ORDER BY 3") is None  # an ordinal out of range


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
