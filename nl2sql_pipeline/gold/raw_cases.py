"""Raw gold-set records: the cases of a file before validation, each with the line it starts on.

Also the problem format shared by every gold-set check (``<file>:<line>: <what is wrong> (<how to fix>)``),
the file kinds, and the readers of raw text (UTF-8 checked line by line) and of JSONL records.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nl2sql_pipeline.config.checker import format_problem
from nl2sql_pipeline.config.jsonl import UTF8_BOM, decode_utf8_lines, parse_jsonl

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


def read_utf8_text(path: Path, source: str) -> tuple[str | None, list[str]]:
    """The whole file as text, or ``None`` and one problem per line that is not valid UTF-8."""
    raw = path.read_bytes()
    _, problems = decode_utf8_lines(raw, source)
    if problems:
        return None, problems
    return raw.removeprefix(UTF8_BOM).decode("utf-8"), []


def read_jsonl_records(path: Path, source: str) -> tuple[list[RawCase], list[str]]:
    """Parse a JSONL file into raw cases (blank lines skipped) and the problems met while reading."""
    lines, problems = parse_jsonl(path.read_bytes(), source)
    records = [RawCase(line=item.line, data=item.value) for item in lines]
    if not records and not problems:
        problems.append(problem(source, 1, "file has no cases", "add one JSON object per line"))
    return records, problems
