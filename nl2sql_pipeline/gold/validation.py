"""Strict validation of gold-set files: every problem found, each located as ``<file>:<line>``.

``load_cases`` reads a JSONL, YAML or CSV gold set and returns its cases, or raises one
``CaseValidationError`` listing every problem (never just the first). Each problem reads
``<file>:<line>: <what is wrong> (<how to fix>)``. The YAML and CSV formats are mapped onto the
native fields by ``nl2sql_pipeline.gold.importers`` and then checked by the same rules as JSONL.
"""

from __future__ import annotations

import difflib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError

from nl2sql_pipeline.cases import (
    ALL_FIELDS,
    CATEGORIES,
    DIFFICULTIES,
    EXPECTED_OUTCOMES,
    OUTCOME_POLICY_REJECTION,
    REQUIRED_FIELDS,
    Case,
    case_from_dict,
)
from nl2sql_pipeline.config.checker import format_problem
from nl2sql_pipeline.errors import CaseValidationError, DatabaseNotFoundError
from nl2sql_pipeline.jsonl import UTF8_BOM, decode_utf8_lines, json_type_name, parse_jsonl

logger = logging.getLogger(__name__)

SQL_DIALECT = "duckdb"
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""Case ids (and database names) become file names and Dagster keys: no spaces, slashes or pipes."""
JSONL_SUFFIXES: tuple[str, ...] = (".jsonl",)
YAML_SUFFIXES: tuple[str, ...] = (".yml", ".yaml")
CSV_SUFFIXES: tuple[str, ...] = (".csv",)
SUPPORTED_SUFFIXES: tuple[str, ...] = JSONL_SUFFIXES + YAML_SUFFIXES + CSV_SUFFIXES
POLICY_REJECTION_CATEGORY = "policy_rejection"
FOLLOW_UP_CATEGORY = "follow_up"
TURN_FIELDS: tuple[str, ...] = ("question", "sql")


@dataclass
class RawCase:
    """One not-yet-validated case: its fields (native names) and the line it starts on."""

    line: int
    data: dict[str, Any] = field(default_factory=dict)


def problem(source: str, line: int, what: str, fix: str) -> str:
    """Format one problem line: ``<file>:<line>: <what is wrong> (<how to fix>)``."""
    return format_problem(source, line, what, fix)


_type_name = json_type_name


def unknown_field_problems(keys: Sequence[Any], known: Sequence[str], source: str, line: int) -> list[str]:
    """One problem per key not in ``known``, suggesting the closest known field (a likely typo)."""
    problems = []
    for key in keys:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
        fix = f"did you mean '{close[0]}'?" if close else f"remove it; known fields: {', '.join(known)}"
        problems.append(problem(source, line, f"unknown field '{key}'", fix))
    return problems


# ---------------------------------------------------------------- reading bytes


def read_utf8_text(path: Path, source: str) -> tuple[str | None, list[str]]:
    """The whole file as text, or ``None`` and one problem per line that is not valid UTF-8."""
    raw = path.read_bytes()
    _, problems = decode_utf8_lines(raw, source)
    if problems:
        return None, problems
    return raw.removeprefix(UTF8_BOM).decode("utf-8"), []


# ---------------------------------------------------------------- SQL checks


def sql_parse_problem(sql: str) -> str | None:
    """Why ``sql`` is not exactly one parseable DuckDB query, or ``None`` when it is (fails closed)."""
    if not sql.strip():
        return "is empty"
    try:
        trees = [tree for tree in sqlglot.parse(sql, dialect=SQL_DIALECT) if tree is not None]
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        if first.get("line") is not None:
            return f"does not parse: {first.get('description')} at SQL line {first['line']}, column {first.get('col')}"
        return f"does not parse: {exc}"
    except SqlglotError as exc:  # tokenizer errors (an unclosed quote, ...)
        return f"does not parse: {exc}"
    if not trees:
        return "holds no statement"
    if len(trees) > 1:
        return f"holds {len(trees)} statements, expected one query"
    if not isinstance(trees[0], exp.Query):
        return f"is not a query (parsed as {type(trees[0]).__name__}; expected SELECT, WITH or a set operation)"
    return None


def _referenced_tables(sql: str) -> set[str]:
    """Lower-cased names of the tables ``sql`` reads (CTE names excluded); empty if it does not parse."""
    try:
        tree = sqlglot.parse_one(sql, dialect=SQL_DIALECT)
    except SqlglotError:
        return set()
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    names = set()
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier) and table.name.lower() not in ctes:
            names.add(table.name.lower())
    return names


# ---------------------------------------------------------------- field checks


def _check_sql_value(value: Any, name: str, source: str, line: int) -> list[str]:
    """Problems of ``expected_sql``: a string or a non-empty list of strings, each one parseable query."""
    if isinstance(value, str):
        statements = [value]
    elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        statements = list(value)
    else:
        return [
            problem(
                source,
                line,
                f"{name} must be a string or a non-empty list of strings, got {_type_name(value)}",
                f'write "{name}": "SELECT ..." or a list of acceptable alternatives',
            )
        ]
    problems = []
    for index, sql in enumerate(statements):
        why = sql_parse_problem(sql)
        if why:
            label = name if len(statements) == 1 else f"{name}[{index}]"
            problems.append(problem(source, line, f"{label} {why}", "fix the SQL: it must be one DuckDB query"))
    return problems


def _check_follow_up(value: Any, source: str, line: int) -> list[str]:
    """Problems of ``follow_up_context``: a list of ``{question, sql}`` with parseable SQL."""
    fix = 'write a list of {"question": "...", "sql": "SELECT ..."} turns'
    if not isinstance(value, list):
        return [problem(source, line, f"follow_up_context must be a list, got {_type_name(value)}", fix)]
    problems = []
    for index, turn in enumerate(value):
        label = f"follow_up_context[{index}]"
        if not isinstance(turn, dict):
            problems.append(problem(source, line, f"{label} must be an object, got {_type_name(turn)}", fix))
            continue
        problems += [
            p.replace("unknown field", f"{label}: unknown field", 1)
            for p in unknown_field_problems(list(turn), TURN_FIELDS, source, line)
        ]
        question = turn.get("question")
        if not isinstance(question, str) or not question.strip():
            problems.append(problem(source, line, f"{label}.question must be a non-empty string", fix))
        sql = turn.get("sql")
        if not isinstance(sql, str):
            problems.append(problem(source, line, f"{label}.sql must be a string, got {_type_name(sql)}", fix))
        else:
            why = sql_parse_problem(sql)
            if why:
                problems.append(problem(source, line, f"{label}.sql {why}", "fix the SQL: it must be one DuckDB query"))
    return problems


def _is_json_value(value: Any) -> bool:
    """True when ``value`` survives a JSON round trip (YAML can hold dates, sets, binary, ...)."""
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return all(_is_json_value(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json_value(v) for k, v in value.items())
    return False


def validate_case_dict(
    data: Mapping[str, Any],
    source: str,
    line: int,
    *,
    missing_hints: Mapping[str, str] | None = None,
) -> list[str]:
    """Every problem of one case given with native field names (empty list when it is valid).

    ``missing_hints`` adds format-specific advice to a missing field's fix (e.g. an importer option).
    """
    hints = missing_hints or {}
    problems = unknown_field_problems(list(data), ALL_FIELDS, source, line)

    def missing(name: str) -> None:
        extra = f", {hints[name]}" if name in hints else ""
        problems.append(problem(source, line, f"missing required field '{name}'", f"add a '{name}' field{extra}"))

    for name in REQUIRED_FIELDS:
        if name not in data or data[name] is None:
            missing(name)
        elif not isinstance(data[name], str) or not data[name].strip():
            got = _type_name(data[name]) if not isinstance(data[name], str) else "an empty string"
            fix = "quote it" if isinstance(data[name], (int, float, bool)) else f"give {name} a non-empty text value"
            problems.append(problem(source, line, f"{name} must be a non-empty string, got {got}", fix))

    case_id = data.get("id")
    if isinstance(case_id, str) and case_id.strip() and not ID_PATTERN.fullmatch(case_id):
        problems.append(
            problem(
                source,
                line,
                f"id '{case_id}' has characters ids cannot hold",
                "use letters, digits, '.', '_' and '-' only, starting with a letter or digit",
            )
        )
    database = data.get("database")
    if isinstance(database, str) and database.strip() and not ID_PATTERN.fullmatch(database):
        problems.append(
            problem(
                source,
                line,
                f"database '{database}' is not a database name",
                "use the name of a sample database (letters, digits, '.', '_', '-'), not a path",
            )
        )
    category = data.get("category")
    if isinstance(category, str) and category.strip() and category not in CATEGORIES:
        problems.append(
            problem(source, line, f"unknown category '{category}'", f"use one of: {', '.join(CATEGORIES)}")
        )
    if "difficulty" in data:
        difficulty = data["difficulty"]
        if not isinstance(difficulty, str) or difficulty not in DIFFICULTIES:
            problems.append(
                problem(source, line, f"unknown difficulty {difficulty!r}", f"use one of: {', '.join(DIFFICULTIES)}")
            )
    outcome = data.get("expected_outcome")
    if outcome is not None and outcome not in EXPECTED_OUTCOMES:
        problems.append(
            problem(
                source, line, f"unknown expected_outcome {outcome!r}", f"use one of: {', '.join(EXPECTED_OUTCOMES)}"
            )
        )
    if "tags" in data:
        tags = data["tags"]
        if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
            problems.append(
                problem(source, line, "tags must be a list of non-empty strings", 'write "tags": ["join", "filter"]')
            )
    for name in ("semantic_model", "sql_policy"):
        value = data.get(name)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            problems.append(
                problem(source, line, f"{name} must be a non-empty string, got {_type_name(value)}", f"name the {name}")
            )
    if "candidate_selection" in data and data["candidate_selection"] is not None:
        count = data["candidate_selection"]
        if isinstance(count, bool) or not isinstance(count, int) or count < 2:
            problems.append(
                problem(
                    source,
                    line,
                    f"candidate_selection must be an integer >= 2, got {count!r}",
                    "give the number of candidates to sample, 2 or more, or remove the field",
                )
            )
    if "expected_answer" in data and not _is_json_value(data["expected_answer"]):
        problems.append(
            problem(
                source,
                line,
                f"expected_answer of type {_type_name(data['expected_answer'])} cannot be stored as JSON",
                "quote it as a string: YAML turns unquoted dates into date objects",
            )
        )
    follow_up = data.get("follow_up_context")
    if follow_up is not None:
        problems += _check_follow_up(follow_up, source, line)
    if category == FOLLOW_UP_CATEGORY and not follow_up:
        problems.append(
            problem(
                source,
                line,
                "a follow_up case has no follow_up_context",
                'add the earlier turns as "follow_up_context": [{"question": ..., "sql": ...}]',
            )
        )
    problems += _rejection_problems(data, source, line, missing)
    return problems


def _rejection_problems(
    data: Mapping[str, Any], source: str, line: int, missing: Callable[[str], None]
) -> list[str]:
    """Problems of the expected_sql / policy-probe pairing; ``missing`` records a missing field."""
    problems: list[str] = []
    category = data.get("category")
    outcome_rejects = data.get("expected_outcome") == OUTCOME_POLICY_REJECTION
    category_rejects = category == POLICY_REJECTION_CATEGORY
    if outcome_rejects and isinstance(category, str) and not category_rejects:
        problems.append(
            problem(
                source,
                line,
                f"a policy probe (expected_outcome: policy_rejection) has category '{category}'",
                "set category to policy_rejection",
            )
        )
    if category_rejects and not outcome_rejects:
        problems.append(
            problem(
                source,
                line,
                "category policy_rejection without expected_outcome: policy_rejection",
                'add "expected_outcome": "policy_rejection"',
            )
        )
    probe_sql = data.get("policy_probe_sql")
    if outcome_rejects or category_rejects:
        if probe_sql is None:
            problems.append(
                problem(
                    source,
                    line,
                    "a policy-rejection case has no policy_probe_sql",
                    'add "policy_probe_sql": the SQL the policy must reject',
                )
            )
        elif not isinstance(probe_sql, str) or not probe_sql.strip():
            problems.append(
                problem(source, line, "policy_probe_sql must be a non-empty string", "give the SQL to reject")
            )
        if data.get("expected_sql") is not None:
            problems.append(
                problem(
                    source,
                    line,
                    "a policy-rejection case has expected_sql",
                    "remove expected_sql: a probe's only expectation is that its SQL is rejected",
                )
            )
        return problems
    if probe_sql is not None:
        problems.append(
            problem(
                source,
                line,
                "policy_probe_sql on a case that is not a policy-rejection case",
                'remove it, or set "expected_outcome" and "category" to policy_rejection',
            )
        )
    if data.get("expected_sql") is None:
        missing("expected_sql")
    else:
        problems += _check_sql_value(data["expected_sql"], "expected_sql", source, line)
    return problems


def validate_records(
    records: Sequence[RawCase],
    source: str,
    *,
    problems: Sequence[str] = (),
    missing_hints: Mapping[str, str] | None = None,
) -> list[Case]:
    """Validate raw cases and build them; raise ``CaseValidationError`` with every problem found.

    ``problems`` are earlier problems of the same file (from reading it), reported first.
    """
    found = list(problems)
    cases: list[Case] = []
    first_line_of: dict[str, int] = {}
    for record in records:
        record_problems = validate_case_dict(record.data, source, record.line, missing_hints=missing_hints)
        case_id = record.data.get("id")
        if isinstance(case_id, str):
            if case_id in first_line_of:
                record_problems.append(
                    problem(
                        source,
                        record.line,
                        f"duplicate id '{case_id}' (first used on line {first_line_of[case_id]})",
                        "give every case its own id",
                    )
                )
            else:
                first_line_of[case_id] = record.line
        found += record_problems
        if not record_problems:
            cases.append(case_from_dict(record.data))
    if not found and not records:
        found.append(problem(source, 1, "file has no cases", "add at least one case"))
    if found:
        raise CaseValidationError(sorted(found, key=lambda p: _problem_line(p, source)))
    logger.info("%s: %d valid cases", source, len(cases))
    return cases


def _problem_line(text: str, source: str) -> int:
    """The line number of a problem of ``source`` (0 for a file-level problem), to sort by line."""
    match = re.match(r"(\d+):", text[len(source) + 1:]) if text.startswith(f"{source}:") else None
    return int(match.group(1)) if match else 0


# ---------------------------------------------------------------- JSONL


def read_jsonl_records(path: Path, source: str) -> tuple[list[RawCase], list[str]]:
    """Parse a JSONL file into raw cases (blank lines skipped) and the problems met while reading."""
    lines, problems = parse_jsonl(path.read_bytes(), source)
    records = [RawCase(line=item.line, data=item.value) for item in lines]
    if not records and not problems:
        problems.append(problem(source, 1, "file has no cases", "add one JSON object per line"))
    return records, problems


# ---------------------------------------------------------------- entry points


def load_cases(path: Path) -> list[Case]:
    """Load and strictly validate a gold set (``.jsonl``, ``.yml``/``.yaml`` or ``.csv``).

    Raises ``CaseValidationError`` listing every problem, each as ``<file>:<line>: what (fix)``.
    """
    path = Path(path)
    source = str(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise CaseValidationError(
            [f"{source}: unsupported file type '{path.suffix}' (use one of {', '.join(SUPPORTED_SUFFIXES)})"]
        )
    if not path.is_file():
        raise CaseValidationError([f"{source}: no such file (check the path)"])
    if suffix in JSONL_SUFFIXES:
        records, problems = read_jsonl_records(path, source)
        return validate_records(records, source, problems=problems)
    # The importers build on this module, so they are imported here rather than at the top.
    from nl2sql_pipeline.gold.importers import import_cases

    return import_cases(path)


def validate_cases_against_database(cases: Sequence[Case], db_path: Path) -> list[str]:
    """Problems of cases whose expected SQL (or follow-up SQL) reads a table the database lacks.

    Each problem reads ``case '<id>': ... (<fix>)``. Policy probes are skipped: their SQL is meant to
    be rejected. Raises ``DatabaseNotFoundError`` when ``db_path`` does not exist.
    """
    import duckdb

    db_path = Path(db_path)
    if not db_path.is_file():
        raise DatabaseNotFoundError(f"{db_path}: no such database file (build the sample database first)")
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        rows = con.execute("SELECT DISTINCT table_name FROM information_schema.tables").fetchall()
    finally:
        con.close()
    available = {str(name).lower() for (name,) in rows}
    problems = []
    for case in cases:
        if case.is_probe:
            continue
        statements = list(case.expected_sql) + [turn.sql for turn in case.follow_up_context]
        missing_tables = sorted(set().union(*(_referenced_tables(sql) for sql in statements)) - available)
        for table in missing_tables:
            problems.append(
                f"case '{case.id}': SQL references table '{table}' that {db_path.name} does not have "
                f"(fix the SQL, or check the database; it has: {', '.join(sorted(available)) or 'no tables'})"
            )
    return problems
