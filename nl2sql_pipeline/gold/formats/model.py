"""What a public-format reader returns: the questions and the databases they run on, before conversion."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nl2sql_pipeline.dialect.sqlite_copy import ExtraKeys
from nl2sql_pipeline.errors import CaseValidationError, Nl2SqlError
from nl2sql_pipeline.gold.raw_cases import problem

SQLITE_SUFFIXES: tuple[str, ...] = (".sqlite", ".sqlite3")
DUCKDB_SUFFIX = ".duckdb"


class BenchmarkImportError(Nl2SqlError):
    """An import cannot start: its output folder cannot be created or a folder it was given does not
    exist. The message is one line naming the path and the fix."""


class DatabaseConflictError(BenchmarkImportError):
    """An import would replace a database file another registered gold set runs on with other content.
    The message names the file, the sets and the ways on (another folder, ``--replace-databases``)."""


@dataclass(frozen=True)
class SourceQuestion:
    """One benchmark question: where it was read, its database id and its gold SQL alternatives."""

    id: str
    question: str
    db_id: str
    sql: tuple[str, ...]
    location: str
    """``<file>:<line>`` (or ``<file>: item N`` for JSON arrays), for messages."""
    hint: str | None = None
    difficulty: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceDatabase:
    """A benchmark database: a SQLite file (copied into DuckDB) or a DuckDB file (copied as is)."""

    db_id: str
    path: Path
    extra_keys: ExtraKeys = ExtraKeys()

    @property
    def is_sqlite(self) -> bool:
        """True for a SQLite file (the source engine the gold SQL can be checked against)."""
        return self.path.suffix.lower() != DUCKDB_SUFFIX


@dataclass
class BenchmarkSource:
    """Everything a reader found: the format, its default dialect, questions and databases by id."""

    format: str
    source: Path
    default_dialect: str
    questions: list[SourceQuestion]
    databases: dict[str, SourceDatabase] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    """What the reader could not find but imported without (e.g. no ``tables.json``), and what is lost."""


def read_json_list(path: Path, what: str) -> list[Any]:
    """A JSON file holding a list (Spider's and BIRD's question files, ``tables.json``)."""
    if not path.is_file():
        raise CaseValidationError([f"{path}: no such file (expected {what})"])
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", 1)
        raise CaseValidationError(
            [problem(str(path), line, f"not valid JSON: {exc}", f"fix the JSON of {what}")]
        ) from exc
    if not isinstance(data, list):
        raise CaseValidationError([problem(str(path), 1, "the top level is not a list", f"give {what} as a JSON list")])
    return data


def find_database_file(folder: Path, db_id: str) -> Path | None:
    """The database file of ``db_id`` under ``folder``: ``<db>/<db>.sqlite`` (Spider, BIRD),
    ``<db>.sqlite``, ``<db>.sqlite3`` or ``<db>.duckdb``; None when there is none."""
    candidates = [folder / db_id / f"{db_id}{s}" for s in SQLITE_SUFFIXES + (DUCKDB_SUFFIX,)]
    candidates += [folder / f"{db_id}{s}" for s in SQLITE_SUFFIXES + (DUCKDB_SUFFIX,)]
    return next((c for c in candidates if c.is_file()), None)


def text_field(item: Any, names: tuple[str, ...]) -> str | None:
    """The first non-empty string among ``item[name]`` for ``names`` (stripped), else None."""
    if not isinstance(item, dict):
        return None
    for name in names:
        value = item.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None
