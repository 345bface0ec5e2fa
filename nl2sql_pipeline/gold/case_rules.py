"""The rules a gold-set case must satisfy: every problem of one case, and of a file's raw records.

``validate_case_dict`` checks one case given with native field names; ``validate_records`` checks every
raw record of a file (plus duplicate ids) and builds the cases, or raises one ``CaseValidationError``
listing every problem sorted by line.
"""

from __future__ import annotations

import datetime
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError

from nl2sql_pipeline.cases import (
    ALL_FIELDS,
    BEHAVIOR_ANSWER,
    BEHAVIOR_CLARIFY,
    BUDGET_FIELDS,
    DIFFICULTIES,
    EXPECTED_BEHAVIORS,
    EXPECTED_OUTCOMES,
    OUTCOME_POLICY_REJECTION,
    OUTCOME_RESULT,
    REQUIRED_FIELDS,
    Case,
    case_from_dict,
)
from nl2sql_pipeline.config.jsonl import json_type_name as _type_name
from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.gold.raw_cases import (
    FOLLOW_UP_CATEGORY,
    ID_PATTERN,
    POLICY_REJECTION_CATEGORY,
    TURN_FIELDS,
    RawCase,
    problem,
    unknown_field_problems,
)
from nl2sql_pipeline.sql import parse as sql_ast

logger = logging.getLogger(__name__)


DATABASE_FILE_SUFFIXES = (".duckdb", ".db")


def _is_database_reference(database: str) -> bool:
    """A registered-looking name, or a path to a ``.duckdb``/``.db`` file (categories are free text)."""
    return bool(ID_PATTERN.fullmatch(database)) or database.lower().endswith(DATABASE_FILE_SUFFIXES)


def sql_parse_problem(sql: str) -> str | None:
    """Why ``sql`` is not exactly one parseable DuckDB query, or ``None`` when it is (fails closed)."""
    if not sql.strip():
        return "is empty"
    try:
        trees = sql_ast.statements(sql)  # parsed once per text in a process (a run loads its gold set 4 times)
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
        if name == "expected_sql":
            extra += ", or an 'expected_answer' for a case judged on its answer alone"
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
    if isinstance(database, str) and database.strip() and not _is_database_reference(database):
        problems.append(
            problem(
                source,
                line,
                f"database '{database}' is neither a database name nor a path to a .duckdb file",
                "use a name registered in data/databases.yml (letters, digits, '.', '_', '-'), or the path "
                "of a .duckdb file, relative to the gold file's folder or absolute",
            )
        )
    category = data.get("category")
    if isinstance(category, str) and category.strip() and category != category.strip():
        problems.append(problem(source, line, f"category {category!r} has surrounding spaces", "remove them"))
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
    for name in ("semantic_model", "sql_policy", "hint"):
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
    if data.get("expected_answer") is not None and _is_empty_answer(data["expected_answer"]):
        problems.append(
            problem(
                source,
                line,
                "expected_answer is empty",
                "write what a correct answer states (a number, a date, a list of names or a sentence), or remove it",
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
    if data.get("reference_date") is not None:
        problems += _reference_date_problems(data["reference_date"], source, line)
    problems += budget_problems(data, source, line)
    if data.get("expected_behavior") is not None or data.get("readings") is not None:
        problems += clarify_problems(data, source, line)
        if data.get("expected_behavior") == BEHAVIOR_CLARIFY:
            return problems  # no expected SQL, no probe: the right response is a question
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


def clarify_problems(data: Mapping[str, Any], source: str, line: int) -> list[str]:
    """The problems of ``expected_behavior`` / ``readings``: a ``clarify`` case lists two or more readings
    (``{"reading": text, "sql": optional SQL}``, or plain text) and has no expected SQL and no probe."""
    behavior = data.get("expected_behavior", BEHAVIOR_ANSWER)
    if behavior not in EXPECTED_BEHAVIORS:
        return [
            problem(
                source, line, f"unknown expected_behavior {behavior!r}", f"use one of: {', '.join(EXPECTED_BEHAVIORS)}"
            )
        ]
    readings = data.get("readings")
    if behavior != BEHAVIOR_CLARIFY:
        return (
            []
            if readings is None
            else [
                problem(source, line, "readings on a case that is not ambiguous", 'add "expected_behavior": "clarify"')
            ]
        )
    problems = []
    fix = 'write "readings": [{"reading": "per title", "sql": "SELECT ..."}, {"reading": "per studio"}]'
    if not isinstance(readings, list) or len(readings) < 2:
        problems.append(problem(source, line, "a clarify case needs two or more readings", fix))
    else:
        for index, item in enumerate(readings, 1):
            text = item if isinstance(item, str) else item.get("reading") if isinstance(item, dict) else None
            extra = set(item) - {"reading", "sql"} if isinstance(item, dict) else set()
            if not isinstance(text, str) or not text.strip() or extra:
                problems.append(problem(source, line, f"reading {index} is not a reading (text, optional sql)", fix))
            elif isinstance(item, dict) and item.get("sql") is not None:
                problems += _check_sql_value(item["sql"], f"readings[{index}].sql", source, line)
    for name in ("expected_sql", "policy_probe_sql"):
        if data.get(name) is not None:
            problems.append(
                problem(source, line, f"a clarify case has {name}", "remove it: the right response is a question")
            )
    if data.get("expected_outcome") not in (None, OUTCOME_RESULT):
        problems.append(problem(source, line, "a clarify case cannot be a policy probe", "remove expected_outcome"))
    return problems


def budget_problem(name: str, value: Any) -> str | None:
    """Why ``value`` is not a budget ``name`` may hold (a number above 0; ``max_tokens`` a whole number), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return f"{name} must be a number, got {_type_name(value)}"
    if value <= 0:
        return f"{name} must be above 0, got {value!r}"
    if name == "max_tokens" and int(value) != value:
        return f"max_tokens must be a whole number, got {value!r}"
    return None


def budget_problems(data: Mapping[str, Any], source: str, line: int) -> list[str]:
    """The problems of a case's budgets (``max_latency_ms``, ``max_cost_usd``, ``max_tokens``), each optional."""
    fixes = {"max_latency_ms": "e.g. 2000", "max_cost_usd": "e.g. 0.01", "max_tokens": "e.g. 4000"}
    problems = []
    for name in BUDGET_FIELDS:
        if data.get(name) is not None and (why := budget_problem(name, data[name])) is not None:
            problems.append(problem(source, line, why, f"write a positive number ({fixes[name]}) or remove it"))
    return problems


def _is_empty_answer(value: Any) -> bool:
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, (list, dict)) and not value


def reference_date_problem(value: Any) -> str | None:
    """Why ``value`` is not a reference date (``YYYY-MM-DD`` text or a YAML date), or None when it is one."""
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return None
    if isinstance(value, str):
        try:
            datetime.date.fromisoformat(value.strip())
        except ValueError:
            pass
        else:
            if len(value.strip()) == len("YYYY-MM-DD"):
                return None
    return f"reference_date {value!r} is not a date"


def _reference_date_problems(value: Any, source: str, line: int) -> list[str]:
    why = reference_date_problem(value)
    if why is None:
        return []
    return [
        problem(
            source,
            line,
            why,
            "write the date the question's 'today' is, as YYYY-MM-DD (e.g. 2026-06-30), or remove the field",
        )
    ]


def _rejection_problems(data: Mapping[str, Any], source: str, line: int, missing: Callable[[str], None]) -> list[str]:
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
        if data.get("expected_answer") is None:  # an answer-only case is judged on its answer (judges.answer)
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
    match = re.match(r"(\d+):", text[len(source) + 1 :]) if text.startswith(f"{source}:") else None
    return int(match.group(1)) if match else 0
