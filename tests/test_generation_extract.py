"""extract_sql over the reply styles models actually produce."""

from __future__ import annotations

import pytest

from nl2sql_pipeline.generation.extract import extract_sql

CASES = [
    # fenced code
    ("sql fence", "```sql\nSELECT 1;\n```", "SELECT 1"),
    ("upper-case label, prose around", "Sure!\n```SQL\nSELECT a\nFROM t;;\n```\nThis counts rows.", "SELECT a\nFROM t"),
    ("duckdb label", "```duckdb\nFROM users SELECT count(*)\n```", "FROM users SELECT count(*)"),
    ("unlabelled fence", "```\nSELECT 2\n```", "SELECT 2"),
    ("first sql fence wins", "```sql\nSELECT 1\n```\nor\n```sql\nSELECT 2\n```", "SELECT 1"),
    ("python fence skipped", "```python\nprint(1)\n```\n```sql\nSELECT 3\n```", "SELECT 3"),
    ("sql fence preferred to unlabelled", "```\nnotes\n```\n```sql\nSELECT 4\n```", "SELECT 4"),
    ("unterminated fence", "```sql\nSELECT 5 FROM t", "SELECT 5 FROM t"),
    ("fence with inner comment kept", "```sql\n-- top users\nSELECT 6\n```", "-- top users\nSELECT 6"),
    ("second statement kept for the policy", "```sql\nSELECT 1; DROP TABLE users;\n```", "SELECT 1; DROP TABLE users"),
    ("semicolon inside a string kept", "```sql\nSELECT 'a;b' AS x;\n```", "SELECT 'a;b' AS x"),
    # JSON
    ("json sql key", '{"sql": "SELECT 7;"}', "SELECT 7"),
    ("json query key", '{"query": "SELECT 8", "explanation": "counts"}', "SELECT 8"),
    ("json in a json fence", '```json\n{"query": "SELECT 9"}\n```', "SELECT 9"),
    ("json in an unlabelled fence", '```\n{"sql": "SELECT 10"}\n```', "SELECT 10"),
    ("json list of lines", '{"sql": ["SELECT a", "FROM t"]}', "SELECT a\nFROM t"),
    ("json without sql", '{"sql": null, "error": "ambiguous question"}', None),
    ("json with empty sql", '{"sql": "  "}', None),
    ("json with other keys only", '{"answer": 42}', None),
    # labels and tags
    ("SQLQuery style", "SQLQuery: SELECT 11 FROM t\nSQLResult: 42\nAnswer: 42", "SELECT 11 FROM t"),
    (
        "SQLQuery after question",
        "Question: how many?\nSQLQuery: SELECT count(*) FROM users",
        "SELECT count(*) FROM users",
    ),
    ("SQL: label", "SQL: SELECT 12;", "SELECT 12"),
    ("sql tags", "<sql>SELECT 13</sql>", "SELECT 13"),
    # plain text
    ("bare SQL", "SELECT 14", "SELECT 14"),
    ("bare SQL with semicolon and spaces", "  SELECT 15 ;  \n", "SELECT 15"),
    (
        "prose then SQL then prose",
        "Here is the query:\nSELECT *\nFROM users\nWHERE x = 1;\n\nIt returns all users.",
        "SELECT *\nFROM users\nWHERE x = 1",
    ),
    (
        "CTE after prose starting with 'With'",
        "With this query, we count.\nWITH t AS (SELECT 1) SELECT * FROM t",
        "WITH t AS (SELECT 1) SELECT * FROM t",
    ),
    ("lower-case SQL", "select name from studios", "select name from studios"),
    ("hostile statement still extracted", "DROP TABLE users", "DROP TABLE users"),
    ("prose line then SQL", "Select the users table:\nSELECT * FROM users", "SELECT * FROM users"),
    ("broken upper-case SQL still goes on as SQL", "SELECT a FROM t WHERE", "SELECT a FROM t WHERE"),
    ("broken SQL is not shortened to a part that parses", "SELECT a b c\nFROM t", "SELECT a b c\nFROM t"),
    ("SQL label with prose answer", "SQL: Select the rows you need.\n\nSELECT 16", "SELECT 16"),
    # prose that starts like a statement is not SQL
    ("prose 'Select the ...'", "Select the users who signed up in 2025.", None),
    ("prose 'Select all ...' with a full stop", "Select all users.", None),
    ("prose 'From the ...'", "From the users table, count the rows that match.", None),
    ("prose 'With ...' that is no CTE", "With pleasure. I need more details first.", None),
    # no SQL
    ("refusal", "I cannot answer that question with this schema.", None),
    ("comments only in a fence", "```sql\n-- no idea\n/* sorry */\n```", None),
    ("semicolons only", "```sql\n;\n```", None),
    ("empty", "", None),
    ("whitespace", "   \n\t", None),
    ("None", None, None),
    ("python only", "```python\nprint('SELECT')\n```", None),
]


@pytest.mark.parametrize(("reply", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_extract_sql(reply, expected):
    assert extract_sql(reply) == expected
