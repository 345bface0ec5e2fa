"""Spider's hardness (``gold.formats.hardness``): queries from Spider dev's concert_singer database (and a
few built to hit one rule), with the counts and level derived by hand from evaluation.py's eval_hardness."""

from __future__ import annotations

import pytest
import sqlglot

from nl2sql_pipeline.cases import DIFFICULTIES
from nl2sql_pipeline.gold.formats.hardness import (
    HARDNESS_LEVELS,
    HardnessCounts,
    HardnessError,
    hardness_counts,
    hardness_level,
    spider_hardness,
)

# (sql, (component1, component2, others), level): the counts worked out by hand in the comment
KNOWN = [
    # nothing: easy
    ("SELECT count(*) FROM singer", (0, 0, 0), "easy"),
    # WHERE (1); DISTINCT counts nothing
    ("SELECT DISTINCT country FROM singer WHERE age > 20", (1, 0, 0), "easy"),
    # ORDER BY (1); three columns (others 1)
    ("SELECT name, country, age FROM singer ORDER BY age DESC", (1, 0, 1), "medium"),
    # WHERE (1); three aggregates (1) and three columns (1): others 2 <= 2 with component1 <= 1
    ("SELECT avg(age), min(age), max(age) FROM singer WHERE country = 'France'", (1, 0, 2), "medium"),
    # ORDER BY + LIMIT (2); two columns (1): component1 <= 2 and others < 2
    ("SELECT song_name, song_release_year FROM singer ORDER BY age LIMIT 1", (2, 0, 1), "medium"),
    # one join + GROUP BY (2); three columns (1)
    (
        "SELECT T2.concert_name, T2.theme, count(*) FROM singer_in_concert AS T1 JOIN concert AS T2 "
        "ON T1.concert_id = T2.concert_id GROUP BY T2.concert_id",
        (2, 0, 1),
        "medium",
    ),
    # WHERE (1) and a nested query in it (component2 1), nothing else: the third "hard" rule
    ("SELECT song_name FROM singer WHERE age > (SELECT avg(age) FROM singer)", (1, 1, 0), "hard"),
    # NOT IN: Spider counts the negated condition as an aggregate, but one is not > 1
    ("SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)", (1, 1, 0), "hard"),
    # a set operation is one nested query; only the left SELECT's clauses count (its WHERE: 1)
    (
        "SELECT country FROM singer WHERE age > 40 INTERSECT SELECT country FROM singer WHERE age < 30",
        (1, 1, 0),
        "hard",
    ),
    # two joins + WHERE (3), others 0: the second "hard" rule (2 < component1 <= 3)
    (
        "SELECT DISTINCT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id "
        "JOIN concert AS T3 ON T2.concert_id = T3.concert_id WHERE T3.year = 2014",
        (3, 0, 0),
        "hard",
    ),
    # WHERE (1); 2 aggregates, 3 columns, 2 WHERE conditions: others 3 > 2: the first "hard" rule
    ("SELECT a, max(b), min(b) FROM t WHERE x = 1 AND y = 2", (1, 0, 3), "hard"),
    # join + WHERE + GROUP BY + ORDER BY + LIMIT (5); the ORDER BY key is an aggregate (1 of them), 2 columns
    (
        "SELECT T2.name, T2.capacity FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id "
        "WHERE T1.year >= 2014 GROUP BY T2.stadium_id ORDER BY count(*) DESC LIMIT 1",
        (5, 0, 1),
        "extra",
    ),
    # a nested query and two columns: no "hard" rule allows others > 0 with component2 > 0
    ("SELECT name, age FROM singer WHERE age IN (SELECT max(age) FROM singer)", (1, 1, 1), "extra"),
    # WHERE (1) + one OR (1) + one LIKE (1) = 3, two WHERE conditions (others 1): hard by the second rule
    ("SELECT name FROM singer WHERE name LIKE '%a%' OR country = 'France'", (3, 0, 1), "hard"),
    # HAVING: count(*) > 1 itself is not counted; the AND between its conditions is (1 aggregate, not > 1)
    ("SELECT country FROM singer GROUP BY country HAVING count(*) > 1 AND avg(age) > 30", (1, 0, 0), "easy"),
    # the select item starts with an aggregate: max(a) - min(a) counts once; with count(*): 2 aggregates
    ("SELECT max(age) - min(age), count(*) FROM singer", (0, 0, 2), "medium"),
    # a subquery in FROM is a table (no join, no nested query)
    ("SELECT count(*) FROM (SELECT DISTINCT country FROM singer)", (0, 0, 0), "easy"),
]


@pytest.mark.parametrize(("sql", "counts", "level"), KNOWN, ids=[f"{i:02d}-{k[2]}" for i, k in enumerate(KNOWN)])
def test_hardness_follows_spiders_eval_hardness(sql, counts, level):
    found = hardness_counts(sqlglot.parse_one(sql, read="sqlite"))
    assert (found.component1, found.component2, found.others) == counts
    assert found.level == level
    assert spider_hardness(sql) == level


def test_every_level_is_covered_and_is_a_case_difficulty():
    assert {level for _, _, level in KNOWN} == set(HARDNESS_LEVELS) == {"easy", "medium", "hard", "extra"}
    assert set(HARDNESS_LEVELS) <= set(DIFFICULTIES)


@pytest.mark.parametrize(
    ("counts", "level"),
    [
        ((1, 0, 0), "easy"),
        ((2, 0, 0), "medium"),  # component1 <= 2, others < 2
        ((1, 0, 2), "medium"),  # others <= 2, component1 <= 1
        ((2, 0, 2), "extra"),  # no medium rule (component1 > 1, others not < 2) and no hard rule
        ((2, 0, 3), "hard"),
        ((3, 0, 2), "hard"),
        ((4, 0, 0), "extra"),
        ((1, 1, 0), "hard"),
        ((2, 1, 0), "extra"),
        ((0, 2, 0), "extra"),
    ],
)
def test_the_decision_rules(counts, level):
    assert hardness_level(*counts) == level
    assert HardnessCounts(*counts).level == level


def test_the_source_dialect_is_used_and_what_does_not_parse_is_a_typed_error():
    assert spider_hardness("SELECT a::int FROM t WHERE b ILIKE 'x%'", "postgres") == "medium"  # WHERE + LIKE
    assert spider_hardness('SELECT name FROM singer WHERE name LIKE "%a%";') == "medium"  # SQLite's "x", one ;
    with pytest.raises(HardnessError, match="does not parse as sqlite"):
        spider_hardness("SELECT FROM WHERE (")
    with pytest.raises(HardnessError, match="not exactly one query"):
        spider_hardness("SELECT 1; SELECT 2")


# Spider dev gold queries, as written in dev.json, with the hardness Spider's evaluation.py printed for them
# (a published error analysis of a Spider dev run lists each query with its hardness).
LABELLED_DEV = [
    (
        "SELECT T2.name ,  count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id  =  T2.stadium_id "
        "GROUP BY T1.stadium_id",
        "medium",
    ),
    (
        "select count(*) from concert where stadium_id = (select stadium_id from stadium order by capacity desc "
        "limit 1)",
        "hard",
    ),
    (
        "SELECT T1.lname FROM student AS T1 JOIN has_pet AS T2 ON T1.stuid  =  T2.stuid JOIN pets AS T3 "
        "ON T3.petid  =  T2.petid WHERE T3.pet_age  =  3 AND T3.pettype  =  'cat'",
        "hard",
    ),
    (
        "SELECT T1.Model FROM CAR_NAMES AS T1 JOIN CARS_DATA AS T2 ON T1.MakeId  =  T2.Id "
        "ORDER BY T2.horsepower ASC LIMIT 1;",
        "hard",
    ),
    (
        "SELECT T1.model FROM CAR_NAMES AS T1 JOIN CARS_DATA AS T2 ON T1.MakeId  =  T2.Id "
        "WHERE T2.Weight  <  (SELECT avg(Weight) FROM CARS_DATA)",
        "extra",
    ),
    (
        "SELECT T1.ContId ,  T1.Continent ,  count(*) FROM CONTINENTS AS T1 JOIN COUNTRIES AS T2 "
        "ON T1.ContId  =  T2.Continent GROUP BY T1.ContId;",
        "medium",
    ),
    ("select max(capacity), average from stadium", "medium"),
    (
        "SELECT stuid FROM student EXCEPT SELECT T1.stuid FROM student AS T1 JOIN has_pet AS T2 "
        "ON T1.stuid  =  T2.stuid JOIN pets AS T3 ON T3.petid  =  T2.petid WHERE T3.pettype  =  'cat'",
        "hard",
    ),
    ("SELECT pettype ,  weight FROM pets ORDER BY pet_age LIMIT 1", "medium"),
]


@pytest.mark.parametrize(("sql", "level"), LABELLED_DEV, ids=[f"dev-{i}" for i in range(len(LABELLED_DEV))])
def test_hardness_agrees_with_spiders_evaluator_on_dev_queries(sql, level):
    assert spider_hardness(sql) == level
