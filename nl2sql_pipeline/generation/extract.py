"""Pull the SQL out of a model's reply: fenced code, JSON, ``SQLQuery:`` styles or plain text.

    >>> extract_sql("Here you go:\\n```sql\\nSELECT 1;\\n```")
    'SELECT 1'
    >>> extract_sql('{"sql": "SELECT name FROM studios"}')
    'SELECT name FROM studios'
    >>> extract_sql("I cannot answer that.") is None
    True

Extraction never repairs or trims the SQL itself beyond surrounding whitespace and trailing
semicolons: whatever the model wrote (a second statement included) goes on to the policy engine.
Explicit SQL (a fence, JSON, tags) is taken as written; SQL found in plain prose must parse (DuckDB's
parser), so a sentence such as "Select the users who signed up in 2025." is not mistaken for SQL.
``None`` means the reply holds no SQL, which the generate loop records as a ``generation_error``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import duckdb

SQL_FENCE_LABELS: frozenset[str] = frozenset({"sql", "duckdb", "postgresql", "postgres", "sqlite", "mysql", "psql"})
JSON_SQL_KEYS: tuple[str, ...] = ("sql", "query", "sql_query", "SQL", "Query", "SQLQuery")

_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)
_LABEL_RE = re.compile(
    r"^[ \t]*(?:SQLQuery|SQL\s+query|SQL|Query)[ \t]*:[ \t]*(.*?)"
    r"(?=^[ \t]*(?:SQLResult|Result|Answer|Explanation)[ \t]*:|\Z)",
    re.IGNORECASE | re.DOTALL | re.MULTILINE,
)
_TAG_RE = re.compile(r"<sql>(.*?)</sql>", re.IGNORECASE | re.DOTALL)
# A line that starts a SQL statement. WITH must look like a CTE so that prose ("With this query, ...")
# does not count; SELECT/FROM must be followed by something query-like.
_STATEMENT_START_RE = re.compile(
    r"^[ \t]*(?:"
    r"WITH\s+(?:RECURSIVE\s+)?[\w\"]+\s*(?:\([^)]*\)\s*)?AS\s*(?:NOT\s+)?(?:MATERIALIZED\s*)?\("
    r"|SELECT\s+(?:DISTINCT\s+|ALL\s+)?(?:\*|[\w\"'(]|-?\d)"
    r"|FROM\s+[\w\"]+"
    r"|(?:INSERT\s+INTO|UPDATE\s+[\w\"]+\s+SET|DELETE\s+FROM|DROP\s+(?:TABLE|VIEW|SCHEMA)|CREATE\s+(?:OR\s+REPLACE\s+)?"
    r"(?:TEMP\s+|TEMPORARY\s+)?(?:TABLE|VIEW|MACRO|SECRET)|ATTACH\s+|COPY\s+|PRAGMA\s+|INSTALL\s+|LOAD\s+)"
    r")",
    re.IGNORECASE | re.MULTILINE,
)
_LINE_COMMENT_RE = re.compile(r"--[^\n]*")
_BLOCK_COMMENT_RE = re.compile(r"/\*.*?\*/", re.DOTALL)


def clean_sql(text: str | None) -> str | None:
    """Trim whitespace and trailing semicolons; None when nothing but comments remains."""
    if text is None:
        return None
    sql = text.strip()
    while sql.endswith(";"):
        sql = sql[:-1].rstrip()
    if "--" in sql or "/*" in sql:  # the comment regexes only run when there may be a comment
        without_comments = _LINE_COMMENT_RE.sub("", _BLOCK_COMMENT_RE.sub("", sql))
        if not without_comments.strip():
            return None
    return sql or None


def _from_json(text: str) -> tuple[bool, str | None]:
    """(was JSON, SQL) for a JSON reply such as ``{"sql": "..."}``."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return False, None
    try:
        data: Any = json.loads(stripped)
    except ValueError:
        return False, None
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, str):
        return True, clean_sql(data) if _STATEMENT_START_RE.search(data) else None
    if not isinstance(data, dict):
        return True, None
    for key in JSON_SQL_KEYS:
        value = data.get(key)
        if isinstance(value, str):
            return True, clean_sql(value)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return True, clean_sql("\n".join(value))
    return True, None


def _from_fences(text: str) -> tuple[bool, str | None]:
    """(had fences, SQL): the first SQL-labelled fence, else a JSON fence, else the first unlabelled one."""
    fences = [(label.lower(), body) for label, body in _FENCE_RE.findall(text)]
    if not fences:
        return False, None
    for label, body in fences:
        if label in SQL_FENCE_LABELS:
            sql = clean_sql(body)
            if sql is not None:
                return True, sql
    for label, body in fences:
        if label == "json":
            is_json, sql = _from_json(body)
            if is_json and sql is not None:
                return True, sql
    for label, body in fences:
        if label == "":
            is_json, sql = _from_json(body)
            if is_json:
                if sql is not None:
                    return True, sql
                continue
            sql = clean_sql(body)
            if sql is not None:
                return True, sql
    return True, None


def parses_as_sql(sql: str) -> bool:
    """True when DuckDB's parser accepts ``sql`` (one or more statements); ~0.1 ms."""
    try:
        return len(duckdb.extract_statements(sql)) > 0
    except duckdb.Error:
        return False


def _from_plain_text(text: str) -> str | None:
    """SQL in unfenced text: a paragraph starting at a statement-looking line that DuckDB can parse.

    Prose that merely starts like a statement ("Select the users who ...") does not parse and is
    passed over. When no paragraph parses, one whose first keyword is written in capitals (``SELECT``,
    not ``Select``) is still taken as the model's (broken) SQL, so it fails as SQL, not as "no SQL".
    """
    fallback: str | None = None
    covered = 0  # candidates inside an already-tried SQL-looking paragraph are not separate statements
    for match in _STATEMENT_START_RE.finditer(text):
        if match.start() < covered:
            continue
        start = text.rfind("\n", 0, match.start()) + 1
        paragraph = re.split(r"\n[ \t]*\n", text[start:], maxsplit=1)[0]
        sql = clean_sql(paragraph)
        if sql is not None and parses_as_sql(sql):
            return sql
        if match.group(0).split(None, 1)[0].isupper():  # SQL-looking: its later lines are part of it
            covered = start + len(paragraph)
            fallback = fallback or sql
        else:  # prose: a statement may still start on its next line
            covered = match.end()
    return fallback


def extract_sql(reply: str | None) -> str | None:
    """The SQL in ``reply``, or None when it holds none.

    Tried in order: a JSON reply (``{"sql": ...}``/``{"query": ...}``), fenced code (first ```sql
    fence, then a ```json one, then an unlabelled one), ``<sql>`` tags, ``SQLQuery:``/``SQL:`` labels,
    and finally plain text starting at the first line that looks like a statement.
    """
    if not reply or not reply.strip():
        return None
    is_json, sql = _from_json(reply)
    if is_json:
        return sql
    had_fences, sql = _from_fences(reply)
    if sql is not None:
        return sql
    tag = _TAG_RE.search(reply)
    if tag:
        return clean_sql(tag.group(1))
    if had_fences:
        # Fences with no SQL in them (say a ```python block): look at the prose around them only.
        reply = _FENCE_RE.sub("\n\n", reply)
    label = _LABEL_RE.search(reply)
    if label:
        sql = _from_plain_text(label.group(1))
        if sql is not None:
            return sql
    return _from_plain_text(reply)
