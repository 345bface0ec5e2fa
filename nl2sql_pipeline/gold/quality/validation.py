"""Strict validation of gold-set files: every problem found, each located as ``<file>:<line>``.

``load_cases`` reads a JSONL, YAML or CSV gold set and returns its cases, or raises one
``CaseValidationError`` listing every problem (never just the first). Each problem reads
``<file>:<line>: <what is wrong> (<how to fix>)``. The YAML and CSV formats are mapped onto the
native fields by ``nl2sql_pipeline.gold.formats.team_files`` and then checked by the same rules as JSONL
(``gold.case_rules``) over the raw records of ``gold.records``; ``gold.database_check`` checks cases
against a built database. The names of those modules are re-exported here.
"""

from __future__ import annotations

from pathlib import Path

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.gold.case_rules import sql_parse_problem, validate_case_dict, validate_records
from nl2sql_pipeline.gold.quality.database_check import validate_cases_against_database
from nl2sql_pipeline.gold.raw_cases import (
    CSV_SUFFIXES,
    JSONL_SUFFIXES,
    SQL_DIALECT,
    SUPPORTED_SUFFIXES,
    YAML_SUFFIXES,
    RawCase,
    problem,
    read_jsonl_records,
    read_utf8_text,
    unknown_field_problems,
)

__all__ = [
    "CSV_SUFFIXES",
    "JSONL_SUFFIXES",
    "SQL_DIALECT",
    "SUPPORTED_SUFFIXES",
    "YAML_SUFFIXES",
    "RawCase",
    "load_cases",
    "problem",
    "read_jsonl_records",
    "read_utf8_text",
    "sql_parse_problem",
    "unknown_field_problems",
    "validate_case_dict",
    "validate_cases_against_database",
    "validate_records",
]


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
    # YAML/CSV only: importing ``gold.formats`` (every public importer, the dialect converters) is not what
    # reading a JSONL gold set should cost a run
    from nl2sql_pipeline.gold.formats.team_files import import_cases

    return import_cases(path)
