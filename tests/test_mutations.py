"""SQL mutations: each rule on a small example, and the composed ``mutate``."""

from __future__ import annotations

import random

import pytest
import sqlglot

from nl2sql_pipeline.generation import mutations as m

DIALECT = "duckdb"


def apply(rule, sql: str, seed: int = 0) -> str | None:
    out = rule(sqlglot.parse_one(sql, dialect=DIALECT), random.Random(seed))
    return None if out is None else out.sql(dialect=DIALECT)


def outputs(rule, sql: str, seeds: int = 30) -> set[str | None]:
    return {apply(rule, sql, seed) for seed in range(seeds)}


def test_drop_where_predicate_drops_one_conjunct():
    got = outputs(m.drop_where_predicate, "SELECT a FROM t WHERE a > 1 AND b = 2 AND c < 3")
    assert got == {
        "SELECT a FROM t WHERE b = 2 AND c < 3",
        "SELECT a FROM t WHERE a > 1 AND c < 3",
        "SELECT a FROM t WHERE a > 1 AND b = 2",
    }
    assert apply(m.drop_where_predicate, "SELECT a FROM t WHERE a > 1") == "SELECT a FROM t"
    assert apply(m.drop_where_predicate, "SELECT a FROM t") is None


def test_swap_aggregate_pairs():
    assert apply(m.swap_aggregate, "SELECT SUM(x) FROM t") == "SELECT AVG(x) FROM t"
    assert apply(m.swap_aggregate, "SELECT AVG(x) FROM t") == "SELECT SUM(x) FROM t"
    assert apply(m.swap_aggregate, "SELECT MIN(x) FROM t") == "SELECT MAX(x) FROM t"
    assert apply(m.swap_aggregate, "SELECT MAX(x) FROM t") == "SELECT MIN(x) FROM t"
    assert apply(m.swap_aggregate, "SELECT COUNT(DISTINCT x) FROM t") == "SELECT COUNT(x) FROM t"
    assert apply(m.swap_aggregate, "SELECT COUNT(*) FROM t") is None


def test_change_join_type_inner_to_left_only():
    assert (
        apply(m.change_join_type, "SELECT * FROM a JOIN b ON a.id = b.id")
        == "SELECT * FROM a LEFT JOIN b ON a.id = b.id"
    )
    assert (
        apply(m.change_join_type, "SELECT * FROM a INNER JOIN b USING (id)") == "SELECT * FROM a LEFT JOIN b USING (id)"
    )
    assert apply(m.change_join_type, "SELECT * FROM a LEFT JOIN b ON a.id = b.id") is None
    assert apply(m.change_join_type, "SELECT * FROM a CROSS JOIN b") is None


def test_drop_distinct():
    assert apply(m.drop_distinct, "SELECT DISTINCT a FROM t") == "SELECT a FROM t"
    assert apply(m.drop_distinct, "SELECT a FROM t") is None


def test_shift_date_bound_moves_a_date_literal():
    for seed in range(10):
        out = apply(m.shift_date_bound, "SELECT a FROM t WHERE d >= DATE '2026-01-01' AND n = 'x'", seed)
        assert out is not None and "2026-01-01" not in out and "n = 'x'" in out
    assert apply(m.shift_date_bound, "SELECT a FROM t WHERE ts < '2026-03-01 00:00:00'", 4) == (
        "SELECT a FROM t WHERE ts < '2026-02-28 00:00:00'"
    )
    assert apply(m.shift_date_bound, "SELECT a FROM t WHERE name = 'Akira'") is None
    assert apply(m.shift_date_bound, "SELECT a FROM t WHERE d = '2026-02-30'") is None  # not a real date


def test_alter_limit():
    assert outputs(m.alter_limit, "SELECT a FROM t LIMIT 10") == {
        "SELECT a FROM t LIMIT 9",
        "SELECT a FROM t LIMIT 11",
        "SELECT a FROM t LIMIT 20",
    }
    assert outputs(m.alter_limit, "SELECT a FROM t LIMIT 1") == {"SELECT a FROM t LIMIT 2"}
    assert apply(m.alter_limit, "SELECT a FROM t") is None


def test_flip_comparison():
    assert apply(m.flip_comparison, "SELECT a FROM t WHERE a > 1") == "SELECT a FROM t WHERE a >= 1"
    assert apply(m.flip_comparison, "SELECT a FROM t WHERE a >= 1") == "SELECT a FROM t WHERE a > 1"
    assert apply(m.flip_comparison, "SELECT a FROM t WHERE a < 1") == "SELECT a FROM t WHERE a <= 1"
    assert apply(m.flip_comparison, "SELECT a FROM t WHERE a <= 1") == "SELECT a FROM t WHERE a < 1"
    assert apply(m.flip_comparison, "SELECT a FROM t WHERE a = 1") is None


def test_drop_order_tiebreaker_leaves_window_orders_alone():
    assert apply(m.drop_order_tiebreaker, "SELECT a FROM t ORDER BY a DESC, b") == "SELECT a FROM t ORDER BY a DESC"
    assert apply(m.drop_order_tiebreaker, "SELECT a FROM t ORDER BY a") is None
    windowed = "SELECT ROW_NUMBER() OVER (ORDER BY a, b) AS r FROM t"
    assert apply(m.drop_order_tiebreaker, windowed) is None


def test_drop_group_by_key_drops_the_projection_and_renumbers():
    got = outputs(m.drop_group_by_key, "SELECT a, b AS bb, SUM(x) FROM t GROUP BY a, b ORDER BY bb, 3 DESC")
    assert got == {
        "SELECT a, SUM(x) FROM t GROUP BY a ORDER BY 2 DESC",
        "SELECT b AS bb, SUM(x) FROM t GROUP BY b ORDER BY bb, 2 DESC",
    }
    assert apply(m.drop_group_by_key, "SELECT a, count(*) FROM t GROUP BY 1") == "SELECT COUNT(*) FROM t"
    assert apply(m.drop_group_by_key, "SELECT a FROM t GROUP BY a") is None  # nothing left to select
    # a CTE's projection may be used outside it: only keys it does not project may go
    cte = "WITH c AS (SELECT a, SUM(x) AS s FROM t GROUP BY a, b) SELECT a, s FROM c"
    assert apply(m.drop_group_by_key, cte) is not None
    expected = "WITH c AS (SELECT a, SUM(x) AS s FROM t GROUP BY a) SELECT a, s FROM c"
    assert outputs(m.drop_group_by_key, cte) == {expected}


def test_rules_do_not_touch_sql_they_do_not_apply_to():
    plain = "SELECT name FROM studios"
    for rule in m.MUTATIONS:
        assert apply(rule, plain) is None, rule.__name__


def test_mutations_list_is_ordered_and_named():
    assert m.MUTATION_NAMES == (
        "drop_where_predicate",
        "swap_aggregate",
        "change_join_type",
        "drop_distinct",
        "shift_date_bound",
        "alter_limit",
        "flip_comparison",
        "drop_order_tiebreaker",
        "drop_group_by_key",
    )


RICH_SQL = [
    "SELECT a.title, COUNT(DISTINCT r.user_id) AS raters FROM anime AS a JOIN ratings AS r ON r.anime_id = a.anime_id "
    "WHERE r.rated_at >= DATE '2026-01-01' AND r.score > 7 GROUP BY a.title ORDER BY raters DESC, a.title LIMIT 10",
    "SELECT DISTINCT u.country FROM users AS u WHERE u.signup_date < '2025-06-01'",
    "WITH m AS (SELECT DATE_TRUNC('month', o.ordered_at) AS month, SUM(o.total) AS revenue FROM merch_orders AS o "
    "GROUP BY 1) SELECT month, revenue FROM m ORDER BY month",
    "SELECT MIN(e.air_date), MAX(e.air_date) FROM episodes AS e",
]


@pytest.mark.parametrize("sql", RICH_SQL)
def test_every_applicable_mutation_gives_parseable_different_sql(sql):
    original = sqlglot.parse_one(sql, dialect=DIALECT).sql(dialect=DIALECT)
    applied = 0
    for rule in m.MUTATIONS:
        for seed in range(5):
            out = apply(rule, sql, seed)
            if out is None:
                continue
            applied += 1
            assert out != original, rule.__name__
            sqlglot.parse_one(out, dialect=DIALECT)  # raises if unparseable
    assert applied > 0


@pytest.mark.parametrize("sql", RICH_SQL)
def test_mutate_is_seeded_and_names_its_mutation(sql):
    original = sqlglot.parse_one(sql, dialect=DIALECT).sql(dialect=DIALECT)
    seen = set()
    for seed in range(20):
        first = m.mutate(sql, random.Random(seed))
        assert first == m.mutate(sql, random.Random(seed))  # same rng seed, same answer
        mutated, name = first
        assert name in m.MUTATION_NAMES
        assert mutated != original
        sqlglot.parse_one(mutated, dialect=DIALECT)
        seen.add(name)
    applicable = {rule.__name__ for rule in m.MUTATIONS if apply(rule, sql) is not None}
    assert seen <= applicable
    assert len(seen) >= min(2, len(applicable))  # the rng really chooses between rules


def test_mutate_returns_input_when_nothing_applies():
    assert m.mutate("SELECT name FROM studios", random.Random(1)) == ("SELECT name FROM studios", None)
    assert m.mutate("SELEC nonsense (", random.Random(1)) == ("SELEC nonsense (", None)


def test_rules_leave_their_input_tree_untouched_when_given_a_copy():
    tree = sqlglot.parse_one(RICH_SQL[0], dialect=DIALECT)
    before = tree.sql(dialect=DIALECT)
    m.mutate(RICH_SQL[0], random.Random(3))
    assert tree.sql(dialect=DIALECT) == before


def test_docstring_examples_hold():
    import doctest

    from nl2sql_pipeline.generation import extract

    for module in (m, extract):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
