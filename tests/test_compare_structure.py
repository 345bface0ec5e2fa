"""Clause items from the shared parse tree: the same items as the full parse + normalize path, tree untouched."""

from __future__ import annotations

import pytest
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

from nl2sql_pipeline import sql_ast
from nl2sql_pipeline.compare import structure

SQL = [
    "select u.country, count(*) as n from users as u join orders as o on o.user_id = u.user_id "
    "where o.total > 10 and u.country in ('br', 'de') group by u.country having count(*) > 2 "
    "order by n desc, u.country limit 5",
    "with ranked as (select c.name, row_number() over (partition by c.kind order by c.budget desc) as rk "
    "from campaigns as c) select name from ranked where rk <= 3 order by name",
    "select distinct a.x from a left join b using (id) cross join c",
    "select sum(amount) filter (where status = 'paid') from payments union all select 1 order by 1",
    "select \"user_id\", 'MiXeD' as label from \"users\" where created_at >= date '2024-01-01'",
]


def _full_path(sql: str) -> structure.ClauseItems | None:
    """The items as computed before the shared-tree path existed: a fresh parse, normalized."""
    parsed = sql_ast.DIALECT.parser().parse(list(sql_ast.tokens(sql)), sql)
    return structure._clause_items(normalize_identifiers(parsed[0], dialect=sql_ast.DIALECT), copy_items=False)


@pytest.mark.parametrize("sql", SQL)
def test_the_shared_tree_gives_the_same_items_and_stays_as_it_was(sql: str) -> None:
    structure.parse_clauses.cache_clear()
    tree = sql_ast.parse(sql)
    before = tree.copy()
    assert structure._shared_normalized_tree(sql) is tree
    assert structure.parse_clauses(sql) == _full_path(sql)
    assert tree == before and tree.sql() == before.sql()
    assert all(child.parent is node for node in tree.walk() for child in node.iter_expressions())


@pytest.mark.parametrize("sql", [
    "SELECT U.Country FROM Users AS U",        # upper-case identifiers: normalizing changes them
    'select "Country" from users',             # a quoted identifier DuckDB still folds
    "select 1; select 2",                      # several statements
    "select 1;",                               # a trailing semicolon
])
def test_texts_normalizing_would_change_take_the_full_path(sql: str) -> None:
    assert structure._shared_normalized_tree(sql) is None
    structure.parse_clauses.cache_clear()
    assert structure.parse_clauses(sql) is not None


def test_case_and_quoting_do_not_change_the_items() -> None:
    structure.parse_clauses.cache_clear()
    lower = structure.parse_clauses("select u.country from users as u where u.age > 3")
    upper = structure.parse_clauses('SELECT U.COUNTRY FROM "Users" AS U WHERE U.Age > 3')
    assert lower is not None and lower.items == {**upper.items, "from_join": lower.items["from_join"]}
    assert upper.items["from_join"] == frozenset({'"users" AS u'})
