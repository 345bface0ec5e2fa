"""Clause items skip the identifier normalization only where it would change nothing: the same items as
normalizing every tree, and stored items round-trip."""

from __future__ import annotations

import pytest
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from nl2sql_pipeline.compare import structure
from nl2sql_pipeline.sql import parse as sql_ast

SQL = [
    "select u.country, count(*) as n from users as u join orders as o on o.user_id = u.user_id "
    "where o.total > 10 and u.country in ('br', 'de') group by u.country having count(*) > 2 "
    "order by n desc, u.country limit 5",
    "with ranked as (select c.name, row_number() over (partition by c.kind order by c.budget desc) as rk "
    "from campaigns as c) select name from ranked where rk <= 3 order by name",
    "select distinct a.x from a left join b using (id) cross join c",
    "select sum(amount) filter (where status = 'paid') from payments union all select 1 order by 1",
    "select \"user_id\", 'MiXeD' as label from \"users\" where created_at >= date '2024-01-01'",
    'SELECT U.Country, "Name" FROM Users AS U WHERE U.Age > 3 ORDER BY 1',
    "select 1; select 2",
]


def _always_normalized(sql: str) -> structure.ClauseItems | None:
    """The items as computed before: every tree normalized."""
    parsed = sql_ast.DIALECT.parser().parse(list(sql_ast.tokens(sql)), sql)
    tree = parsed[0] if len(parsed) == 1 else structure.exp.Block(expressions=parsed)
    return structure._clause_items(normalize_identifiers(tree, dialect=sql_ast.DIALECT))


@pytest.mark.parametrize("sql", SQL)
def test_skipping_a_no_op_normalization_gives_the_same_items(sql: str) -> None:
    structure.parse_clauses.cache_clear()
    assert structure.parse_clauses(sql) == _always_normalized(sql)


def test_only_trees_with_upper_case_identifiers_are_normalized() -> None:
    assert not structure.needs_normalizing(sql_ast.parse("select a.x, 'UPPER' as y from t as a where b = 'Q'"))
    assert structure.needs_normalizing(sql_ast.parse("select A.x from t as a"))
    assert structure.needs_normalizing(sql_ast.parse('select "Name" from t'))  # DuckDB folds quoted ones too


def test_case_and_quoting_do_not_change_the_items() -> None:
    structure.parse_clauses.cache_clear()
    lower = structure.parse_clauses("select u.country from users as u where u.age > 3")
    upper = structure.parse_clauses('SELECT U.COUNTRY FROM "Users" AS U WHERE U.Age > 3')
    assert lower is not None and upper is not None
    assert {k: v for k, v in lower.items.items() if k != "from_join"} == {
        k: v for k, v in upper.items.items() if k != "from_join"
    }
    assert upper.items["from_join"] == frozenset({'"users" AS u'})


def test_clause_items_round_trip_through_json() -> None:
    items = structure.parse_clauses(SQL[0])
    assert items is not None and structure.ClauseItems.from_json(items.to_json()) == items
