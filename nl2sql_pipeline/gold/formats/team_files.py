"""Importers: the YAML and CSV files teams keep, mapped onto the Case contract; and the JSONL writer.

YAML: a list of ``{id, question, difficulty, tags, sql}`` mappings (``sql`` a string or a list of
alternatives; ``probe: true`` makes ``sql`` a policy probe); the native field names work too.
CSV: a header row (``question, expected_sql, expected_answer, ...``; aliases ``sql``/``gold_sql``/``query``
and ``answer``; a row with an ``expected_answer`` and no SQL is an answer-only case, category ``answer``), ``tags`` as a ``;``- or ``,``-separated string, ``id`` optional (generated as
``<file-stem>-<row number>``). Missing ``domain``/``category``/``database`` come from the import options:
domain defaults to ``imported``, category is inferred from the SQL, database is required.
Everything imported is then validated by the same strict rules as JSONL.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from sqlglot.errors import SqlglotError

from nl2sql_pipeline.cases import ALL_FIELDS, BUDGET_FIELDS, CATEGORIES, OUTCOME_POLICY_REJECTION, Case
from nl2sql_pipeline.config.jsonl import write_jsonl_lines
from nl2sql_pipeline.config.yaml_loader import StrictLoader, describe_yaml_error
from nl2sql_pipeline.databases.resolve import looks_like_path
from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.gold.case_rules import validate_records
from nl2sql_pipeline.gold.raw_cases import (
    JSONL_SUFFIXES,
    POLICY_REJECTION_CATEGORY,
    SUPPORTED_SUFFIXES,
    YAML_SUFFIXES,
    RawCase,
    problem,
    read_jsonl_records,
    read_utf8_text,
    unknown_field_problems,
)
from nl2sql_pipeline.sql.features import sql_features

logger = logging.getLogger(__name__)

DEFAULT_DOMAIN = "imported"
ANSWER_CATEGORY = "answer"  # the category of an imported answer-only case that names none
YAML_ALIASES: dict[str, str] = {"sql": "expected_sql"}
CSV_ALIASES: dict[str, str] = {
    "sql": "expected_sql",
    "gold_sql": "expected_sql",
    "query": "expected_sql",
    "answer": "expected_answer",
}
YAML_FIELDS: tuple[str, ...] = ALL_FIELDS + ("sql", "probe")
CSV_FIELDS: tuple[str, ...] = ALL_FIELDS + tuple(CSV_ALIASES)
SQL_FIELDS: tuple[str, ...] = ("expected_sql", "policy_probe_sql")
MISSING_HINTS: dict[str, str] = {
    "database": "or import the file with `nl2sql-eval gold import --database NAME`",
    "expected_sql": "or a 'sql' key in YAML, a 'sql', 'gold_sql' or 'query' column in CSV",
}
_NON_ID_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class ImportOptions:
    """Values for fields an imported case leaves out (``None``: default domain, inferred category)."""

    domain: str | None = None
    category: str | None = None
    database: str | None = None


# ---------------------------------------------------------------- category inference


def infer_category(sql: str) -> str:
    """Guess a category from SQL: ``multi_table`` if it joins, ``time`` if it filters on a date or
    timestamp literal or uses date functions, else ``single_table`` (also when it does not parse)."""
    try:
        features = sql_features(sql)
    except (SqlglotError, ValueError):
        return "single_table"
    if "join" in features:
        return "multi_table"
    if features.names & {"temporal_cast", "date_function", "date_literal_filter"}:
        return "time"
    return "single_table"


# ---------------------------------------------------------------- mapping onto the contract


def _strip_sql(value: Any) -> Any:
    """SQL text without surrounding whitespace (YAML block scalars end with a newline)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return [v.strip() if isinstance(v, str) else v for v in value]
    return value


def _apply_defaults(data: dict[str, Any], options: ImportOptions) -> None:
    """Fill ``domain``, ``category`` and ``database`` the case leaves out from the options."""
    if data.get("domain") is None:
        data["domain"] = options.domain or DEFAULT_DOMAIN
    if data.get("database") is None and options.database:
        data["database"] = options.database
    if data.get("category") is None:
        if data.get("expected_outcome") == OUTCOME_POLICY_REJECTION:
            data["category"] = POLICY_REJECTION_CATEGORY
        elif options.category:
            data["category"] = options.category
        else:
            sql = data.get("expected_sql")
            first = sql[0] if isinstance(sql, list) and sql else sql
            if isinstance(first, str):
                data["category"] = infer_category(first)
            else:  # an answer-only case has no SQL to infer from
                data["category"] = ANSWER_CATEGORY if data.get("expected_answer") is not None else "single_table"


def _map_yaml_item(item: dict[Any, Any], source: str, line: int) -> tuple[dict[str, Any], list[str]]:
    """Map one YAML item onto native field names (``sql`` and ``probe`` resolved)."""
    problems = unknown_field_problems(list(item), YAML_FIELDS, source, line)
    data = {str(k): v for k, v in item.items() if k in YAML_FIELDS and k not in ("sql", "probe")}
    probe = item.get("probe", False)
    if not isinstance(probe, bool):
        problems.append(problem(source, line, f"probe must be true or false, got {probe!r}", "write probe: true"))
        probe = False
    if "sql" in item:
        target = "policy_probe_sql" if probe else "expected_sql"
        if target in item:
            problems.append(
                problem(source, line, f"both sql and {target} are given", f"keep only one of sql and {target}")
            )
        elif probe and not isinstance(item["sql"], str):
            problems.append(
                problem(source, line, "a probe's sql must be one string", "give the single SQL the policy must reject")
            )
        else:
            data[target] = item["sql"]
    if probe:
        data.setdefault("expected_outcome", OUTCOME_POLICY_REJECTION)
    for name in SQL_FIELDS:
        if name in data:
            data[name] = _strip_sql(data[name])
    return data, problems


def read_yaml_records(text: str, source: str, options: ImportOptions) -> tuple[list[RawCase], list[str]]:
    """Parse a YAML list of cases into raw cases, each located at its mapping's first line."""
    loader = StrictLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as exc:
            return [], [describe_yaml_error(source, exc)]
        if root is None:
            return [], [problem(source, 1, "file has no cases", "write a YAML list of cases: - id: ...")]
        if not isinstance(root, yaml.SequenceNode):
            return [], [
                problem(
                    source,
                    root.start_mark.line + 1,
                    "the top level is not a list",
                    "write the cases as a YAML list, each item starting with '- id: ...'",
                )
            ]
        if not root.value:
            return [], [problem(source, root.start_mark.line + 1, "file has no cases", "add at least one item")]
        records: list[RawCase] = []
        problems: list[str] = []
        for node in root.value:
            line = node.start_mark.line + 1
            if not isinstance(node, yaml.MappingNode):
                problems.append(
                    problem(source, line, "list item is not a mapping", "write each case as 'key: value' lines")
                )
                continue
            keys = [key.value for key, _ in node.value if isinstance(key, yaml.ScalarNode)]
            duplicated = sorted({k for k in keys if keys.count(k) > 1})
            if duplicated:
                problems += [
                    problem(source, line, f"field '{k}' appears twice in this item", "keep one of them")
                    for k in duplicated
                ]
                continue
            try:
                item = loader.construct_document(node)
            except yaml.YAMLError as exc:
                problems.append(describe_yaml_error(source, exc, "fix the YAML value"))
                continue
            data, item_problems = _map_yaml_item(item, source, line)
            problems += item_problems
            _apply_defaults(data, options)
            records.append(RawCase(line=line, data=data))
        return records, problems
    finally:
        loader.dispose()


def _normalize_header(name: str) -> str:
    """``Expected SQL`` -> ``expected_sql``; aliases are mapped after this."""
    return re.sub(r"[\s-]+", "_", name.strip().lower())


def _parse_answer(cell: str) -> Any:
    """A CSV answer cell: JSON numbers, lists and objects are decoded, anything else stays text."""
    try:
        value = json.loads(cell)
    except ValueError:
        return cell
    return value if isinstance(value, (int, float, list, dict)) and not isinstance(value, bool) else cell


def _csv_id_prefix(path: Path) -> str:
    """The file stem made safe for case ids (``My Prompts`` -> ``My-Prompts``)."""
    stem = _NON_ID_CHARS.sub("-", path.stem).strip("-._")
    return stem or "case"


def _map_csv_cell(name: str, cell: str, source: str, line: int) -> tuple[Any, list[str]]:
    """Convert one non-empty CSV cell of native field ``name`` into its case value."""
    if name == "tags":
        separator = ";" if ";" in cell else ","
        return [t.strip() for t in cell.split(separator) if t.strip()], []
    if name == "expected_answer":
        return _parse_answer(cell), []
    if name == "candidate_selection":
        try:
            return int(cell), []
        except ValueError:
            return None, [
                problem(source, line, f"candidate_selection must be an integer, got {cell!r}", "write e.g. 5")
            ]
    if name in BUDGET_FIELDS:
        try:
            return float(cell), []
        except ValueError:
            return None, [problem(source, line, f"{name} must be a number, got {cell!r}", "write e.g. 2000")]
    if name == "readings":
        try:
            return json.loads(cell), []
        except ValueError as exc:
            return None, [
                problem(source, line, f"readings is not JSON: {exc}", 'write a JSON list of {"reading": ...} items')
            ]
    if name == "follow_up_context":
        try:
            return json.loads(cell), []
        except ValueError as exc:
            return None, [
                problem(
                    source,
                    line,
                    f"follow_up_context is not JSON: {exc}",
                    'write a JSON list of {"question": ..., "sql": ...} turns in the cell',
                )
            ]
    return cell.strip(), []


def read_csv_records(text: str, source: str, options: ImportOptions, id_prefix: str) -> tuple[list[RawCase], list[str]]:
    """Parse CSV rows into raw cases, each located at the physical line its row starts on."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    problems: list[str] = []
    header: list[str | None] | None = None
    header_line = 1
    records: list[RawCase] = []
    previous_end = 0
    row_number = 0
    while True:
        start = previous_end + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.append(
                problem(source, start, f"malformed CSV in the row starting here: {exc}", "check the quoting of cells")
            )
            break
        previous_end = reader.line_num
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header, unknown_columns, header_problems = _map_csv_header(row, source, start)
            header_line = start
            problems += unknown_columns + header_problems
            if header_problems:  # rows cannot be read without their question and SQL columns
                return [], problems
            continue
        row_number += 1
        if len(row) > len(header):
            problems.append(
                problem(
                    source,
                    start,
                    f"row has {len(row)} cells but the header has {len(header)} columns",
                    "quote cells that contain commas",
                )
            )
            continue
        data: dict[str, Any] = {}
        for name, cell in zip(header, row):
            if name is None or not cell.strip():
                continue
            value, cell_problems = _map_csv_cell(name, cell, source, start)
            problems += cell_problems
            if value is not None:
                data[name] = value
        data.setdefault("id", f"{id_prefix}-{row_number}")
        _apply_defaults(data, options)
        records.append(RawCase(line=start, data=data))
    if header is None:
        problems.append(problem(source, 1, "file has no cases", "write a header row and one row per case"))
    elif not records and not problems:
        problems.append(problem(source, header_line, "file has a header but no cases", "add one row per case"))
    return records, problems


def _map_csv_header(row: Sequence[str], source: str, line: int) -> tuple[list[str | None], list[str], list[str]]:
    """Native field names of the header's columns (``None`` for unknown ones), the unknown-column
    problems, and the problems that make the rows unreadable (no question or SQL column, clashes)."""
    names = [_normalize_header(cell) for cell in row]
    unknown = unknown_field_problems([n for n in names if n], CSV_FIELDS, source, line)
    unknown = [p.replace("unknown field", "unknown column", 1) for p in unknown]
    problems: list[str] = []
    mapped: list[str | None] = [CSV_ALIASES.get(n, n) if n in CSV_FIELDS else None for n in names]
    seen: dict[str, str] = {}
    for original, name in zip(row, mapped):
        if name is None:
            continue
        if name in seen:
            problems.append(
                problem(
                    source,
                    line,
                    f"columns '{seen[name]}' and '{original.strip()}' both hold {name}",
                    "keep one of them",
                )
            )
        seen[name] = original.strip()
    if "question" not in seen:
        problems.append(problem(source, line, "no question column", "add a 'question' column"))
    if (
        "expected_sql" not in seen
        and "policy_probe_sql" not in seen
        and "expected_behavior" not in seen
        and "expected_answer" not in seen
    ):
        problems.append(
            problem(
                source,
                line,
                "no expected_sql column",
                "add an 'expected_sql' column, or one named 'sql', 'gold_sql' or 'query' (or an 'expected_answer' "
                "column for cases judged on their answer alone)",
            )
        )
    return mapped, unknown, problems


# ---------------------------------------------------------------- entry points


def import_cases(
    path: Path,
    *,
    domain: str | None = None,
    category: str | None = None,
    database: str | None = None,
) -> list[Case]:
    """Read a YAML, CSV (or JSONL) gold set, fill left-out fields from the options, validate strictly.

    Raises ``CaseValidationError`` with every problem. For JSONL the options only fill fields a line
    leaves out.
    """
    path = Path(path)
    source = str(path)
    suffix = path.suffix.lower()
    if category is not None and not category.strip():
        raise CaseValidationError(
            [f"{source}: empty category option (give any text; recommended: {', '.join(CATEGORIES)})"]
        )
    if suffix not in SUPPORTED_SUFFIXES:
        raise CaseValidationError(
            [f"{source}: unsupported file type '{path.suffix}' (use one of {', '.join(SUPPORTED_SUFFIXES)})"]
        )
    if not path.is_file():
        raise CaseValidationError([f"{source}: no such file (check the path)"])
    options = ImportOptions(domain=domain, category=category, database=database)
    if suffix in JSONL_SUFFIXES:
        records, problems = read_jsonl_records(path, source)
        for record in records:
            for name, value in (("domain", domain), ("category", category), ("database", database)):
                if value is not None:
                    record.data.setdefault(name, value)
        return validate_records(records, source, problems=problems)
    text, problems = read_utf8_text(path, source)
    if text is None:
        raise CaseValidationError(problems)
    if suffix in YAML_SUFFIXES:
        records, problems = read_yaml_records(text, source, options)
    else:
        records, problems = read_csv_records(text, source, options, _csv_id_prefix(path))
    return validate_records(records, source, problems=problems, missing_hints=MISSING_HINTS)


def rebase_database_paths(cases: Sequence[Case], source_dir: Path, out_dir: Path) -> list[Case]:
    """``cases`` read from a file in ``source_dir``, to be written into ``out_dir``: a ``database`` that is a
    relative file path (relative to its gold file's folder, as ``gold validate`` and a run resolve it) is
    rewritten to name the same file from ``out_dir``. Names and absolute paths are kept.

    >>> [c.database for c in rebase_database_paths([Case("c", "d", "k", "q", "w/shop.duckdb")], Path("/in"), Path("/g"))]
    ['../in/w/shop.duckdb']
    """
    source_dir, out_dir = source_dir.resolve(), out_dir.resolve()
    if source_dir == out_dir:
        return list(cases)
    rebased = []
    for case in cases:
        written = Path(case.database).expanduser()
        if not written.is_absolute() and (looks_like_path(case.database) or (source_dir / written).is_file()):
            case = replace(case, database=reference_from(out_dir, (source_dir / written).resolve()))
        rebased.append(case)
    return rebased


def reference_from(folder: Path, target: Path) -> str:
    """``target`` relative to ``folder`` (read as a path, never as a database name); absolute when there is
    no relative path (another drive)."""
    try:
        relative = os.path.relpath(target, folder)
    except ValueError:
        return str(target)
    return relative if looks_like_path(relative) else f"./{relative}"


def write_jsonl(cases: Sequence[Case], path: Path) -> Path:
    """Write cases as JSONL, one per line in the given order; deterministic and atomic.

    The file is written to a temp file in the same folder and renamed over ``path``, so a reader
    never sees half a file. Raises ``CaseValidationError`` on duplicate ids.
    """
    path = Path(path)
    duplicates = sorted(case_id for case_id, count in Counter(case.id for case in cases).items() if count > 1)
    if duplicates:
        raise CaseValidationError(
            [f"{path}: duplicate case ids {', '.join(duplicates)} (give every case its own id before writing)"]
        )
    write_jsonl_lines(path, (case.to_json() for case in cases))
    logger.info("wrote %d cases to %s", len(cases), path)
    return path
