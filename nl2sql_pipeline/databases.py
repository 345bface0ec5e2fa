"""Which DuckDB file a database reference names: the one resolver behind every ``--database`` argument.

A reference is either the path of a file or the name of a database:

- a path when it looks like one (it ends in ``.duckdb`` or ``.db``, or holds a ``/``) or names an
  existing file: ``data/x.duckdb``, ``./shop.db``, ``~/dbs/x.duckdb``, ``/abs/file``;
- otherwise a name: a sample database built under the storage root
  (``<storage root>/databases/<name>.duckdb``, see ``nl2sql-eval db build``), which may not be built yet.

>>> resolve_database("anime_platform").kind.value
'sample'
>>> resolve_database("data/x.duckdb").kind.value
'file'

Names are looked up in :func:`sample_database` only; a registry of named databases (name -> file,
schemas, semantic model) is meant to be consulted first, in :func:`_resolve_name`, without changing
what callers see: a :class:`ResolvedDatabase`.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import DatabaseNotFoundError

PATH_SUFFIXES = (".duckdb", ".db")
"""Suffixes that make a reference a file path even when the file does not exist."""


class DatabaseKind(enum.Enum):
    """Where a reference was found: a named sample database, or a file given by its path."""

    SAMPLE = "sample"
    FILE = "file"


class NotADatabaseFileError(DatabaseNotFoundError):
    """A reference names a directory, not a DuckDB file (a ``DatabaseNotFoundError`` for callers that
    treat every unusable reference alike)."""


@dataclass(frozen=True)
class ResolvedDatabase:
    """A resolved database reference: what was asked for, the file it means, and whether it is there."""

    reference: str
    """The reference as given (a name or a path)."""
    path: Path
    """The absolute path of the DuckDB file."""
    kind: DatabaseKind
    exists: bool
    """Whether ``path`` was an existing file when the reference was resolved."""

    @property
    def is_name(self) -> bool:
        """True when the reference is a database name rather than a file path."""
        return self.kind is not DatabaseKind.FILE

    def not_found_error(self) -> DatabaseNotFoundError:
        """The error for this reference when its file is missing or is a directory: what, where, how to fix."""
        if self.path.is_dir():
            return NotADatabaseFileError(f"{self.path} is a directory, not a .duckdb file")
        if self.is_name:
            return DatabaseNotFoundError(
                f"sample database {self.reference!r} is not built ({self.path} is missing); "
                f"build it with: nl2sql-eval db build --name {self.reference}"
            )
        return DatabaseNotFoundError(
            f"the file {self.path} does not exist; pass the path of an existing .duckdb file, "
            "or the name of a sample database built with `nl2sql-eval db build`"
        )

    def require(self) -> Path:
        """``path`` when it is an existing file; else raise :meth:`not_found_error`."""
        if not self.path.is_file():
            raise self.not_found_error()
        return self.path


def looks_like_path(reference: str) -> bool:
    """True when ``reference`` reads as a file path whether or not the file exists (a suffix or a ``/``)."""
    return Path(reference).suffix in PATH_SUFFIXES or os.sep in reference or "/" in reference


def sample_database(name: str) -> ResolvedDatabase:
    """The sample database called ``name`` under the storage root (built or not)."""
    path = paths.database_path(name)
    return ResolvedDatabase(reference=name, path=path, kind=DatabaseKind.SAMPLE, exists=path.is_file())


def _resolve_name(name: str) -> ResolvedDatabase:
    """The database a name stands for (today: the sample database of that name)."""
    return sample_database(name)


def resolve_database(reference: str) -> ResolvedDatabase:
    """Resolve a ``--database`` reference (a name or a path, see the module docstring); never raises.

    Use :meth:`ResolvedDatabase.require` (or :func:`require_database`) to insist on an existing file.
    """
    candidate = Path(reference).expanduser()
    if looks_like_path(reference) or candidate.is_file():
        path = candidate.resolve()
        return ResolvedDatabase(reference=reference, path=path, kind=DatabaseKind.FILE, exists=path.is_file())
    return _resolve_name(reference)


def require_database(reference: str) -> Path:
    """The existing DuckDB file ``reference`` names.

    Raises ``DatabaseNotFoundError`` when it is missing (saying how to build or where to point instead)
    and ``NotADatabaseFileError`` (a subclass) when it is a directory.
    """
    return resolve_database(reference).require()
