"""Plain question/SQL/database files (CSV or JSONL), and defog sql-eval's CSV.

Plain: one row (CSV with a header) or one JSON object per line with ``question``, the SQL (``sql``,
``query``, ``expected_sql``, ``gold_sql`` or ``SQL``) and the database (``database``, ``db_id``,
``db_name`` or ``db``); optional ``id``, ``hint``/``evidence``, ``difficulty``, ``tags``.

defog sql-eval: ``question``, ``query`` (Postgres SQL), ``db_name``, optional ``query_category`` (kept
as a tag ``defog:<category>``) and ``instructions`` (kept as the hint). A query lists acceptable
variants: ``;`` separates alternative queries, and ``{a, b}`` means any non-empty subset of the columns
a, b in that order (``GROUP BY {}`` repeats the chosen columns), as defog expands them.

Databases are looked up by name under ``--databases DIR`` (default: the file's folder):
``<db>.duckdb``, ``<db>.sqlite`` or ``<db>/<db>.sqlite``.

A row without a ``difficulty`` (or with one outside the contract's easy/medium/hard/extra), and every
defog question, gets Spider's hardness computed from its gold query (``hardness.spider_hardness``).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from pathlib import Path
from typing import Any

from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.gold.formats.model import BenchmarkSource, SourceQuestion, text_field
from nl2sql_pipeline.gold.formats.spider import collect_databases
from nl2sql_pipeline.gold.raw_cases import problem, read_utf8_text

SQL_NAMES: tuple[str, ...] = ("sql", "query", "expected_sql", "gold_sql", "SQL")
DATABASE_NAMES: tuple[str, ...] = ("database", "db_id", "db_name", "db")
HINT_NAMES: tuple[str, ...] = ("hint", "evidence", "instructions")
MAX_ALTERNATIVES = 64
"""More expanded alternatives than this for one query is an error (the braces are probably a typo)."""


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line, row) of a CSV with a header or of a JSONL file; raises ``CaseValidationError``."""
    if not path.is_file():
        raise CaseValidationError([f"{path}: no such file (give the CSV or JSONL file)"])
    text, problems = read_utf8_text(path, str(path))
    if text is None:
        raise CaseValidationError(problems)
    if path.suffix.lower() in (".jsonl", ".json"):
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as exc:
                problems.append(problem(str(path), number, f"not valid JSON: {exc}", "write one JSON object per line"))
                continue
            if not isinstance(value, dict):
                problems.append(problem(str(path), number, "line is not a JSON object", "write one object per line"))
                continue
            rows.append((number, value))
        if problems:
            raise CaseValidationError(problems)
        return rows
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    start = 2
    try:
        for row in reader:
            rows.append((start, {k.strip(): v for k, v in row.items() if k is not None}))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise CaseValidationError(
            [problem(str(path), start, f"malformed CSV: {exc}", "check the quoting of cells")]
        ) from exc
    return rows


_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")


def _code_positions(sql: str) -> list[int]:
    """Indexes of the characters of ``sql`` outside string literals, quoted names, comments and Postgres
    dollar quotes (an unterminated one runs to the end)."""
    positions: list[int] = []
    index, size = 0, len(sql)
    while index < size:
        char = sql[index]
        word_before = index > 0 and (sql[index - 1].isalnum() or sql[index - 1] == "_")
        if char in "'\"":
            escapes = char == "'" and word_before and sql[index - 1] in "eE"  # E'it\'s'
            end = index + 1
            while end < size and sql[end] != char:
                end += 2 if escapes and sql[end] == "\\" else 1
            index = end + 1
        elif sql.startswith("--", index):
            end = sql.find("\n", index)
            index = size if end < 0 else end
        elif sql.startswith("/*", index):
            end = sql.find("*/", index + 2)
            index = size if end < 0 else end + 2
        elif char == "$" and not word_before and (tag := _DOLLAR_TAG.match(sql, index)):
            end = sql.find(tag.group(0), tag.end())
            index = size if end < 0 else end + len(tag.group(0))
        else:
            positions.append(index)
            index += 1
    return positions


def _find_braces(sql: str) -> tuple[int, int] | None:
    """The first ``{...}`` column choice outside quotes (not the ``GROUP BY {}`` placeholder)."""
    code = _code_positions(sql)
    for at, start in enumerate(code):
        if sql[start] != "{" or sql[start : start + 2] == "{}":
            continue
        end = next((i for i in code[at + 1 :] if sql[i] == "}"), None)
        return (start, end) if end is not None else None
    return None


def _split_alternatives(query: str) -> list[str]:
    """``query`` cut at each ``;`` outside quotes and comments (a quoted ``;`` is part of the query).

    >>> _split_alternatives("SELECT 'a;b' FROM t;SELECT 2 /* ; */")
    ["SELECT 'a;b' FROM t", 'SELECT 2 /* ; */']
    """
    cuts = [i for i in _code_positions(query) if query[i] == ";"]
    return [query[start + 1 : end] for start, end in zip([-1, *cuts], [*cuts, len(query)])]


def expand_alternatives(query: str) -> list[str]:
    """defog's minimal-query expansion: ``;`` separates alternatives, ``{a, b}`` any non-empty subset
    (neither counts inside a string literal, a quoted name or a comment).

    >>> expand_alternatives("SELECT {u.id, u.name} FROM u GROUP BY {}")
    ['SELECT u.id FROM u GROUP BY u.id', 'SELECT u.name FROM u GROUP BY u.name', 'SELECT u.id, u.name FROM u GROUP BY u.id, u.name']
    """
    out: list[str] = []
    for part in _split_alternatives(query):
        part = part.strip()
        if not part:
            continue
        braces = _find_braces(part)
        if braces is None:
            out.append(part)
            continue
        start, end = braces
        options = [o.strip() for o in part[start + 1 : end].split(",") if o.strip()]
        for size in range(1, len(options) + 1):
            for chosen in itertools.combinations(options, size):
                columns = ", ".join(chosen)
                right = part[end + 1 :].replace("GROUP BY {}", f"GROUP BY {columns}")
                out.extend(expand_alternatives(part[:start] + columns + right))
    return list(dict.fromkeys(out))


def _tags(row: dict[str, Any], extra: tuple[str, ...]) -> tuple[str, ...]:
    value = row.get("tags")
    if isinstance(value, list):
        tags = [str(t).strip() for t in value]
    elif isinstance(value, str):
        tags = [t.strip() for t in value.replace(";", ",").split(",")]
    else:
        tags = []
    return extra + tuple(t for t in tags if t)


def _read(src: Path, databases: Path | None, fmt: str, dialect: str) -> BenchmarkSource:
    questions = []
    problems = []
    rows = _rows(src)
    if not rows:
        raise CaseValidationError([problem(str(src), 1, "file has no questions", "add one row per question")])
    stem = "".join(c if c.isalnum() or c in "._-" else "-" for c in src.stem).strip("-._") or fmt
    for number, (line, row) in enumerate(rows, start=1):
        question, sql, db_id = (
            text_field(row, ("question",)),
            text_field(row, SQL_NAMES),
            text_field(row, DATABASE_NAMES),
        )
        missing = [n for n, v in (("question", question), ("sql", sql), ("database", db_id)) if v is None]
        if missing:
            problems.append(
                problem(
                    str(src),
                    line,
                    f"missing or empty {', '.join(missing)}",
                    "give every row a question, its SQL and its database name",
                )
            )
            continue
        extra: tuple[str, ...] = (fmt,)
        category = text_field(row, ("query_category",))
        if fmt == "defog" and category:
            extra += (f"defog:{category}",)
        alternatives = expand_alternatives(sql or "") if fmt == "defog" else [sql or ""]
        if len(alternatives) > MAX_ALTERNATIVES:
            problems.append(
                problem(
                    str(src),
                    line,
                    f"the query expands to {len(alternatives)} alternatives",
                    f"keep at most {MAX_ALTERNATIVES}: fewer columns in {{...}}",
                )
            )
            continue
        if not alternatives:
            problems.append(problem(str(src), line, "the query is empty", "give the SQL"))
            continue
        difficulty = text_field(row, ("difficulty",))
        questions.append(
            SourceQuestion(
                id=text_field(row, ("id",)) or f"{fmt if fmt == 'defog' else stem}-{number}",
                question=question or "",
                db_id=db_id or "",
                sql=tuple(alternatives),
                location=f"{src}:{line}",
                hint=text_field(row, HINT_NAMES),
                difficulty=difficulty.lower() if difficulty else None,
                tags=_tags(row, extra),
            )
        )
    if problems:
        raise CaseValidationError(problems)
    dbs = collect_databases({q.db_id for q in questions}, databases or src.parent, {}, src)
    return BenchmarkSource(fmt, src, dialect, questions, dbs)


def read_plain(src: Path, databases: Path | None = None) -> BenchmarkSource:
    """Read a plain CSV/JSONL of question, SQL and database (DuckDB SQL unless told otherwise)."""
    return _read(src, databases, "plain", "duckdb")


def read_defog(src: Path, databases: Path | None = None) -> BenchmarkSource:
    """Read a defog sql-eval CSV (Postgres SQL with ``{a,b}`` and ``;`` alternatives)."""
    return _read(src, databases, "defog", "postgres")
